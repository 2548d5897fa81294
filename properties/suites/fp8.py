"""FP8: the device encodes, decodes, copies and moves float8 values bit for bit as CPU does, and its
`torch._scaled_mm` agrees with CPU's.

Casts are compared on the encoding (the uint8 view), so rounding to nearest even at the fp8 grid's
ties, saturation or overflow beyond the largest finite value, subnormals, underflow to zero and the
sign of zero must be exactly CPU's. NaN is compared as NaN (where CPU gives a NaN code the device must
give a NaN code of the format, its sign and payload are free): every other code is bit-exact. Data
movement (clone, cat, index, pad, ...) must keep every code, NaN codes included. Scaled matmul
compares values within the output dtype's tolerance, widened for the k-term accumulation. Item dtype
= the float8 format; the programs are `torchcts.properties.fp8_programs`; see docs/suites/fp8.md.
"""

from __future__ import annotations

import functools

import torch
from hypothesis import strategies as st

from torchcts import dtypes as dtype_names
from torchcts.cases.bounds import CaseParams, Dtypes, Flag, Ints, OneOf, Optional, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.engine.programs import run_program
from torchcts.properties.fp8_programs import MM_PROGRAMS, PROGRAMS  # the scenarios' torch-only programs
from torchcts.properties.scenario_table import Custom, Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case, claimed_dtypes, relayouts

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("casts to and from every float8 format bit for bit (saturation, rounding to nearest even, NaN), "
          "`_scaled_mm`")


FLOAT8_NAMES = tuple(dtype_names.canonical_name(d) for d in dtype_names.FLOAT8_DTYPES)
MM_NAMES = tuple(n for n in FLOAT8_NAMES if n != "float8_e8m0fnu")  # e8m0 is a scale format, not an operand
_WIDE_FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
# what the cases draw
TILE_ROWS = (1, 3, 17, 65)  # a drawn row of elements or codes, repeated into this many rows
PICKS = 8  # drawn elements or codes a row
MOVE_ROWS, MOVE_COLS, INDEX_LENGTH = Ints(1, 4), Ints(2, 5), Ints(1, 3)
MM_ROWS, MM_INNER, MM_COLUMNS = (16, 32), (16, 32, 64), (16, 32)
SCALES_A, SCALES_B = (1.0, 0.5, 2.0, 0.375), (1.0, 4.0, 0.25, 1.5)
CAST_TARGETS = (*(dtype_names.canonical_name(d) for d in _WIDE_FLOATS), "bool", *FLOAT8_NAMES)
_MOVES = ("clone", "contiguous", "cat", "stack", "flip", "index_select", "index", "where", "roll", "repeat",
          "pad", "unfold")


# -- the float8 grid: what a cast must get right -------------------------------------------------------

@functools.cache
def grid(dtype: torch.dtype) -> tuple[float, ...]:
    """The non-negative finite values of a float8 format, ascending (0 first where it has one)."""
    values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).to(torch.float64)
    finite = values[torch.isfinite(values) & (values >= 0)]
    return tuple(float(v) for v in finite.unique())


def _neighbour(value: float, source: torch.dtype, up: bool) -> float:
    """The `source` value next to `value` (positive) upward or downward: one ulp off a tie."""
    t = torch.tensor([value], dtype=torch.float64).to(source)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return float((t.view(ints) + (1 if up else -1)).view(source).to(torch.float64))


_KINDS = ("grid", "tie", "near_tie", "between", "beyond_max", "underflow", "nan", "infinity", "zero")


def element(dtype: torch.dtype, source: torch.dtype, kind: str, k: int, negative: bool) -> float:
    """One source value of `kind` near the float8 grid (k picks where): an exact fp8 value, a tie
    between neighbours, one source ulp off a tie, a point between neighbours, beyond the largest finite
    value (ties at saturation, 2x, 1e4x), below the smallest subnormal, NaN, infinity or zero (-0 negative)."""
    values = grid(dtype)
    last = len(values) - 1
    i = k % last
    low, high = values[i], values[i + 1]
    top, step = values[-1], values[-1] - values[-2]
    if kind == "grid":
        value = values[k % len(values)]
    elif kind == "tie":
        value = (low + high) / 2
    elif kind == "near_tie":
        value = _neighbour((low + high) / 2, source, up=bool(k & 1))
    elif kind == "between":
        value = low + (high - low) * ((k * 0.6180339887) % 1)
    elif kind == "beyond_max":
        value = (top + step / 2, top + step, top + 3 * step / 4, 2 * top, 1e4 * top, top + step / 4)[k % 6]
    elif kind == "underflow":
        value = values[1] * (0.5, 0.25, 0.75, 0.5 + 2**-10)[k % 4] if values[0] == 0 else values[0] / 2
    else:
        value = {"nan": float("nan"), "infinity": float("inf"), "zero": 0.0}[kind]
    return -value if negative else value


