"""Seeded bugs of the faulty device: each a predicate on an op's actual inputs and a perturbation.

A bug fires only under the condition real backends get wrong (a layout, a size, a dtype, a
special value) and only for its aten overloads, so a suite that never builds that condition
never sees it. All are off by default; switch them on by name with `TORCHCTS_FAULTY_BUGS`
(comma-separated names, or `all`) or `enable_bugs(...)`. `all` leaves out the crash and hang
bugs, which exist to test process isolation.

A `missing-kernel` bug makes overloads the device has no kernel for: they raise exactly the
NotImplementedError the dispatcher raises for a real backend's missing kernel ("Could not run
'aten::trunc' with arguments from the 'faulty' backend. ..."), before the op runs.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable

import torch

from torchcts.testing.faulty import would_fire
from torchcts.testing.faulty.bug_model import Bug
from torchcts.testing.faulty.trace import note_step

ENV_VAR = "TORCHCTS_FAULTY_BUGS"


# -- helpers on the CPU data the device holds ----------------------------------------------------

def _tensor_args(args: tuple) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor)]


def _contiguous_strides(shape: torch.Size) -> tuple[int, ...]:
    strides, step = [], 1
    for side in reversed(shape):
        strides.append(step)
        step *= max(side, 1)
    return tuple(reversed(strides))


def _has_zero_stride(t: torch.Tensor) -> bool:
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


def _nudged(t: torch.Tensor) -> torch.Tensor:
    """`t` with its last element changed (by one, or negated for bool)."""
    out = t.clone()  # keeps a dense non-contiguous result's strides: change the last element by its multi-index
    if out.numel():
        last = tuple(side - 1 for side in out.shape)
        out[last] = ~out[last] if out.dtype == torch.bool else out[last] + 1
    return out


def _floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


# -- the bugs ---------------------------------------------------------------------------------------

def _misread_strides(func, args, kwargs, result):
    wrong = [a.as_strided(a.shape, _contiguous_strides(a.shape), a.storage_offset())
             if isinstance(a, torch.Tensor) and not a.is_contiguous() else a for a in args]
    return func(*wrong, **kwargs)


def _misread_offset(func, args, kwargs, result):
    x = args[0]
    return func(x.as_strided(x.shape, x.stride(), 0), *args[1:], **kwargs)


def _one_ulp_toward_zero(func, args, kwargs, result):
    bits = result.view(torch.int16)
    magnitude = bits & 0x7FFF
    movable = (magnitude != 0) & (magnitude < 0x7F80)  # finite, non-zero
    return torch.where(movable, bits - 1, bits).view(torch.bfloat16)


def _nan_ignored(func, args, kwargs, result):
    cleaned = [a.nan_to_num(nan=float("-inf"), posinf=float("inf"), neginf=float("-inf"))
               if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    return func(*cleaned, **kwargs)


def _inf_minus_inf(args) -> torch.Tensor:
    a, b = torch.broadcast_tensors(args[0], args[1])
    return a.isinf() & b.isinf() & (a.signbit() == b.signbit())


def _saturating_sum(args, kwargs) -> torch.Tensor:
    a, b = args[0], args[1]
    exact = a.to(torch.int64) + b.to(torch.int64) * kwargs.get("alpha", 1)
    info = torch.iinfo(a.dtype)
    return exact, info


def _overflows(args, kwargs) -> bool:
    a, b = args[0], args[1] if len(args) > 1 else None
    if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.dtype not in (torch.int8, torch.int16, torch.int32,
                                                                               torch.uint8):
        return False
    exact, info = _saturating_sum(args, kwargs)
    return bool(((exact < info.min) | (exact > info.max)).any())


def _saturated(func, args, kwargs, result):
    exact, info = _saturating_sum(args, kwargs)
    return exact.clamp(info.min, info.max).to(args[0].dtype)


def _mixed_dtypes(args) -> bool:
    return len({t.dtype for t in _tensor_args(args)}) > 1


def _channels_last_only(t: torch.Tensor) -> bool:
    return t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()


def _has_ties(values: torch.Tensor, dim: int) -> bool:
    if values.numel() < 2 or values.size(dim) < 2:
        return False
    ordered = values.sort(dim=dim).values
    return bool((ordered.narrow(dim, 1, ordered.size(dim) - 1) == ordered.narrow(dim, 0, ordered.size(dim) - 1)).any())


def _sort_ties_reversed(func, args, kwargs, result):
    x = args[0]
    dim = kwargs.get("dim", -1)
    values, indices = func(x.flip(dim), **kwargs)
    return values, (x.size(dim) - 1) - indices


def _max_ties(args, kwargs) -> bool:
    x = args[0]
    if x.numel() < 2 or (_floating(x) and x.isnan().any()):
        return False
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return int((x == x.max()).sum()) > 1
    return bool(((x == x.amax(dim, keepdim=True)).sum(dim) > 1).any())


def _last_max_index(func, args, kwargs, result):
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if dim is None:
        return (x.numel() - 1) - torch.argmax(x.flatten().flip(0))
    return (x.size(dim) - 1) - torch.argmax(x.flip(dim), dim, keepdim)


def _k_remainder(args) -> int:
    k = args[0].size(1)
    return k % 32 if k > 32 else 0


def _half_accumulated_mm(func, args, kwargs, result):
    """mm/bmm with float32 products summed in a float16 accumulator (rounded to float16 after every addition)."""
    a, b = args[0], args[1]
    acc = torch.zeros(result.shape, dtype=torch.float16)
    for i in range(a.size(-1)):
        acc = (acc.to(torch.float32) + a[..., :, i:i + 1] * b[..., i:i + 1, :]).to(torch.float16)
    return acc.to(result.dtype)


def _no_kernel(func, args, kwargs, result):
    """Raise what the dispatcher raises for an overload with no kernel for the device's dispatch key."""
    name = func._schema.name + (f".{func._schema.overload_name}" if func._schema.overload_name else "")
    backend = torch._C._get_privateuse1_backend_name()
    raise NotImplementedError(
        f"Could not run '{name}' with arguments from the '{backend}' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom "
        "build). If you are a Facebook employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for "
        f"possible resolutions. '{name}' is only available for these backends: [CPU, Meta, BackendSelect, Python].\n\n"
        "CPU: registered at aten/src/ATen/RegisterCPU.cpp [kernel]\n"
        "Meta: registered at aten/src/ATen/RegisterMeta.cpp [kernel]\n"
        "BackendSelect: fallthrough registered at aten/src/ATen/core/BackendSelectFallbackKernel.cpp [backend fallback]\n"
        "Python: registered at aten/src/ATen/core/PythonFallbackKernel.cpp [backend fallback]\n")


