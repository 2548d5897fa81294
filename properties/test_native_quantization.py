"""Native quantization: torch's quantized tensors and the quantized ops a device registers, against CPU's kernels.

Every scenario is a torch-only program run on CPU (the oracle: CPU's quantized kernels) and on the
device; it returns plain observables of the quantized result, never the quantized tensor itself:
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

import math
from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.engine.context import MissingKernelError
from torchcts.engine.programs import run_program
from torchcts.engine.targets import CaseUnavailable
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case, same_bits
from torchcts.strategies.sample_walk import sample_input


# -- programs (torch only: exported verbatim into reproduction scripts) ---------------------------

def quantize_per_tensor(input, scale, zero_point, dtype, view):
    """`torch.quantize_per_tensor` of `input`, observed whole and through a view (`view`: none, t, step)."""
    q = torch.quantize_per_tensor(input, scale, zero_point, getattr(torch, dtype))
    v = q.transpose(0, -1) if view == "t" else q[..., ::2] if view == "step" else q
    return {"int_repr": q.int_repr(), "dequantize": q.dequantize(), "scale": q.q_scale(),
            "zero_point": q.q_zero_point(), "qscheme": str(q.qscheme()), "dtype": str(q.dtype),
            "view_int_repr": v.int_repr(), "view_dequantize": v.dequantize()}


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """`torch.quantize_per_channel` of `input` along `axis` (float64 scales, int64 zero points on the device)."""
    q = torch.quantize_per_channel(input, scales, zero_points, axis, getattr(torch, dtype))
    return {"int_repr": q.int_repr(), "dequantize": q.dequantize(), "scales": q.q_per_channel_scales(),
            "zero_points": q.q_per_channel_zero_points(), "axis": q.q_per_channel_axis(),
            "qscheme": str(q.qscheme()), "dtype": str(q.dtype)}


def to_host(input, scale, zero_point, axis, dtype, how):
    """Quantized on the device (per channel when `scale` is a tensor), then moved to the host by `how`."""
    if isinstance(scale, torch.Tensor):
        q = torch.quantize_per_channel(input, scale, zero_point, axis, getattr(torch, dtype))
    else:
        q = torch.quantize_per_tensor(input, scale, zero_point, getattr(torch, dtype))
    host = q.cpu() if how == "cpu" else q.to("cpu")
    seen = {"on_host": host.device.type == "cpu", "int_repr": host.int_repr(), "dequantize": host.dequantize(),
            "qscheme": str(host.qscheme()), "dtype": str(host.dtype)}
    if isinstance(scale, torch.Tensor):
        seen.update(scales=host.q_per_channel_scales(), zero_points=host.q_per_channel_zero_points(),
                    axis=host.q_per_channel_axis())
    else:
        seen.update(scale=host.q_scale(), zero_point=host.q_zero_point())
    return seen


def from_host(input, scale, zero_point, dtype):
    """Quantized on the host, moved to `input`'s device (read there) and back."""
    q = torch.quantize_per_tensor(input.cpu(), scale, zero_point, getattr(torch, dtype))
    there = q.to(input.device)
    back = there.to("cpu")
    return {"int_repr": there.int_repr(), "dequantize": there.dequantize(), "scale": there.q_scale(),
            "zero_point": there.q_zero_point(), "dtype": str(there.dtype), "back_int_repr": back.int_repr(),
            "back_scale": back.q_scale(), "back_zero_point": back.q_zero_point()}


def binary(input, other, qparams, out_scale, out_zero_point, dtype, op):
    """`quantized::add` or `quantized::mul` (`op`) of `input` and `other` quantized with `qparams` (scale, zero point
    of each)."""
    a = torch.quantize_per_tensor(input, qparams[0], qparams[1], getattr(torch, dtype))
    b = torch.quantize_per_tensor(other, qparams[2], qparams[3], getattr(torch, dtype))
    y = getattr(torch.ops.quantized, op)(a, b, out_scale, out_zero_point)
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


def linear(input, weight, bias, x_qparams, w_scale, out_scale, out_zero_point):
    """`quantized::linear` of quint8 `input` and qint8 `weight` (per channel when `w_scale` is a tensor)."""
    x = torch.quantize_per_tensor(input, x_qparams[0], x_qparams[1], torch.quint8)
    if isinstance(w_scale, torch.Tensor):
        w = torch.quantize_per_channel(weight, w_scale, torch.zeros_like(w_scale, dtype=torch.int64), 0, torch.qint8)
    else:
        w = torch.quantize_per_tensor(weight, w_scale, 0, torch.qint8)
    y = torch.ops.quantized.linear(x, torch.ops.quantized.linear_prepack(w, bias), out_scale, out_zero_point)
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