def _elements() -> st.SearchStrategy[tuple[str, int, bool]]:
    return st.tuples(st.sampled_from(_KINDS), st.integers(0, 255), st.booleans())


def _sources(dtype: torch.dtype, manifest: object) -> tuple[torch.dtype, ...]:
    """Source dtypes for a cast into `dtype`: the claimed wider floats, then the other claimed float8 formats."""
    claimed = claimed_dtypes(manifest)
    wide = [d for d in _WIDE_FLOATS if d in claimed] or [torch.float32]
    return tuple(wide + [d for d in dtype_names.FLOAT8_DTYPES if d in claimed and d != dtype])


@st.composite
def _tiled(draw, base: torch.Tensor) -> torch.Tensor:
    """`base` (1-d) as is, or repeated into a matrix long enough for a vectorized kernel, in a drawn layout."""
    rows = draw(st.sampled_from(TILE_ROWS), label="repeats")
    t = base if rows == 1 else base.repeat(rows).reshape(rows, base.numel())
    return draw(relayouts(t, allow_overlap=False), label="layout")


def _source_tensor(draw, dtype: torch.dtype, source: torch.dtype) -> tuple[torch.Tensor, str]:
    picks = draw(st.lists(_elements(), min_size=1, max_size=PICKS), label="elements")
    numbers = [element(dtype, source, *p) for p in picks]
    base = torch.tensor(numbers, dtype=torch.float64).to(source)
    kinds = ", ".join(f"{p[0]}" for p in picks)
    return draw(_tiled(base)), kinds


def _case(scenario: str, dtype: torch.dtype, values: dict, what: str) -> Case:
    """The case of `scenario` from its named values."""
    return scenario_case(scenario, dtype, PARAMS.get(scenario) or MM_PARAMS[scenario], values, what)


@st.composite
def cast_to_cases(draw, dtype: torch.dtype, manifest: object) -> Case:
    source = draw(st.sampled_from(_sources(dtype, manifest)), label="source dtype")
    input, kinds = _source_tensor(draw, dtype, source)
    return _case("cast_to_float8", dtype, {"input": input, "dtype": dtype},
                 what=f"{dtype_names.canonical_name(source)} {tuple(input.shape)} -> {dtype}: {kinds}")


@st.composite
def codes(draw) -> torch.Tensor:
    """uint8 codes: a few drawn ones (shrinking toward [0]) or all 256, in a drawn layout."""
    if draw(st.integers(0, 3), label="all codes?") == 3:
        base = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    else:
        picked = draw(st.lists(st.integers(0, 255), min_size=1, max_size=PICKS), label="codes")
        base = torch.tensor(picked, dtype=torch.int32).to(torch.uint8)
    return draw(_tiled(base))


@st.composite
def cast_from_cases(draw, dtype: torch.dtype, manifest: object) -> Case:
    claimed = claimed_dtypes(manifest)
    targets = [d for d in (*_WIDE_FLOATS, torch.bool, *dtype_names.FLOAT8_DTYPES) if d in claimed and d != dtype]
    target = draw(st.sampled_from(targets or [torch.float32]), label="target dtype")
    input = draw(codes(), label="codes")
    return _case("cast_from_float8", dtype, {"input": input, "dtype": dtype, "target": target},
                 what=f"codes {tuple(input.shape)} as {dtype} -> {target}")


@st.composite
def copy_into_cases(draw, dtype: torch.dtype, manifest: object) -> Case:
    source = draw(st.sampled_from(_sources(dtype, manifest)), label="source dtype")
    input, kinds = _source_tensor(draw, dtype, source)
    dest = draw(relayouts(torch.zeros(input.shape, dtype=torch.uint8).view(dtype), allow_overlap=False),
                label="destination layout")
    return _case("copy_into_float8", dtype, {"input": input, "dest": dest},
                 what=f"{dtype}{tuple(dest.shape)} strides {dest.stride()}.copy_({source} {kinds})")


