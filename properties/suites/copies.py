"""Copies and transfers: `to(device)`, `cpu()`, `copy_` and dtype-converting copies give CPU's bits and strides.

Every scenario is a torch-only program run on CPU and on the device (on CPU the "device" is cpu,
so each program is valid on both sides); the device must return CPU's result bit for bit
(`exact_check`): a copy computes nothing, so a value one ulp off, a lost -0.0 or a misplaced
element is a bug whatever the tolerance.

- `transfers`: device -> host, host -> device and device -> device copies (`to(..., copy=True)`,
  `cpu()`), with `non_blocking=True` followed by a synchronization, of inputs in any layout
  (non-contiguous, offset, channels_last, expanded, overlapping, empty): values and the strides
  `to` gives (preserve format);
- `copy_into`: `dst.copy_(src)` into a destination in a drawn layout (offset, stepped, permuted,
  channels_last) from a source that may broadcast (zero strides, fewer dimensions) or overlap,
  device -> device, device -> host and host -> device, maybe of another dtype, maybe
  `non_blocking`: the destination's values and the whole storage it reaches (a copy must not
  write outside the destination view);
- `converting_copy`: `to(dtype)`, `to("cpu", dtype=...)`, `copy_` into `empty_like(dtype=...)`:
  float -> int (truncation), int -> float (rounding), narrowing floats (float64 -> float16,
  float32 -> bfloat16), to and from bool, real -> complex.

Float -> integer conversions whose result C++ leaves undefined (NaN, infinities, values out of
the target's range) are not generated: CPU's own answer there is platform-defined (the dtype
semantics suite records it). Complex -> real copies (which drop the imaginary part with a
warning) are not generated either.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts import dtypes as dtype_names
from torchcts.cases.bounds import CaseParams, Dtypes, Flag, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Exact, Scenario, scenario_suite
from torchcts.strategies import Case, describe_layout, shapes, tensors
from torchcts.strategies.layouts import draw_relayout
from torchcts.strategies.values import draw_values

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "transfers and `copy_` from and into any layout, dtype-converting copies, `non_blocking`"


# -- programs (torch only: exported verbatim into reproduction scripts) ---------------------------

def transfers(input, non_blocking):
    """Device -> host, host -> device and device -> device copies of `input`: values and strides."""
    host = input.to("cpu", copy=True, non_blocking=non_blocking)
    if non_blocking and input.device.type != "cpu":  # wait for the copy before reading `host`
        module = getattr(torch, input.device.type, None)  # torch.cuda, torch.xpu, torch.mps, ...
        if module is not None and hasattr(module, "synchronize"):
            module.synchronize()
        elif torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == input.device.type:
            torch.accelerator.synchronize()
    back = host.to(input.device, copy=True, non_blocking=non_blocking)
    twin = input.to(input.device, copy=True)
    plain = input.cpu().clone(memory_format=torch.contiguous_format)  # cpu() of a CPU tensor is itself: values only
    return host, back, twin, plain


def copy_into(input, dst, where, non_blocking):
    """`copy_` of `input` into `dst`'s layout (on the device, or a host twin of it): the values and the storage."""
    span = dst.storage_offset() + sum((n - 1) * s for n, s in zip(dst.shape, dst.stride())) + 1 if dst.numel() else 0
    if where == "to_host":  # device -> host, into a host tensor laid out as `dst`
        storage = torch.as_strided(dst, (span,), (1,), 0).to("cpu", copy=True)
        target = storage.as_strided(dst.shape, dst.stride(), dst.storage_offset())
        target.copy_(input, non_blocking=non_blocking)
    elif where == "from_host":  # host -> device
        target = dst
        target.copy_(input.to("cpu", copy=True), non_blocking=non_blocking)
    else:  # device -> device
        target = dst
        target.copy_(input, non_blocking=non_blocking)
    if non_blocking and input.device.type != "cpu":
        module = getattr(torch, input.device.type, None)
        if module is not None and hasattr(module, "synchronize"):
            module.synchronize()
        elif torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == input.device.type:
            torch.accelerator.synchronize()
    return target, torch.as_strided(target, (span,), (1,), 0)


def converting_copy(input, dtype, how):
    """`input` converted to `dtype` by `to`, by a transfer to the host, or by `copy_` into `empty_like`."""
    if how == "to":
        return input.to(dtype)
    if how == "to_host":
        return input.to("cpu", dtype=dtype, copy=True)
    out = torch.empty_like(input, dtype=dtype)
    out.copy_(input)
    return out


PROGRAMS = {"transfers": transfers, "copy_into": copy_into, "converting_copy": converting_copy}
COPY_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16",
               "bfloat16", "float32", "float64", "complex64", "complex128")
_TARGETS = tuple(dtype_names.lookup(name) for name in COPY_DTYPES)


# -- cases ------------------------------------------------------------------------------------------

def _case(cts, values, *what) -> Case:
    """The item's scenario case of named `values`, described by its input's layout, then `what`."""
    return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], values,
                         (describe_layout(values["input"]), *what))


