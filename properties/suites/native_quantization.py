"""Native quantization: torch's quantized tensors and the quantized ops a device registers, against CPU's kernels.

Every scenario is a torch-only program (`torchcts.properties.quantization_programs`) run on CPU (the
oracle: CPU's quantized kernels) and on the device, compared by `quantization_comparison`; it returns
plain observables of the quantized result, never the quantized tensor itself:
`int_repr()`, `dequantize()`, `q_scale()`/`q_zero_point()` or the per-channel scales, zero points
and axis, `str(q.qscheme())` and `str(q.dtype)`.

Scenarios (docs/suites/native_quantization.md): `quantize_per_tensor` (observed whole and through a
non-contiguous view), `quantize_per_channel`, `to_host` (quantized on the device, `.cpu()`),
`from_host` (quantized on CPU, `.to(device)` and back), `add`, `mul`, `linear`, `conv2d` (the
`torch.ops.quantized` kernels, with their prepacks); the quantized dtype is drawn per case.

The oracle. Quantization is `clamp(round_half_even(x / scale) + zero_point)`; with a power-of-two
scale `x / scale` and `x * (1 / scale)` are the same number, so quantize, dequantize and transfers
are held exact (int_repr equal, qparams equal, dequantize bit for bit). With any other scale real
kernels differ in that division, so int_repr may differ by one step (and dequantize by one scale).
Quantized ops requantize their result (fbgemm with a float multiplier, other kernels in fixed
point): int_repr within one step, dequantize within one output scale, qparams exact. Values are
drawn as (integer + fraction) steps around the zero point, the fraction often exactly 1/2 (ties)
and the integer often past the dtype's range (saturation). Op inputs are exact multiples of their
scales, and activations stay in 0..127 (the range x86/fbgemm's int16 accumulation needs), so a
correct device quantizes them as CPU does.

A device without a kernel a case needs (the dispatcher names it: `missing_kernels.find`) makes the
case `runtime_unavailable` with the kernel named ("missing kernel aten::empty_quantized
(QuantizedPrivateUse1)"), so an item whose cases all lack one ends `runtime_unavailable`, never a
pass. Any other exception is an `error`; a value beyond the allowance a failure.

Limits: only the CPU quantized engine torch selects (x86) is the oracle; no quint4x2, float8 or
per-channel float qparams; no quantized modules, observers or fake quantization; the one-step
allowance cannot see a device that is off by exactly one step with a non-power-of-two scale.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Either, Floats, Ints, Lists, OneOf, Optional, Tensors, Tuples
from torchcts.cases.scenario_case import scenario_case
from torchcts.engine.context import MissingKernelError
from torchcts.engine.programs import run_program
from torchcts.engine.targets import CaseUnavailable
from torchcts.properties.quantization_comparison import compare_quantized, exact_qparams
from torchcts.properties.quantization_programs import OPS, PROGRAMS  # the scenarios' torch-only programs
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("torch quantized tensors on the device (per tensor and per channel, quint8/qint8/qint32) and the "
          "quantized kernels it registers (add, mul, linear, conv2d) agree with CPU's: exact "
          "int_repr/qparams/dequantize with power-of-two scales, int_repr within one step otherwise and for "
          "requantizing ops; a missing quantized kernel is runtime_unavailable, named")
ITEMS = "quantize_per_tensor, quantize_per_channel, to_host, from_host, add, mul, linear, conv2d"

RANGES = {"quint8": (0, 255), "qint8": (-128, 127), "qint32": (-2**31, 2**31 - 1)}
ODD_SCALES = (0.1, 0.3, 1 / 3, 0.7, 0.05, 1.7)  # not powers of two (nor float32 numbers)


def quantized_check(cts: Any, row: Scenario):
    """A check for `cts.run` (the rows' `Custom` comparison): the row's program on the device against CPU
    (`compare_quantized`); a kernel the device lacks makes the case unavailable, naming it."""
    scenario = row.name
    run = run_program(row.program)

    def check(case: Case) -> None:
        expected = cts.on_cpu_call(run, case.sample)
        try:
            actual = cts.on_device_call(run, case.sample, what=f" ({scenario})")
        except MissingKernelError as exc:
            raise CaseUnavailable(exc.kernel.describe()) from exc
        if not cts.target.compares_values:
            return
        what = f"{scenario} [{'; '.join(case.transforms)}]"
        compare_quantized(actual, expected, scenario not in OPS and exact_qparams(expected), what)

    return check


# -- cases ------------------------------------------------------------------------------------------

def _case(cts, values: dict, *what: str) -> Case:
    """The scenario's case of named `values` (its `PARAMS`), said in parts `what`."""
    return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], values, what)