@st.composite
def move_cases(draw, dtype: torch.dtype) -> Case:
    moves = _MOVES if dtype != torch.float8_e8m0fnu else tuple(m for m in _MOVES if m != "pad")  # no CPU kernel
    op = draw(st.sampled_from(moves), label="op")
    rows, cols = draw(MOVE_ROWS.strategy(), label="rows"), draw(MOVE_COLS.strategy(), label="cols")
    seed = draw(st.integers(0, 2**16), label="seed")
    generator = torch.Generator().manual_seed(seed)
    both = torch.randint(0, 256, (2, rows, cols), generator=generator, dtype=torch.int32).to(torch.uint8).view(dtype)
    input = draw(relayouts(both[0].clone(), allow_overlap=False), label="layout")
    index = torch.randint(0, min(rows, cols), (draw(INDEX_LENGTH.strategy(), label="index length"),),
                          generator=generator)
    mask = torch.randint(0, 2, (cols,), generator=generator).bool()
    return _case("move_float8", dtype, {"input": input, "other": both[1].clone(), "index": index, "mask": mask,
                                        "op": op},
                 what=f"{op} of a {rows}x{cols} {dtype} matrix, strides {input.stride()}")


@st.composite
def scaled_mm_cases(draw, dtype: torch.dtype, manifest: object) -> Case:
    m, k, n = (draw(st.sampled_from(sides), label=name)
               for name, sides in (("m", MM_ROWS), ("k", MM_INNER), ("n", MM_COLUMNS)))
    seed = draw(st.integers(0, 2**16), label="seed")
    generator = torch.Generator().manual_seed(seed)
    spread = min(grid(dtype)[-1] / 8, 4.0)
    a = (torch.randn(m, k, generator=generator) * spread).to(dtype)
    b = (torch.randn(n, k, generator=generator) * spread).to(dtype)
    claimed = claimed_dtypes(manifest)
    outs = [d for d in (torch.float32, torch.bfloat16, torch.float16) if d in claimed] or [torch.float32]
    rowwise = draw(st.booleans(), label="row-wise scales")
    if rowwise:
        scale_a = torch.rand(m, 1, generator=generator) + 0.5
        scale_b = torch.rand(1, n, generator=generator) + 0.5
    else:
        scale_a = torch.tensor(draw(st.sampled_from(SCALES_A), label="scale_a"))
        scale_b = torch.tensor(draw(st.sampled_from(SCALES_B), label="scale_b"))
        outs.append(dtype)  # a float8 result: tensor-wise scales only
    out_dtype = draw(st.sampled_from(outs), label="out_dtype")
    bias = None
    if out_dtype in (torch.bfloat16, torch.float16) and draw(st.booleans(), label="bias?"):
        bias = torch.randn(n, generator=generator).to(out_dtype)
    fast = draw(st.booleans(), label="use_fast_accum")
    what = (f"torch._scaled_mm({m}x{k}, {k}x{n}, {'row-wise' if rowwise else 'tensor-wise'} scales, "
            f"bias={'yes' if bias is not None else 'None'}, out_dtype={out_dtype}, use_fast_accum={fast})")
    return _case("scaled_mm", dtype, {"input": a, "other": b, "scale_a": scale_a, "scale_b": scale_b, "bias": bias,
                                      "out_dtype": out_dtype, "use_fast_accum": fast}, what=what)


# -- bounds of the stored values (`cases.bounds`): what the strategies above draw ------------------------------------

def _index_within(params: dict) -> bool:
    """move_float8's index is below both sides of the input (index_select and indexing use it on either), its mask
    one flag a column: a device kernel may read out of bounds where CPU raises."""
    input, index, mask = params["input"], params["index"], params["mask"]
    if not (input.dim() == 2 and index.dtype == torch.int64 and mask.dtype == torch.bool
            and mask.shape == input.shape[1:]):
        return False
    return index.numel() == 0 or (int(index.min()) >= 0 and int(index.max()) < min(input.shape))