def conversion_targets(source: torch.dtype) -> tuple[torch.dtype, ...]:
    """Dtypes a copy from `source` converts to, `source` first (the shrink target); no complex -> real."""
    targets = [d for d in _TARGETS if not source.is_complex or d.is_complex]
    return (source, *[d for d in targets if d != source])


def defined_for(t: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    """`t` with the elements a conversion to `target` leaves undefined in C++ set to 0.

    A float -> integer conversion is undefined for NaN, infinities and values whose truncation
    the integer type cannot hold; everything else is defined (int -> int wraps, -> bool tests != 0)."""
    if not (t.is_floating_point() and not (target.is_floating_point or target.is_complex or target == torch.bool)):
        return t
    info = torch.iinfo(target)
    wide = t.to(torch.float64)
    undefined = ~wide.isfinite() | (wide <= float(info.min) - 1) | (wide >= float(info.max) + 1)
    return t.masked_fill(undefined, 0)


TRANSFER_DIMS, TRANSFER_SIDE = 4, 4  # transfers' inputs and copy_into's destinations
CONVERT_DIMS, CONVERT_SIDE = 3, 5  # converting_copy's sources
DIRECTIONS = ("device", "to_host", "from_host")
HOWS = ("to", "to_host", "copy_")
_COPIED = Tensors(max_elements=TRANSFER_SIDE ** TRANSFER_DIMS, max_dims=TRANSFER_DIMS)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below use the same sizes and choices
    "transfers": CaseParams({"non_blocking": Flag()}, input=_COPIED),
    "copy_into": CaseParams({"dst": _COPIED, "where": OneOf(DIRECTIONS), "non_blocking": Flag()}, input=_COPIED),
    "converting_copy": CaseParams({"dtype": Dtypes(COPY_DTYPES), "how": OneOf(HOWS)},
                                  input=Tensors(max_elements=CONVERT_SIDE ** CONVERT_DIMS, max_dims=CONVERT_DIMS)),
}


def transfer_cases(cts):
    inputs = tensors(cts.dtype, max_dims=TRANSFER_DIMS, max_side=TRANSFER_SIDE)

    @st.composite
    def draw(draw_):
        t = draw_(inputs, label="input")
        non_blocking = draw_(st.booleans(), label="non_blocking")
        return _case(cts, {"input": t, "non_blocking": non_blocking}, f"non_blocking={non_blocking}")

    return draw()


def _source(draw_, dtype, shape, target):
    """A source of `shape` whose values convert to `target` with a defined result, in any layout (overlap too)."""
    return draw_relayout(draw_, defined_for(draw_values(draw_, shape, dtype), target))


def _broadcast_source_shape(draw_, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: leading dimensions dropped, others maybe 1; shrinks to `shape`."""
    kept = shape[draw_(st.integers(0, len(shape)), label="leading dims dropped"):] if shape else ()
    return tuple(1 if draw_(st.booleans(), label=f"broadcast dim {d}") else side for d, side in enumerate(kept))


def copy_into_cases(cts):
    dst_shapes = shapes(max_dims=TRANSFER_DIMS, max_side=TRANSFER_SIDE)
    dst_dtypes = st.sampled_from(conversion_targets(cts.dtype))

    @st.composite
    def draw(draw_):
        dst_shape = draw_(dst_shapes, label="destination shape")
        dst_dtype = draw_(dst_dtypes, label="destination dtype")
        dst = draw_relayout(draw_, draw_values(draw_, dst_shape, dst_dtype), allow_overlap=False)
        src = _source(draw_, cts.dtype, _broadcast_source_shape(draw_, dst_shape), dst_dtype)
        where = draw_(st.sampled_from(DIRECTIONS), label="direction")
        non_blocking = draw_(st.booleans(), label="non_blocking")
        return _case(cts, {"input": src, "dst": dst, "where": where, "non_blocking": non_blocking}, f"into {describe_layout(dst)} {dst_dtype}", where,
                     f"non_blocking={non_blocking}")

    return draw()


def converting_cases(cts):
    targets = st.sampled_from(conversion_targets(cts.dtype)[1:] or (cts.dtype,))
    source_shapes = shapes(max_dims=CONVERT_DIMS, max_side=CONVERT_SIDE)

    @st.composite
    def draw(draw_):
        target = draw_(targets, label="target dtype")
        src = _source(draw_, cts.dtype, draw_(source_shapes, label="shape"), target)
        how = draw_(st.sampled_from(HOWS), label="how")
        return _case(cts, {"input": src, "dtype": target, "how": how}, f"to {target} by {how}")

    return draw()


_CASES = {"transfers": transfer_cases, "copy_into": copy_into_cases, "converting_copy": converting_cases}


# the aten overloads copies dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._to_copy.default", "aten.copy_.default", "aten.empty_like.default",
)


# A copy moves bits: the device's result holds CPU's, bit for bit.
test_copies = scenario_suite(
    "copies", capability="inference", level=2, dtypes=COPY_DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, Exact(), cases=_CASES[name]) for name, program in PROGRAMS.items()])