SCALE_EXPONENT = Ints(-6, 2)  # scales: powers of two 2**-6..2**2, or ODD_SCALES
SIDE, MOST_DIMS = Ints(1, 4), 3  # the quantized inputs' shapes
QINT32_ZERO_POINT = Ints(-100, 100)
OUTPUT_EXPONENT, ADD_OUTPUT_EXPONENT, OUTPUT_FACTORS = Ints(3, 12), Ints(-2, 2), (1.0, 0.7)
ACTIVATION = Ints(0, 127)  # quint8 activations' quantized values and zero point
BIAS_STEPS = Ints(-24, 24)
GROUPS, PER_GROUP, KERNEL = Ints(1, 3), Ints(1, 2), Ints(1, 3)  # conv2d
DILATION, STRIDE, PADDING = Ints(1, 2), Ints(1, 2), Ints(0, 1)
CONV_SIDE, CONV_BATCH = 5, Ints(1, 2)
VIEWS, HOWS = ("none", "t", "step"), ("cpu", "to")
scales = st.one_of(SCALE_EXPONENT.strategy().map(lambda e: 2.0 ** e), st.sampled_from(ODD_SCALES))
shapes = Lists(SIDE, 1, MOST_DIMS).strategy().map(tuple)


def _zero_point(draw, dtype: str) -> int:
    low, high = RANGES[dtype]
    if dtype == "qint32":
        return draw(QINT32_ZERO_POINT.strategy(), label="zero point")
    return draw(st.one_of(st.sampled_from((0, (low + high + 1) // 2)), st.integers(low, high)), label="zero point")


def _steps(draw, dtype: str, numel: int, *, ties: bool = True) -> torch.Tensor:
    """`numel` intended quantized values (float64): integers around and past the dtype's range, plus a fraction
    of a step, often exactly 1/2 (a tie)."""
    low, high = RANGES[dtype]
    if dtype == "qint32":
        ints = st.one_of(st.integers(-300, 300), st.sampled_from((2**31, -2**31 - 2**9, 2**30 + 2**7)))
    else:
        ints = st.integers(low - 4, high + 4)
    fractions = st.sampled_from((0.5, -0.5, 0.0, 0.25)) | st.floats(-0.5, 0.5) if ties else st.just(0.0)
    values = draw(st.lists(st.tuples(ints, fractions), min_size=numel, max_size=numel), label="steps")
    return torch.tensor([i + f for i, f in values], dtype=torch.float64)


def _real(steps: torch.Tensor, zero_point: Any, scale: Any) -> torch.Tensor:
    """The float32 input whose quantization is `steps` (zero point and scale broadcast)."""
    return ((steps - zero_point) * scale).to(torch.float32)


def _quantized_input(d, dtype: str, shape: tuple[int, ...], per_channel: bool) -> tuple[torch.Tensor, Any, Any, int]:
    """(input, scale, zero point, axis): a float scale and int zero point, or per channel (along a drawn axis)
    float64 scales and int64 zero points; the input's values are `_steps` of them."""
    steps = _steps(d, dtype, int(torch.Size(shape).numel())).reshape(shape)
    if not per_channel:
        scale, zp = d(scales, label="scale"), _zero_point(d, dtype)
        return _real(steps, zp, scale), scale, zp, 0
    axis = d(st.integers(0, len(shape) - 1), label="axis")
    n = shape[axis]
    s = torch.tensor(d(st.lists(scales, min_size=n, max_size=n), label="scales"), dtype=torch.float64)
    zp = torch.tensor([_zero_point(d, dtype) for _ in range(n)], dtype=torch.int64)
    view = [-1 if dim == axis else 1 for dim in range(len(shape))]
    return _real(steps, zp.reshape(view), s.reshape(view)), s, zp, axis


def _qparams_text(scale: Any, zp: Any, axis: int) -> str:
    if isinstance(scale, torch.Tensor):
        return f"axis={axis} scales={scale.tolist()} zero points={zp.tolist()}"
    return f"scale={scale} zero point={zp}"


def quantize_cases(cts):
    """quantize_per_tensor, quantize_per_channel, to_host, from_host: a quantized dtype, a shape, qparams."""
    scenario = cts.item.op

    @st.composite
    def draw(d):
        dtype, shape = d(st.sampled_from(tuple(RANGES)), label="dtype"), d(shapes, label="shape")
        per_channel = scenario == "quantize_per_channel" or (scenario == "to_host" and d(st.booleans(),
                                                                                           label="per channel"))
        x, scale, zp, axis = _quantized_input(d, dtype, shape, per_channel)
        what = f"{dtype} {_qparams_text(scale, zp, axis)}"
        if scenario == "quantize_per_tensor":
            view = d(st.sampled_from(VIEWS), label="view")
            return _case(cts, {"input": x, "scale": scale, "zero_point": zp, "dtype": dtype, "view": view}, what,
                         f"view={view}")
        if scenario == "quantize_per_channel":
            return _case(cts, {"input": x, "scales": scale, "zero_points": zp, "axis": axis, "dtype": dtype}, what)
        if scenario == "to_host":
            how = d(st.sampled_from(HOWS), label="how")
            return _case(cts, {"input": x, "scale": scale, "zero_point": zp, "axis": axis, "dtype": dtype, "how": how},
                         what, f"by {how}")
        return _case(cts, {"input": x, "scale": scale, "zero_point": zp, "dtype": dtype}, what)
    return draw()


def _operand(d, dtype: str, shape, label: str) -> tuple[torch.Tensor, float, int]:
    scale, zp = d(scales, label=f"{label} scale"), _zero_point(d, dtype)
    return _real(_steps(d, dtype, int(torch.Size(shape).numel()), ties=False), zp, scale).reshape(shape), scale, zp


def binary_cases(cts):
    dtypes = ("quint8", "qint8", "qint32") if cts.item.op == "add" else ("quint8", "qint8")

    @st.composite
    def draw(d):
        dtype = d(st.sampled_from(dtypes), label="dtype")
        shape = d(shapes, label="shape")
        (a, sa, za), (b, sb, zb) = _operand(d, dtype, shape, "input"), _operand(d, dtype, shape, "other")
        # the output scale near the inputs' (add) or their product's (mul): results both in range and saturated
        out_scale = _output_scale(d, sa * sb) if cts.item.op == "mul" else sa * 2.0 ** d(
            ADD_OUTPUT_EXPONENT.strategy(), label="output scale exponent")
        out_zp = _zero_point(d, dtype)
        return _case(cts, {"input": a, "other": b, "qparams": [sa, za, sb, zb], "out_scale": out_scale,
                           "out_zero_point": out_zp, "dtype": dtype, "op": cts.item.op},
                     f"{dtype} in ({sa}, {za}) ({sb}, {zb}) out ({out_scale}, {out_zp})")
    return draw()


def _activation(d, shape) -> tuple[torch.Tensor, list]:
    """A quint8 activation of `shape` whose quantized values lie in 0..127, exact multiples of its scale."""
    scale, zp = d(scales, label="activation scale"), d(ACTIVATION.strategy(), label="activation zero point")
    ints = d(st.lists(ACTIVATION.strategy(), min_size=int(torch.Size(shape).numel()),
                      max_size=int(torch.Size(shape).numel())), label="activation")
    return _real(torch.tensor(ints, dtype=torch.float64), zp, scale).reshape(shape), [scale, zp]


def _weight(d, shape, scale) -> torch.Tensor:
    ints = d(st.lists(st.integers(-128, 127), min_size=int(torch.Size(shape).numel()),
                      max_size=int(torch.Size(shape).numel())), label="weight")
    view = [-1] + [1] * (len(shape) - 1)
    scale = scale.reshape(view) if isinstance(scale, torch.Tensor) else scale
    return _real(torch.tensor(ints, dtype=torch.float64).reshape(shape), 0, scale)


def _bias(d, n: int, out_scale: float):
    """None, or `n` biases of up to 24 output steps (a bias lost shows beyond the one-step allowance)."""
    if d(st.booleans(), label="no bias"):
        return None
    steps = d(st.lists(BIAS_STEPS.strategy(), min_size=n, max_size=n), label="bias steps")
    return torch.tensor([k * out_scale for k in steps], dtype=torch.float32)


def _output_scale(d, unit: float) -> float:
    """An output scale 2**3..2**12 times the accumulator's unit (input scale times weight scale): results both
    inside the quint8 range and saturated."""
    return unit * 2.0 ** d(OUTPUT_EXPONENT.strategy(), label="output scale exponent") * d(
        st.sampled_from(OUTPUT_FACTORS), label="output scale factor")


def linear_cases(cts):
    @st.composite
    def draw(d):
        batch, n_in, n_out = (d(SIDE.strategy(), label=name) for name in ("batch", "in features", "out features"))
        x, xq = _activation(d, (batch, n_in))
        per_channel = d(st.booleans(), label="per-channel weight")
        w_scale = (torch.tensor(d(st.lists(scales, min_size=n_out, max_size=n_out), label="weight scales"),
                                dtype=torch.float64) if per_channel else d(scales, label="weight scale"))
        out_scale = _output_scale(d, xq[0] * (w_scale.max().item() if per_channel else w_scale))
        w, b, out_zp = _weight(d, (n_out, n_in), w_scale), _bias(d, n_out, out_scale), _zero_point(d, "quint8")
        return _case(cts, {"input": x, "weight": w, "bias": b, "x_qparams": xq, "w_scale": w_scale,
                           "out_scale": out_scale, "out_zero_point": out_zp},
                     f"x {tuple(x.shape)} -> {n_out}, {'per-channel' if per_channel else 'per-tensor'} weight, "
                     f"bias={b is not None}, out ({out_scale}, {out_zp})")
    return draw()


def conv2d_cases(cts):
    @st.composite
    def draw(d):
        groups = d(GROUPS.strategy(), label="groups")
        c_in = groups * d(PER_GROUP.strategy(), label="in channels/group")
        c_out = groups * d(PER_GROUP.strategy(), label="out channels/group")
        k, dilation = d(KERNEL.strategy(), label="kernel"), d(DILATION.strategy(), label="dilation")
        stride, padding = d(STRIDE.strategy(), label="stride"), d(PADDING.strategy(), label="padding")
        side = d(st.integers(max(1, dilation * (k - 1) + 1 - 2 * padding), CONV_SIDE), label="side")
        x, xq = _activation(d, (d(CONV_BATCH.strategy(), label="batch"), c_in, side, side))
        w_scale = d(scales, label="weight scale")
        out = [_output_scale(d, xq[0] * w_scale), _zero_point(d, "quint8")]
        w, b = _weight(d, (c_out, c_in // groups, k, k), w_scale), _bias(d, c_out, out[0])
        geometry = [stride, padding, dilation, groups]
        return _case(cts, {"input": x, "weight": w, "bias": b, "x_qparams": xq, "w_scale": w_scale,
                           "out_qparams": out, "geometry": geometry},
                     f"x {tuple(x.shape)} w {tuple(w.shape)} bias={b is not None} stride/padding/dilation/groups "
                     f"{geometry} out {out}")
    return draw()


# -- bounds of the stored values (`cases.bounds`): what the strategies above draw ------------------------------------

SCALES = OneOf((*(2.0 ** e for e in range(SCALE_EXPONENT.low, SCALE_EXPONENT.high + 1)), *ODD_SCALES))
# an output scale: the input's times 2**-2..2**2 (add), or the accumulator's unit (two scales' product) times
# 2**3..2**12 times 1 or 0.7 (mul, linear, conv2d)
OUTPUT_SCALES = Floats(min(SCALES.values) ** 2 * 2.0 ** OUTPUT_EXPONENT.low * min(OUTPUT_FACTORS),
                       max(SCALES.values) ** 2 * 2.0 ** OUTPUT_EXPONENT.high * max(OUTPUT_FACTORS))
ZERO_POINTS = Ints(min(low for low, _ in RANGES.values() if low > -2**31), max(high for _, high in RANGES.values()
                                                                                if high < 2**31 - 1))
_QUANTIZED = Tensors(SIDE.high ** MOST_DIMS, MOST_DIMS)
_PER_CHANNEL = Tensors(SIDE.high, 1)  # per-channel scales or zero points
_DTYPE = OneOf(tuple(RANGES))


def _per_channel_rule(scale_name: str, zero_point_name: str):
    """Per-channel scales and zero points (tensors) hold one a slice of the input along an axis it has (a device
    kernel may read past them where CPU raises); plain numbers are per-tensor ones."""
    def fits(params: dict) -> bool:
        scale, zero_point, axis, input = params[scale_name], params[zero_point_name], params["axis"], params["input"]
        if not isinstance(scale, torch.Tensor) and not isinstance(zero_point, torch.Tensor):
            return True
        return (isinstance(scale, torch.Tensor) and isinstance(zero_point, torch.Tensor) and axis < input.dim()
                and scale.numel() == zero_point.numel() == input.shape[axis])

    return (f"{scale_name} and {zero_point_name}: per tensor, or one a slice along an axis of the input", fits)
_ACTIVATION_QPARAMS = Tuples((SCALES, ACTIVATION))
_CONV_CHANNELS = GROUPS.high * PER_GROUP.high
PARAMS = {
    "quantize_per_tensor": CaseParams({"scale": SCALES, "zero_point": ZERO_POINTS, "dtype": _DTYPE,
                                       "view": OneOf(VIEWS)}, input=_QUANTIZED),
    "quantize_per_channel": CaseParams({"scales": _PER_CHANNEL, "zero_points": _PER_CHANNEL,
                                        "axis": Ints(0, MOST_DIMS - 1), "dtype": _DTYPE},
                                       input=_QUANTIZED, rules=(_per_channel_rule("scales", "zero_points"),)),
    "to_host": CaseParams({"scale": Either((SCALES, _PER_CHANNEL)), "zero_point": Either((ZERO_POINTS, _PER_CHANNEL)),
                           "axis": Ints(0, MOST_DIMS - 1), "dtype": _DTYPE, "how": OneOf(HOWS)},
                          input=_QUANTIZED, rules=(_per_channel_rule("scale", "zero_point"),)),
    "from_host": CaseParams({"scale": SCALES, "zero_point": ZERO_POINTS, "dtype": _DTYPE}, input=_QUANTIZED),
    **{op: CaseParams({"other": _QUANTIZED, "qparams": Tuples((SCALES, ZERO_POINTS, SCALES, ZERO_POINTS)),
                       "out_scale": OUTPUT_SCALES, "out_zero_point": ZERO_POINTS, "dtype": _DTYPE,
                       "op": OneOf((op,))}, input=_QUANTIZED) for op in ("add", "mul")},
    "linear": CaseParams({"weight": Tensors(SIDE.high ** 2, 2), "bias": Optional(Tensors(SIDE.high, 1)),
                          "x_qparams": _ACTIVATION_QPARAMS, "w_scale": Either((SCALES, _PER_CHANNEL)),
                          "out_scale": OUTPUT_SCALES, "out_zero_point": ZERO_POINTS},
                         input=Tensors(SIDE.high ** 2, 2)),
    "conv2d": CaseParams({"weight": Tensors(_CONV_CHANNELS * PER_GROUP.high * KERNEL.high ** 2, 4),
                          "bias": Optional(Tensors(_CONV_CHANNELS, 1)), "x_qparams": _ACTIVATION_QPARAMS,
                          "w_scale": SCALES, "out_qparams": Tuples((OUTPUT_SCALES, ZERO_POINTS)),
                          "geometry": Tuples((STRIDE, PADDING, DILATION, GROUPS))},
                         input=Tensors(CONV_BATCH.high * _CONV_CHANNELS * CONV_SIDE ** 2, 4)),
}


_CASES = {"quantize_per_tensor": quantize_cases, "quantize_per_channel": quantize_cases, "to_host": quantize_cases,
          "from_host": quantize_cases, "add": binary_cases, "mul": binary_cases,
          "linear": linear_cases, "conv2d": conv2d_cases}

# the aten overloads the scenarios dispatch on a device (traced on the faulty device; the registry takes aten
# overloads only: the quantized namespace's add, mul, linear(_prepack), conv2d(_prepack).new are not listed)
_OVERLOADS = (
    "aten.quantize_per_tensor.default", "aten.quantize_per_channel.default", "aten.int_repr.default",
    "aten.dequantize.self", "aten.q_scale.default", "aten.q_zero_point.default", "aten.q_per_channel_scales.default",
    "aten.q_per_channel_zero_points.default", "aten.q_per_channel_axis.default", "aten.qscheme.default",
    "aten._to_copy.default",
)


test_native_quantization = scenario_suite(
    "native_quantization", capability="native_quantization", level=6, dtypes=("float32",), overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, Custom(quantized_check), cases=_CASES[name])
               for name, program in PROGRAMS.items()])