def _crash(func, args, kwargs, result):
    os.abort()  # what a native segfault or assertion looks like to the harness: the process dies


def _hang(func, args, kwargs, result):
    time.sleep(3600)
    return result


CORE_BUGS: tuple[Bug, ...] = (
    Bug("noncontiguous_add", ("aten.add.Tensor", "aten.sub.Tensor"),
        "an operand is non-contiguous (transposed, stepped), without zero strides",
        "reads non-contiguous operands as if they were contiguous",
        lambda f, a, k: any(not t.is_contiguous() and not _has_zero_stride(t) and t.numel() > 1 for t in _tensor_args(a)),
        _misread_strides),
    Bug("storage_offset_ignored", ("aten.abs.default", "aten.neg.default", "aten.exp.default"),
        "the input has a non-zero storage offset",
        "reads the input from the start of its storage, ignoring the offset",
        lambda f, a, k: a[0].storage_offset() > 0 and a[0].numel() > 0, _misread_offset),
    Bug("expanded_mul", ("aten.mul.Tensor",),
        "an operand is expanded (a zero stride on a dimension longer than 1)",
        "miscomputes the last element when an operand is broadcast by zero strides",
        lambda f, a, k: any(_has_zero_stride(t) for t in _tensor_args(a)),
        lambda f, a, k, r: _nudged(r)),
    Bug("tile_sum", ("aten.sum.default",),
        "the input has more than 1024 elements (past one tile)",
        "drops the last element of a full reduction past a tile boundary",
        lambda f, a, k: a[0].numel() > 1024,
        lambda f, a, k, r: f(a[0].reshape(-1)[:-1], *a[1:], **k)),
    Bug("bfloat16_mul", ("aten.mul.Tensor",),
        "the result is bfloat16",
        "rounds bfloat16 products one ulp toward zero",
        lambda f, a, k: any(t.dtype == torch.bfloat16 for t in _tensor_args(a)),
        lambda f, a, k, r: _one_ulp_toward_zero(f, a, k, r) if r.dtype == torch.bfloat16 else r),
    Bug("nan_ignored_max", ("aten.max.default", "aten.amax.default", "aten.maximum.default"),
        "a floating input holds NaN",
        "ignores NaN in maxima instead of propagating it",
        lambda f, a, k: any(t.is_floating_point() and bool(t.isnan().any()) for t in _tensor_args(a)),
        _nan_ignored),
    Bug("negative_zero_reciprocal", ("aten.reciprocal.default",),
        "the input holds -0.0",
        "returns +inf for 1 / -0.0",
        lambda f, a, k: a[0].is_floating_point() and bool(((a[0] == 0) & a[0].signbit()).any()),
        lambda f, a, k, r: torch.where((a[0] == 0) & a[0].signbit(), torch.full_like(r, float("inf")), r)),
    Bug("inf_minus_inf", ("aten.sub.Tensor",),
        "both operands hold an infinity of the same sign at the same position",
        "returns 0 for inf - inf instead of NaN",
        lambda f, a, k: len(_tensor_args(a)) == 2 and all(t.is_floating_point() for t in a[:2])
        and bool(_inf_minus_inf(a).any()),
        lambda f, a, k, r: torch.where(_inf_minus_inf(a), torch.zeros_like(r), r)),
    Bug("empty_mean", ("aten.mean.default", "aten.mean.dim"),
        "the input is empty",
        "returns 0 for the mean of no elements instead of NaN",
        lambda f, a, k: a[0].numel() == 0,
        lambda f, a, k, r: torch.zeros_like(r)),
    Bug("integer_overflow_saturates", ("aten.add.Tensor",),
        "an int8/int16/int32/uint8 addition overflows",
        "saturates integer overflow instead of wrapping around",
        lambda f, a, k: _overflows(a, k), _saturated),
    Bug("promotion_to_float64", ("aten.add.Tensor", "aten.mul.Tensor"),
        "the tensor operands have different dtypes and the result is float32",
        "promotes mixed-dtype float32 results to float64 (right values, wrong dtype)",
        lambda f, a, k: _mixed_dtypes(a),
        lambda f, a, k, r: r.to(torch.float64) if r.dtype == torch.float32 else r),
    Bug("channels_last_output_strides", ("aten.relu.default", "aten.sigmoid.default"),
        "the input is 4-d channels_last (and not contiguous)",
        "returns a contiguous result for a channels_last input (right values, wrong strides)",
        lambda f, a, k: _channels_last_only(a[0]),
        lambda f, a, k, r: r.contiguous()),
    Bug("unstable_sort", ("aten.sort.stable",),
        "stable=True and the sorted dimension holds equal values",
        "orders equal elements backwards in a stable sort",
        lambda f, a, k: bool(k.get("stable")) and _has_ties(a[0], k.get("dim", -1)),
        _sort_ties_reversed),
    Bug("argmax_last_tie", ("aten.argmax.default",),
        "the maximum occurs more than once",
        "returns the last index of a tied maximum instead of the first",
        lambda f, a, k: _max_ties(a, k), _last_max_index),
    Bug("long_cumsum_half_accumulator", ("aten.cumsum.default",),
        "a float32 cumulative sum over a dimension longer than 4096",
        "accumulates long float32 cumulative sums in float16",
        lambda f, a, k: a[0].dtype == torch.float32 and a[0].dim() > 0 and a[0].size(a[1] if len(a) > 1 else k["dim"]) > 4096,
        lambda f, a, k, r: f(a[0].to(torch.float16), *a[1:], **k).to(torch.float32)),
    Bug("matmul_tile_edge", ("aten.mm.default",),
        "the inner dimension is above 32 and not a multiple of 32",
        "drops the partial last tile of the inner dimension in mm",
        lambda f, a, k: _k_remainder(a) > 0,
        lambda f, a, k, r: f(a[0][:, :a[0].size(1) - _k_remainder(a)], a[1][:a[1].size(0) - _k_remainder(a)])),
    Bug("float64_sum_in_float32", ("aten.sum.default", "aten.sum.dim_IntList"),
        "a float64 sum of a float64 tensor",
        "computes float64 sums in float32 (inputs and accumulator), returning them as float64",
        lambda f, a, k: a[0].dtype == torch.float64 and a[0].numel() > 0 and k.get("dtype") in (None, torch.float64),
        lambda f, a, k, r: f(a[0].to(torch.float32), *a[1:], **{**k, "dtype": torch.float32}).to(r.dtype)),
    Bug("float32_matmul_half_accumulator", ("aten.mm.default", "aten.bmm.default"),
        "a float32 mm or bmm with a non-empty inner dimension",
        "accumulates float32 matrix products in float16 (each partial sum rounded to float16)",
        lambda f, a, k: a[0].dtype == torch.float32 and a[1].dtype == torch.float32 and a[0].size(-1) > 0,
        _half_accumulated_mm),
    Bug("missing_kernel", ("aten.trunc.default", "aten.trunc_.default", "aten.trunc.out"),
        "always (any input)",
        "has no kernel for trunc (functional, in-place, out=): raises the dispatcher's NotImplementedError",
        lambda f, a, k: True, _no_kernel, kind="missing-kernel"),
    Bug("crash_hypot", ("aten.hypot.default",),
        "the first operand holds 4 or more elements",
        "aborts the process (as a native crash would)",
        lambda f, a, k: a[0].numel() >= 4, _crash, kind="crash"),
    Bug("hang_logaddexp", ("aten.logaddexp.default",),
        "the first operand holds 4 or more elements",
        "sleeps for an hour (as a deadlocked kernel would)",
        lambda f, a, k: a[0].numel() >= 4, _hang, kind="hang"),
)