def conv2d(input, weight, bias, x_qparams, w_scale, out_qparams, geometry):
    """`quantized::conv2d` of quint8 `input`, qint8 `weight`; `geometry`: stride, padding, dilation, groups."""
    x = torch.quantize_per_tensor(input, x_qparams[0], x_qparams[1], torch.quint8)
    w = torch.quantize_per_tensor(weight, w_scale, 0, torch.qint8)
    stride, padding, dilation, groups = geometry
    packed = torch.ops.quantized.conv2d_prepack(w, bias, [stride, stride], [padding, padding],
                                                [dilation, dilation], groups)
    y = torch.ops.quantized.conv2d(x, packed, out_qparams[0], out_qparams[1])
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


PROGRAMS = {"quantize_per_tensor": quantize_per_tensor, "quantize_per_channel": quantize_per_channel,
            "to_host": to_host, "from_host": from_host, "add": binary, "mul": binary, "linear": linear,
            "conv2d": conv2d}
OPS = frozenset({"add", "mul", "linear", "conv2d"})  # requantizing ops: one step allowed whatever the scale

RANGES = {"quint8": (0, 255), "qint8": (-128, 127), "qint32": (-2**31, 2**31 - 1)}
ODD_SCALES = (0.1, 0.3, 1 / 3, 0.7, 0.05, 1.7)  # not powers of two (nor float32 numbers)


# -- the comparison ---------------------------------------------------------------------------------

def power_of_two(scale: float) -> bool:
    return math.frexp(scale)[0] == 0.5


def exact_qparams(seen: dict[str, Any]) -> bool:
    """Whether every scale CPU observed is a power of two (quantization then has one right answer)."""
    found = seen["scales"].tolist() if "scales" in seen else [seen["scale"]]
    return all(power_of_two(s) for s in found)


def _step(seen: dict[str, Any], like: torch.Tensor) -> torch.Tensor:
    """One quantization step of every element of `like` (the scale, per channel along the axis)."""
    if "scales" in seen:
        shape = [1] * like.dim()
        shape[seen["axis"]] = -1
        return seen["scales"].to(torch.float64).reshape(shape).expand(like.shape)
    return torch.full(like.shape, float(seen["scale"]), dtype=torch.float64)


def _first_beyond(bad: torch.Tensor) -> list[int]:
    return [int(i) for i in bad.nonzero()[0]] if bad.dim() else []


def compare_quantized(actual: dict[str, Any], expected: dict[str, Any], exact: bool, what: str) -> None:
    """AssertionError naming the first observable (and multi-index) that differs beyond the allowance:
    everything exact when `exact`, else int_repr within one step and dequantize within one scale."""
    assert isinstance(actual, dict) and actual.keys() == expected.keys(), \
        f"{what}: the device observed {sorted(actual)}, CPU {sorted(expected)}"
    for name, want in expected.items():
        got = actual[name]
        if not isinstance(want, torch.Tensor):
            assert got == want and type(got) is type(want), f"{what}: {name} = {got!r}, CPU gives {want!r}"
            continue
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape, \
            f"{what}: {name} is {_meta(got)}, CPU gives {_meta(want)}"
        got = got.cpu()
        if exact or not (name.endswith("int_repr") or name.endswith("dequantize")):
            if same_bits(got, want):
                continue
            bad = got.to(torch.float64) != want.to(torch.float64)
            if not bad.any():  # same values, other bits (-0.0)
                bad = torch.ones_like(bad)
            allowed = "exactly (a power-of-two scale)" if exact else "exactly"
        elif name.endswith("int_repr"):
            bad = (got.to(torch.int64) - want.to(torch.int64)).abs() > 1
            allowed = "within one step"
        else:
            # one scale, plus the float result's own rounding (qint32 values past 2**24 steps)
            slack = _step(expected, want) + 2 * torch.finfo(want.dtype).eps * want.to(torch.float64).abs()
            bad = (got.to(torch.float64) - want.to(torch.float64)).abs() > slack
            allowed = "within one scale"
        if bad.any():
            where = _first_beyond(bad)
            raise AssertionError(f"{what}: {name}{where} = {got[tuple(where)].item()!r}, CPU gives "
                                 f"{want[tuple(where)].item()!r} (must match {allowed}; "
                                 f"{int(bad.sum())} of {bad.numel()} elements differ)")


def _meta(t: Any) -> str:
    return f"{t.dtype} {list(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__


def quantized_check(cts: Any, scenario: str):
    """A check for `cts.run`: the program on the device against CPU (`compare_quantized`); a kernel the
    device lacks makes the case unavailable, naming it."""
    run = run_program(PROGRAMS[scenario])

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

def _case(cts, input, args, *what) -> Case:
    return Case(cts.item.op, "scenario", cts.dtype, sample_input(input, args=tuple(args)), 0, transforms=what)


