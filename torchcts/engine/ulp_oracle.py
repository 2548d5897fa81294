"""The ULP-aware oracle: a backend must be as accurate as CPU where CPU rounds correctly.

A backend result one unit in the last place (ULP) off passes `assert_close`'s bfloat16, float16 and
even float32 tolerances, yet for an operation CPU rounds correctly (one IEEE-754 rounding of the
exact result: add, mul, div, sqrt, casts) or computes exactly (neg, abs, min/max, where, copies)
it is a bug. The *reference* is the same op run on CPU with every floating input upcast to float64
(complex to complex128), so it is (nearly) the exact result; each side's *error* is its distance
from the reference in ULPs of the result's dtype (`ulp_errors`).

One table (`RULES`, by OpInfo id) says which ops get which rule (docs/oracle.md says why):

- `correctly_rounded` (slack 0): at every element the device's error must not exceed CPU's error or
  half an ULP (correct rounding), whichever is larger, plus the slack; and where the two differ at
  a halfway case (equal errors of half an ULP) the device rounded the tie away from CPU's
  round-half-to-even. Either is a failure naming the element, the three values and both errors.
  (Half an ULP, because CPU is not always correctly rounded itself: torch's float32 `sqrt` on MKL
  builds is one ULP off for about a fifth of its inputs; a correctly rounded device must pass.)
- `recorded` (every other op): no assertion; the largest errors of both sides go to the record
  (`ulp_error`), so a report can show a backend many times less accurate than CPU where both pass.

Skipped, stated per case: integer and bool item dtypes, non-floating results, references the op
cannot compute (it rejects float64), and elements that are NaN, infinite or overflow the dtype on
any side (the tolerance comparison checks those exactly). For float64 and complex128 items CPU's
own result is the reference (no more precise one exists on CPU): the rule then asks for CPU's
bits, and `recorded` ops record nothing.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import torch
from torch.utils._pytree import tree_flatten

CORRECTLY_ROUNDED, RECORDED = "correctly_rounded", "recorded"
_NOISE = 2.0 ** -20  # float64 noise in an error measured in ULPs of a narrower dtype (ties are exact)
_REFERENCE_DTYPES = (torch.float64, torch.complex128)


@attrs.frozen
class UlpRule:
    """How an op's results are held to the float64 reference."""

    kind: str  # CORRECTLY_ROUNDED or RECORDED
    slack: float = 0.0  # ULPs the device may exceed CPU's error by
    complex_ok: bool = True  # complex results are rounded componentwise (add) rather than computed (mul)
    applies: Callable[[Any], bool] | None = attrs.field(default=None, eq=False)  # on the sample; None: always

    def __attrs_post_init__(self) -> None:
        if self.kind not in (CORRECTLY_ROUNDED, RECORDED):
            raise ValueError(f"UlpRule kind must be {CORRECTLY_ROUNDED!r} or {RECORDED!r}, got {self.kind!r}")
        if not self.slack >= 0:
            raise ValueError(f"UlpRule slack must be a non-negative number of ULPs, got {self.slack!r}")


RECORD_ONLY = UlpRule(RECORDED)
EXACT = UlpRule(CORRECTLY_ROUNDED)  # no rounding at all, or one rounding of the exact value (casts)
REAL_ONLY = UlpRule(CORRECTLY_ROUNDED, complex_ok=False)  # one rounding for reals; complex is a formula


def _alpha_is_one(sample: Any) -> bool:
    """add/sub with alpha != 1 computes `a + alpha*b` (two roundings, or an FMA): not one operation."""
    return sample.kwargs.get("alpha", 1) == 1


def _tensor_divisor(sample: Any) -> bool:
    """True division by a tensor. A Python-scalar divisor is `a * (1/b)` on CUDA by design: not one rounding."""
    return bool(sample.args) and isinstance(sample.args[0], torch.Tensor) and sample.kwargs.get("rounding_mode") is None


_EXACT_OPS = (
    # sign and magnitude, conjugation, parts
    "neg", "positive", "conj", "conj_physical", "real", "imag", "view_as_real", "copysign",
    # copies and data movement
    "clone", "contiguous", "where", "masked_fill", "masked_scatter", "masked_select", "cat", "stack", "flip",
    "roll", "gather", "index_select", "take", "fill", "full_like", "zeros_like", "ones_like",
    # selection: min/max and clamps return one of their inputs
    "maximum", "minimum", "fmax", "fmin", "max.binary", "min.binary", "max.reduction_no_dim",
    "max.reduction_with_dim", "min.reduction_no_dim", "min.reduction_with_dim", "amax", "amin", "clamp",
    "clamp_min", "clamp_max", "nn.functional.relu", "nn.functional.hardtanh", "nan_to_num", "heaviside",
    # comparisons (bool results: compared exactly already; listed so the table is the one answer)
    "eq", "ne", "lt", "le", "gt", "ge",
    # casts: one rounding of an exactly known value
    "to", "double", "float", "half", "bfloat16",
)
_REAL_EXACT_OPS = ("abs", "sign", "sgn", "trunc", "floor", "ceil", "round", "round.decimals_0", "frac")
_REAL_ROUNDED_OPS = ("mul", "square", "sqrt")