def _all_bugs() -> dict[str, Bug]:
    """The core bugs and every suite's (`suite_bugs.SUITE_BUGS`), by name; a name used twice is a programming error."""
    # cycle: suite_bugs.guard_alloc imports faulty.memory, which imports this module
    from torchcts.testing.faulty.suite_bugs import SUITE_BUGS

    table: dict[str, Bug] = {}
    for bug in (*CORE_BUGS, *SUITE_BUGS):
        if bug.name in table:
            raise RuntimeError(f"faulty bug {bug.name!r} is defined twice")
        table[bug.name] = bug
    return table


BUGS: dict[str, Bug] = _all_bugs()

_by_op: dict[str, tuple[Bug, ...]] = {}


def _set_active(names: Iterable[str]) -> None:
    global _by_op
    table: dict[str, list[Bug]] = {}
    for name in names:
        bug = BUGS[name]
        for op in bug.ops:
            table.setdefault(op, []).append(bug)
    _by_op = {op: tuple(found) for op, found in table.items()}


def parse_names(spec: str) -> tuple[str, ...]:
    """`"all"` or comma-separated bug names -> bug names; ValueError names the unknown ones."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    chosen: list[str] = []
    for name in names:
        if name == "all":
            chosen.extend(b.name for b in BUGS.values() if b.in_all)
        elif name in BUGS:
            chosen.append(name)
        else:
            raise ValueError(f"unknown faulty bug {name!r}; known: all, {', '.join(BUGS)}")
    return tuple(dict.fromkeys(chosen))


def enable_bugs(*names: str) -> None:
    """Switch on these bugs (names or "all"), in addition to those already on."""
    _set_active(set(active_bugs()) | set(parse_names(",".join(names))))


def disable_bugs(*names: str) -> None:
    """Switch off these bugs, or every bug when no name is given."""
    remaining = set(active_bugs()) - set(parse_names(",".join(names))) if names else set()
    _set_active(remaining)


def active_bugs() -> tuple[str, ...]:
    """Names of the bugs switched on, in table order."""
    on = {bug.name for bugs_ in _by_op.values() for bug in bugs_}
    return tuple(name for name in BUGS if name in on)


def load_from_environment() -> None:
    """Switch on the bugs named in TORCHCTS_FAULTY_BUGS (ValueError for unknown names); with
    TORCHCTS_FAULTY_WOULD_FIRE=1, note where the others would fire (`would_fire`)."""
    _set_active(parse_names(os.environ.get(ENV_VAR, "")))
    would_fire.load_from_environment(BUGS.values())


def before(func, args: tuple, kwargs: dict) -> None:
    """Crash and hang bugs act before the op runs."""
    if would_fire.watching():
        would_fire.note(func, args, kwargs, _by_op.get(str(func), ()), before_op=True)
    for bug in _by_op.get(str(func), ()):
        if bug.kind != "wrong-result" and bug.fires(func, args, kwargs):
            _note_fired(bug)
            bug.perturb(func, args, kwargs, None)


def after(func, args: tuple, kwargs: dict, result: Any) -> Any:
    """The op's CPU result, perturbed by every active bug whose condition holds."""
    if would_fire.watching():
        would_fire.note(func, args, kwargs, _by_op.get(str(func), ()), before_op=False)
    for bug in _by_op.get(str(func), ()):
        if bug.kind == "wrong-result" and bug.fires(func, args, kwargs):
            _note_fired(bug)
            result = bug.perturb(func, args, kwargs, result)
    return result


FIRED_PREFIX = "bug:"


def _note_fired(bug: Bug) -> None:
    """Put `bug:<name>` in the device trace (`device.start_trace`) when a bug fires: a test attributes a failing
    item to the seeded bugs that acted in it (tests/triage checks clusters against them)."""
    note_step(FIRED_PREFIX + bug.name)