_PICKED = Tensors(PICKS * max(TILE_ROWS), 2)  # drawn elements, maybe tiled into rows
_MATRIX = Tensors(MOVE_ROWS.high * MOVE_COLS.high, 2)
PARAMS = {
    "cast_to_float8": CaseParams({"dtype": Dtypes(FLOAT8_NAMES)}, input=_PICKED),
    "cast_from_float8": CaseParams({"dtype": Dtypes(FLOAT8_NAMES), "target": Dtypes(CAST_TARGETS)},
                                   input=Tensors(256 * max(TILE_ROWS), 2)),
    "copy_into_float8": CaseParams({"dest": _PICKED}, input=_PICKED),
    "move_float8": CaseParams({"other": _MATRIX, "index": Tensors(INDEX_LENGTH.high, 1),
                               "mask": Tensors(MOVE_COLS.high, 1), "op": OneOf(_MOVES)}, input=_MATRIX,
                              rules=(("index below the input's sides, a mask flag a column", _index_within),
                                     ("other has the input's shape (where and cat would broadcast or grow it)",
                                      lambda p: p["other"].shape == p["input"].shape))),
}
_MM_SCALE = Tensors(max(*MM_ROWS, *MM_COLUMNS), 2)
MM_PARAMS = {
    "scaled_mm": CaseParams({"other": Tensors(max(MM_COLUMNS) * max(MM_INNER), 2), "scale_a": _MM_SCALE,
                             "scale_b": _MM_SCALE, "bias": Optional(Tensors(max(MM_COLUMNS), 1)),
                             "out_dtype": Dtypes(("float32", "bfloat16", "float16", *MM_NAMES)),
                             "use_fast_accum": Flag()}, input=Tensors(max(MM_ROWS) * max(MM_INNER), 2)),
}


def cases_for(scenario: str, dtype: torch.dtype, manifest: object) -> st.SearchStrategy[Case]:
    if scenario == "move_float8":
        return move_cases(dtype)
    builders = {"cast_to_float8": cast_to_cases, "cast_from_float8": cast_from_cases,
                "copy_into_float8": copy_into_cases, "scaled_mm": scaled_mm_cases}
    return builders[scenario](dtype, manifest)


def encoding_check(cts, scenario):
    """The device's encoding (NaN mask, codes) equals CPU's exactly (codes and masks are integers and flags, so the
    tolerance is equality); a failure names the first element whose encoding differs and both codes."""
    run = run_program(scenario.program)

    def check(case):
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        try:
            cts.assert_matches(actual, expected, what=case.transforms[0])
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {encoding_difference(case, actual, expected, cts.device)}") from None

    return check


def encoding_difference(case, actual, expected, device: str) -> str:
    """The first element whose encoding differs, with its multi-index, source value and both codes."""
    (got_nan, got_codes), (want_nan, want_codes) = [t.cpu() for t in actual], expected
    differs = (got_nan != want_nan) | (got_codes != want_codes)
    if not differs.any():
        return "the encodings agree"
    index = tuple(int(i) for i in differs.nonzero()[0])
    dtype = case.dtype

    def show(nan, codes):
        if nan[index]:
            return "a NaN code"
        code = int(codes[index])
        return f"0x{code:02x} ({torch.tensor([code], dtype=torch.uint8).view(dtype).item()!r})"

    source = case.sample.input
    return (f"input{list(index)} = {source[index].item()!r} ({source.dtype}) encodes as {show(got_nan, got_codes)} "
            f"on {device}, CPU gives {show(want_nan, want_codes)}")


# the aten overloads fp8 dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten.bitwise_and.Scalar", "aten.cat.default", "aten.clone.default", "aten.copy_.default", "aten.eq.Scalar",
    "aten.gt.Scalar", "aten.isnan.default", "aten.repeat.default", "aten.roll.default", "aten.t.default",
    "aten.unfold.default", "aten.view.dtype", "aten.where.self", "aten.zeros_like.default",
)


# Encodings compare exactly, naming the element that differs; decoded bits, masks and moved codes compare equal.
_COMPARISONS = {"cast_to_float8": Custom(encoding_check), "cast_from_float8": Tolerance(inputs=False),
                "copy_into_float8": Custom(encoding_check), "move_float8": Tolerance(inputs=False)}


def _cases(cts):
    return cases_for(cts.item.op, cts.dtype, cts.manifest)


test_fp8 = scenario_suite(
    "fp8", capability="fp8", level=4, dtypes=FLOAT8_NAMES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, _COMPARISONS[name], cases=_cases)
               for name, program in PROGRAMS.items()])


# the aten overloads fp8_scaled_mm dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_SCALED_MM_OVERLOADS = (
    "aten._scaled_mm.default", "aten.t.default",
)


# Within the output dtype's tolerance widened by k/4 (the input's columns) for a k-term accumulation in another order.
test_fp8_scaled_mm = scenario_suite(
    "fp8_scaled_mm", capability="fp8", level=4, dtypes=MM_NAMES, overloads=_SCALED_MM_OVERLOADS,
    scenarios=[Scenario("scaled_mm", MM_PARAMS["scaled_mm"], MM_PROGRAMS["scaled_mm"],
                        Tolerance(widen=lambda values: max(1.0, values["input"].shape[1] / 4)), cases=_cases)])