RULES: dict[str, UlpRule] = {
    **{name: EXACT for name in _EXACT_OPS},
    **{name: REAL_ONLY for name in _REAL_EXACT_OPS + _REAL_ROUNDED_OPS},
    "add": UlpRule(CORRECTLY_ROUNDED, applies=_alpha_is_one),
    "sub": UlpRule(CORRECTLY_ROUNDED, applies=_alpha_is_one),
    "rsub": UlpRule(CORRECTLY_ROUNDED, applies=_alpha_is_one),
    "div.no_rounding_mode": UlpRule(CORRECTLY_ROUNDED, complex_ok=False, applies=_tensor_divisor),
    "true_divide": UlpRule(CORRECTLY_ROUNDED, complex_ok=False, applies=_tensor_divisor),
}


def rule_for(op_id: str, dtype: torch.dtype) -> UlpRule:
    """The rule of an op (its OpInfo id, or a scenario's name) for an item dtype: the table's, or `recorded`."""
    rule = RULES.get(op_id, RECORD_ONLY)
    if dtype.is_complex and not rule.complex_ok:
        return RECORD_ONLY
    return rule


def measurable(dtype: torch.dtype) -> bool:
    """Whether items of `dtype` get a reference at all: floating and complex dtypes only."""
    return dtype.is_floating_point or dtype.is_complex


def needs_reference_run(dtype: torch.dtype) -> bool:
    """False for float64/complex128 items: CPU's own result is the reference (nothing more precise on CPU)."""
    return measurable(dtype) and dtype not in _REFERENCE_DTYPES


def float64_sample(sample: Any) -> Any:
    """The sample with every floating tensor upcast to float64 and every complex one to complex128 (exact)."""
    def upcast(t: Any) -> Any:
        if isinstance(t, torch.Tensor):
            if t.is_complex():
                return t.detach().to(torch.complex128)
            if t.is_floating_point():
                return t.detach().to(torch.float64)
        return t

    return sample.transform(upcast)


