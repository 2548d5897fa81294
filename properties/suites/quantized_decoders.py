"""Quantized decoders: a backend's own container decoders (`custom_container_decoders`) decode as the CPU codec does.

A manifest claiming `custom_quantized_decode` names one decoder per container format,
`"module:function"` (docs/quantized.md: the decoder contract). One item per (format it names,
output dtype): before any case the entry is loaded (`torchcts.containers.decoders.load`); an entry
whose module does not import, whose attribute is missing or not callable is the item's `error`,
naming the format and the path. Each case draws a container of the format
(`strategies.containers.containers`: every code the format has, NaN and infinity codes included,
scale grouping per tensor / per row / per block, float or E8M0 / E4M3 scale bytes, zero points
where the format has them), its packed bytes contiguous or a window of a larger buffer (1-D, at a
storage offset). The container's tensors are placed on the device with their exact layout and the
decoder is called as `decoder(packed, scale, zero_point, shape, dtype, device)`.

What must hold: the result keeps the contract (`decoders.check_result`: a dense tensor of `shape`
and `dtype` on the device; else `error` naming the entry), and every element equals the CPU codec's
decode (`torchcts.containers.codec.decode`, float32 arithmetic rounded once to `dtype`): the same
bits, the same value (0.0 for -0.0), NaN where the codec gives NaN, or within one unit in the last
place of `dtype` (a decoder may round twice, e.g. compute in bfloat16), or within the manifest's `quant_decode`
tolerance for `dtype` where it has one (`atol + rtol * |expected|`). A failure names the format,
the multi-index, the element's code, its group's scale and zero point, got and expected.
The decoder's own exceptions (a missing kernel included) are the backend's `error`, never a skip.

Limits: the decoder is backend code, not a torch program, so cases replay but do not export as
standalone scripts; packed bytes reach the decoder as 1-D contiguous bytes (maybe at an offset),
never in the other `PACKED_LAYOUTS`; the one-ULP allowance cannot see a decoder that is off by
exactly one ULP; scales are positive (the formats' definition) and drawn within 2**-14 .. 2**14.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Dtypes
from torchcts.cases.scenario_case import named, scenario_case
from torchcts.containers import Container, decode, decode_container, get
from torchcts.containers import decoders
from torchcts.engine.context import BackendError
from torchcts.engine.outcome import NotRun
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.core.outcomes import Outcome
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case
from torchcts.strategies.containers import container_bounds, container_fits, containers

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("a manifest's own container decoders load, keep the decoder contract (a dense tensor of the shape and "
          "dtype, on the device) and decode drawn containers (every code incl. NaN/inf codes, per-tensor/row/block "
          "float, E8M0 or E4M3 scales, zero points, packed bytes at a storage offset) as the CPU codec does: same "
          "value, NaN for NaN, or within one ULP of the output dtype")

DTYPES = ("float32", "bfloat16", "float16")
CATEGORIES = ("quant_decode",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
LAYOUTS = ("contiguous", "window")  # the contract: 1-D contiguous packed bytes, possibly at a storage offset


# -- cases ------------------------------------------------------------------------------------------

def container_of(format_name: str, values: dict[str, Any]) -> Container:
    """The container a case's named values hold (input: packed bytes; scale, zero point, shape)."""
    return Container(format_name, values["input"], values["scale"], values["zero_point"], tuple(values["shape"]))


def decoder_cases(format_name: str, dtype: torch.dtype) -> st.SearchStrategy[Case]:
    """Cases of one format: a drawn container stored by name (packed bytes as input; scale, zero point, shape, dtype)."""
    def case(container: Container) -> Case:
        values = {"input": container.packed, "scale": container.scale, "zero_point": container.zero_point,
                  "shape": list(container.shape), "dtype": dtype}
        return scenario_case(format_name, dtype, PARAMS[format_name], values, container.describe())

    return containers(format_name, layouts=LAYOUTS).map(case)


def _params(name: str) -> CaseParams:
    """A format's stored values: the container (`container_bounds`), tied together by `container_fits` (a decoder
    sizes its work by the stored shape), and the dtype."""
    bounds = container_bounds(name)

    def fits(params: dict) -> bool:
        return container_fits(name, params["input"], params["scale"], params["zero_point"], params["shape"])

    return CaseParams({"scale": bounds["scale"], "zero_point": bounds["zero_point"], "shape": bounds["shape"],
                       "dtype": Dtypes(DTYPES)}, input=bounds["packed"],
                      rules=((f"the parts make one {name} container", fits),))


PARAMS = {name: _params(name) for name in CONTAINER_FORMATS}


# -- the comparison ---------------------------------------------------------------------------------

def beyond_one_ulp(got: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype, allowed: Any = None) -> torch.Tensor:
    """Where `got` (CPU) is not `expected`: neither the same value, nor both NaN, nor finite within one ULP of `dtype`
    at the expected value (subnormal spacing below the smallest normal), nor finite within `allowed` (the manifest's
    `quant_decode` tolerance, `manifest.Tolerance`: atol + rtol * |expected|, an unset field 0)."""
    g, e = got.to(torch.float64), expected.to(torch.float64)
    info = torch.finfo(dtype)
    mantissa = round(-math.log2(info.eps))
    exponent = (torch.frexp(e.abs()).exponent - 1).clamp(min=round(math.log2(info.tiny)))
    ulp = torch.ldexp(torch.ones_like(e), exponent - mantissa)
    bound = ulp
    if allowed is not None:
        bound = torch.maximum(ulp, (allowed.atol or 0.0) + (allowed.rtol or 0.0) * e.abs())
    close = g.isfinite() & e.isfinite() & ((g - e).abs() <= bound)
    return ~((g == e) | (g.isnan() & e.isnan()) | close)