scales = st.one_of(st.integers(-6, 2).map(lambda e: 2.0 ** e), st.sampled_from(ODD_SCALES))
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _zero_point(draw, dtype: str) -> int:
    low, high = RANGES[dtype]
    if dtype == "qint32":
        return draw(st.integers(-100, 100), label="zero point")
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
            view = d(st.sampled_from(("none", "t", "step")), label="view")
            return _case(cts, x, (scale, zp, dtype, view), what, f"view={view}")
        if scenario == "quantize_per_channel":
            return _case(cts, x, (scale, zp, axis, dtype), what)
        if scenario == "to_host":
            how = d(st.sampled_from(("cpu", "to")), label="how")
            return _case(cts, x, (scale, zp, axis, dtype, how), what, f"by {how}")
        return _case(cts, x, (scale, zp, dtype), what)
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
        out_scale = _output_scale(d, sa * sb) if cts.item.op == "mul" else sa * 2.0 ** d(st.integers(-2, 2),
                                                                                          label="output scale exponent")
        out_zp = _zero_point(d, dtype)
        return _case(cts, a, (b, [sa, za, sb, zb], out_scale, out_zp, dtype, cts.item.op),
                     f"{dtype} in ({sa}, {za}) ({sb}, {zb}) out ({out_scale}, {out_zp})")
    return draw()


def _activation(d, shape) -> tuple[torch.Tensor, list]:
    """A quint8 activation of `shape` whose quantized values lie in 0..127, exact multiples of its scale."""
    scale, zp = d(scales, label="activation scale"), d(st.integers(0, 127), label="activation zero point")
    ints = d(st.lists(st.integers(0, 127), min_size=int(torch.Size(shape).numel()),
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
    steps = d(st.lists(st.integers(-24, 24), min_size=n, max_size=n), label="bias steps")
    return torch.tensor([k * out_scale for k in steps], dtype=torch.float32)


def _output_scale(d, unit: float) -> float:
    """An output scale 2**3..2**12 times the accumulator's unit (input scale times weight scale): results both
    inside the quint8 range and saturated."""
    return unit * 2.0 ** d(st.integers(3, 12), label="output scale exponent") * d(st.sampled_from((1.0, 0.7)),
                                                                                     label="output scale factor")


def linear_cases(cts):
    @st.composite
    def draw(d):
        batch, n_in, n_out = (d(st.integers(1, 4), label=name) for name in ("batch", "in features", "out features"))
        x, xq = _activation(d, (batch, n_in))
        per_channel = d(st.booleans(), label="per-channel weight")
        w_scale = (torch.tensor(d(st.lists(scales, min_size=n_out, max_size=n_out), label="weight scales"),
                                dtype=torch.float64) if per_channel else d(scales, label="weight scale"))
        out_scale = _output_scale(d, xq[0] * (w_scale.max().item() if per_channel else w_scale))
        w, b, out_zp = _weight(d, (n_out, n_in), w_scale), _bias(d, n_out, out_scale), _zero_point(d, "quint8")
        return _case(cts, x, (w, b, xq, w_scale, out_scale, out_zp),
                     f"x {tuple(x.shape)} -> {n_out}, {'per-channel' if per_channel else 'per-tensor'} weight, "
                     f"bias={b is not None}, out ({out_scale}, {out_zp})")
    return draw()


def conv2d_cases(cts):
    @st.composite
    def draw(d):
        groups = d(st.integers(1, 3), label="groups")
        c_in = groups * d(st.integers(1, 2), label="in channels/group")
        c_out = groups * d(st.integers(1, 2), label="out channels/group")
        k, dilation = d(st.integers(1, 3), label="kernel"), d(st.integers(1, 2), label="dilation")
        stride, padding = d(st.integers(1, 2), label="stride"), d(st.integers(0, 1), label="padding")
        side = d(st.integers(max(1, dilation * (k - 1) + 1 - 2 * padding), 5), label="side")
        x, xq = _activation(d, (d(st.integers(1, 2), label="batch"), c_in, side, side))
        w_scale = d(scales, label="weight scale")
        out = [_output_scale(d, xq[0] * w_scale), _zero_point(d, "quint8")]
        w, b = _weight(d, (c_out, c_in // groups, k, k), w_scale), _bias(d, c_out, out[0])
        geometry = [stride, padding, dilation, groups]
        return _case(cts, x, (w, b, xq, w_scale, out, geometry),
                     f"x {tuple(x.shape)} w {tuple(w.shape)} bias={b is not None} stride/padding/dilation/groups "
                     f"{geometry} out {out}")
    return draw()


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


@register_property("native_quantization", capability="native_quantization", level=6,
                   items=ScenarioItems(tuple(PROGRAMS), ("float32",), programs=PROGRAMS), overloads=_OVERLOADS)
def test_native_quantization(cts):
    cts.run(_CASES[cts.item.op](cts), quantized_check(cts, cts.item.op))