def ulp_of(reference: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype`'s values around each (float64) reference value: 2**(e - p) for a normal
    value in [2**(e-1), 2**e) with p significand bits, the subnormal spacing below the smallest normal."""
    info = torch.finfo(dtype)
    magnitude = reference.abs()
    _, exponent = torch.frexp(magnitude)
    binade = torch.ldexp(torch.ones_like(magnitude), exponent - 1)  # 2**(e-1) <= |x| < 2**e
    binade = torch.where(magnitude == 0, torch.zeros_like(binade), binade)
    return binade.clamp_min(info.smallest_normal) * info.eps


@attrs.frozen
class LeafErrors:
    """Per-element errors of one floating output, as float64 arrays (complex ones as real pairs)."""

    device: torch.Tensor  # the device's values
    cpu: torch.Tensor
    reference: torch.Tensor
    device_error: torch.Tensor  # ULPs of `dtype`
    cpu_error: torch.Tensor
    measured: torch.Tensor  # finite on every side and within the dtype's range
    dtype: torch.dtype  # the (component) dtype the ULPs are of
    shape: tuple[int, ...]
    complex: bool


def leaf_errors(actual: torch.Tensor, expected: torch.Tensor, reference: torch.Tensor) -> LeafErrors:
    """Both sides' errors against the reference, in ULPs of `expected`'s dtype, element by element."""
    def as_float64(t: torch.Tensor) -> torch.Tensor:
        t = t.detach().cpu().resolve_conj().resolve_neg()
        return (torch.view_as_real(t) if t.is_complex() else t).to(torch.float64)

    device, cpu, ref = as_float64(actual), as_float64(expected), as_float64(reference)
    dtype = expected.real.dtype if expected.is_complex() else expected.dtype
    measured = device.isfinite() & cpu.isfinite() & ref.isfinite() & (ref.abs() <= torch.finfo(dtype).max)
    ulp = ulp_of(torch.where(measured, ref, torch.zeros_like(ref)), dtype)
    zero = torch.zeros_like(ref)
    device_error = torch.where(measured, (device - ref).abs() / ulp, zero)
    cpu_error = torch.where(measured, (cpu - ref).abs() / ulp, zero)
    return LeafErrors(device, cpu, ref, device_error, cpu_error, measured, dtype, tuple(expected.shape),
                      expected.is_complex())


def _usable(actual: Any, expected: Any, reference: Any, rule: UlpRule) -> bool:
    """Whether an output can be measured: dense floating tensors of one shape, and a reference more precise
    than the result (or, for a correctly rounded op with a fixed output dtype, that dtype: one rounding)."""
    tensors = (actual, expected, reference)
    if not all(isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_nested for t in tensors):
        return False
    if not (expected.is_floating_point() or expected.is_complex()) or actual.dtype != expected.dtype:
        return False
    if reference.shape != expected.shape or reference.is_complex() != expected.is_complex():
        return False
    if expected.device.type == "meta" or actual.device.type == "meta":
        return False
    return reference.dtype in _REFERENCE_DTYPES or (rule.kind == CORRECTLY_ROUNDED and reference.dtype == expected.dtype)


@attrs.frozen
class UlpComparison:
    """The outcome of holding one case's results to the reference."""

    measured: bool  # some output element was measured
    device_error: float = 0.0  # the largest, in ULPs of the result dtype
    cpu_error: float = 0.0
    message: str = ""  # set: the rule failed

    @property
    def ok(self) -> bool:
        return not self.message


def compare(actual: Any, expected: Any, reference: Any, rule: UlpRule, *, call: str = "") -> UlpComparison:
    """Hold the device's results (`actual`) and CPU's (`expected`) to the reference under `rule`."""
    actual_leaves, actual_spec = tree_flatten(actual)
    expected_leaves, expected_spec = tree_flatten(expected)
    reference_leaves, reference_spec = tree_flatten(reference)
    if not (actual_spec == expected_spec == reference_spec):
        return UlpComparison(False)
    measured, device_max, cpu_max = False, 0.0, 0.0
    for index, (got, want, ref) in enumerate(zip(actual_leaves, expected_leaves, reference_leaves)):
        if not _usable(got, want, ref, rule):
            continue
        errors = leaf_errors(got, want, ref)
        if not errors.measured.any():
            continue
        measured = True
        device_max = max(device_max, float(errors.device_error.max()))
        cpu_max = max(cpu_max, float(errors.cpu_error.max()))
        if rule.kind == CORRECTLY_ROUNDED:
            where = f"output {index}" if len(expected_leaves) > 1 else "output"
            message = _violation(errors, rule, where, call)
            if message:
                return UlpComparison(True, device_max, cpu_max, message)
    return UlpComparison(measured, device_max, cpu_max)


def _violation(errors: LeafErrors, rule: UlpRule, where: str, call: str) -> str:
    """The message naming the first element where the device is less accurate than CPU, or ''."""
    differ = errors.device != errors.cpu
    worse = errors.device_error > errors.cpu_error.clamp_min(0.5) + rule.slack + _NOISE
    tie = differ & ((errors.device_error - errors.cpu_error).abs() <= _NOISE) & (errors.cpu_error <= 0.5 + _NOISE)
    if rule.slack:
        tie = torch.zeros_like(tie)
    bad = errors.measured & (worse | tie)
    if not bad.any():
        return ""
    flat = int(bad.reshape(-1).nonzero()[0])
    at = _multi_index(flat, errors.shape, errors.complex)
    device, cpu, ref = (float(t.reshape(-1)[flat]) for t in (errors.device, errors.cpu, errors.reference))
    device_error, cpu_error = (float(t.reshape(-1)[flat]) for t in (errors.device_error, errors.cpu_error))
    why = ("a halfway case rounded away from CPU's (round half to even)" if bool(tie.reshape(-1)[flat])
           else f"the device is less accurate than CPU and than correct rounding (slack {rule.slack:g} ULP)")
    return (f"{call + ': ' if call else ''}{where}{at} = {device!r} on the device, CPU gives {cpu!r}, float64 reference "
            f"{ref!r}: the device is {device_error:.4g} ULP of {_name(errors.dtype)} from the reference, CPU "
            f"{cpu_error:.4g} ULP; {why}; {int(bad.sum())} of {int(errors.measured.sum())} measured elements "
            f"(ULP rule {CORRECTLY_ROUNDED}, docs/oracle.md)")


def _multi_index(flat: int, shape: tuple[int, ...], is_complex: bool) -> str:
    full = shape + (2,) if is_complex else shape
    index = []
    for size in reversed(full):
        index.append(flat % size)
        flat //= size
    index.reverse()
    part = ""
    if is_complex:
        part = ".real" if index.pop() == 0 else ".imag"
    return f"[{', '.join(map(str, index))}]{part}" if index else part


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@attrs.define
class UlpTally:
    """One item's ULP evidence: the rule its cases ran under and the largest errors of both sides."""

    rule: str = ""
    device_error: float = 0.0
    cpu_error: float = 0.0
    cases: int = 0  # cases with a measured output
    checked: int = 0  # of those, cases the correctly-rounded rule was asserted on

    def add(self, rule: UlpRule, result: UlpComparison) -> None:
        if not result.measured:
            return
        self.cases += 1
        self.checked += rule.kind == CORRECTLY_ROUNDED
        if not self.rule or rule.kind == CORRECTLY_ROUNDED:
            self.rule = rule.kind
        self.device_error = max(self.device_error, result.device_error)
        self.cpu_error = max(self.cpu_error, result.cpu_error)

    def record_fields(self) -> dict[str, Any]:
        """`{"ulp_error": {...}}` once a case was measured, else nothing (docs/results.md)."""
        if not self.cases:
            return {}
        return {"ulp_error": {"rule": self.rule, "backend": round(self.device_error, 4), "cpu": round(self.cpu_error, 4),
                              "cases": self.cases, "checked": self.checked}}