def codes_of(container: Container) -> torch.Tensor:
    """Every element's code (int64, the container's shape), read with the codec's own unpacking."""
    spec = container.spec
    identity = torch.arange(1 << spec.bits, dtype=torch.float32)
    return decode_container(container.packed.cpu(), torch.ones(()), None, tuple(container.shape), torch.float32,
                            identity, None, spec.bits, spec.msb_first).to(torch.int64)


def group_text(container: Container, index: tuple[int, ...]) -> str:
    """'group g: scale s, zero point z' of the element at `index`."""
    count = math.prod(container.shape)
    flat = 0
    for i, side in zip(index, container.shape):
        flat = flat * side + i
    scales = container.scale.cpu().reshape(-1)
    group = flat // (count // scales.numel())
    table = container.spec.scale_table()
    if table is None:
        scale = f"scale {scales[group].item()!r}"
    else:
        byte = int(scales.view(torch.uint8)[group])
        scale = f"scale byte {byte} (= {table[byte]!r})"
    zero_points = container.zero_point
    zero = "" if zero_points is None else f", zero point {zero_points.cpu().reshape(-1)[group].item()}"
    return f"group {group}: {scale}{zero}"


def compare_decoded(container: Container, got: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype,
                    what: str, allowed: Any = None) -> None:
    """AssertionError naming the first element beyond the allowance (`beyond_one_ulp`): its multi-index, code, group."""
    bad = beyond_one_ulp(got, expected, dtype, allowed)
    if not bad.any():
        return
    index = tuple(int(i) for i in bad.nonzero()[0])
    code = int(codes_of(container)[index])
    raise AssertionError(
        f"{container.format}: out{list(index)} = {got[index].item()!r}, expected {expected[index].item()!r} "
        f"(code {code} = {container.spec.table[code]!r}, {group_text(container, index)}; must match the CPU codec "
        f"within one ULP of {dtype}{_allowed_text(allowed)}; {int(bad.sum())} of {bad.numel()} elements differ) "
        f"[{what}]")


def _allowed_text(allowed: Any) -> str:
    """' or the manifest's quant_decode tolerance (...)' where the manifest gives one."""
    if allowed is None:
        return ""
    return f" or the manifest's quant_decode tolerance (rtol {allowed.rtol}, atol {allowed.atol})"


# -- the check --------------------------------------------------------------------------------------

def load_decoder(cts: Any, format_name: str) -> tuple[str, Callable[..., Any]]:
    """(path, decoder) of the manifest's entry for `format_name`; BackendError naming the entry when it cannot load."""
    path = cts.manifest.custom_container_decoders.get(format_name)
    if path is None:  # the plan accounts such a format; reached anyway (a replayed case), it is not claimed
        raise NotRun(Outcome.CAPABILITY_NOT_DECLARED, f"custom_container_decoders does not name {format_name}")
    try:
        return path, decoders.load(format_name, path)
    except decoders.DecoderError as exc:
        raise BackendError(str(exc)) from exc


def decoder_check(cts: Any, format_name: str, path: str, decoder: Callable[..., Any]) -> Callable[[Case], None]:
    """A check for `cts.run`: the decoder on the device against the CPU codec (`compare_decoded`)."""
    entry = decoders.entry(format_name, path)
    params = PARAMS[format_name]

    def on_device(cts_: Any, sample: Any, target: Any) -> tuple[tuple[str, ...], Any]:
        placed = cts.place_for(sample, target)
        if placed.mismatches:
            return placed.mismatches, None
        values = named(params, placed.value)
        return (), decoder(values["input"], values["scale"], values["zero_point"], tuple(values["shape"]),
                           values["dtype"], torch.device(target.device))

    def check(case: Case) -> None:
        values = named(params, case.sample)
        container = container_of(format_name, values)
        shape, dtype = tuple(values["shape"]), values["dtype"]
        expected = cts.on_cpu_call(lambda cts_, sample, target: decode(container, dtype), case.sample)
        mismatches, result = cts.on_device_call(on_device, case.sample, what=f" (decoder {entry})")
        if mismatches:
            raise BackendError("the device changed the container's layout: " + "; ".join(mismatches))
        try:
            decoders.check_result(format_name, path, result, shape, dtype, torch.device(cts.target.device))
        except decoders.DecoderError as exc:
            raise BackendError(str(exc)) from exc
        if not cts.target.compares_values:
            return
        got = cts.on_device_call(lambda cts_, sample, target: result.detach().cpu(), case.sample,
                                 what=f" (reading the result of decoder {entry} back to CPU)")
        compare_decoded(container, got, expected, dtype, "; ".join(case.transforms),
                        cts.manifest.tolerance_override(CATEGORIES, dtype) if cts.manifest is not None else None)

    return check


def loaded_decoder_check(cts: Any, row: Scenario) -> Callable[[Case], None]:
    """The rows' `Custom` comparison: the format is a registered one (KeyError naming the known ones) and the
    manifest's decoder for it loads (else the item's error, naming the entry) before any case runs."""
    get(row.name)
    path, decoder = load_decoder(cts, row.name)
    return decoder_check(cts, row.name, path, decoder)


# one row per container format: no torch-only program (the decoder is backend code), the CPU codec as the oracle
test_quantized_decoders = scenario_suite(
    "quantized_decoders", capability="custom_quantized_decode", level=6, dtypes=DTYPES,
    formats="custom_container_decoders",
    scenarios=[Scenario(name, PARAMS[name], None, Custom(loaded_decoder_check),
                        cases=lambda cts: decoder_cases(cts.item.op, cts.dtype))
               for name in CONTAINER_FORMATS])
