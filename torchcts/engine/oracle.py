"""The CPU oracle's comparison: tolerances, and what differs between a backend's result and CPU's.

Tolerances come from layers, later ones winning field by field (rtol, atol): per-dtype defaults
(those of `torch.testing.assert_close`, capped at ULPs of the claimed dtype: `precision`), the
OpInfo's own tolerance overrides for the op and dtype (the loosest that applies to the device
type), the manifest's `default` override, then its override
of each of the comparison's categories from the least specific to the most specific
(`manifest.tolerance_override`; vocabulary.TOLERANCE_READERS says which comparisons read which
category). Integers and bools compare exactly. A comparison reports the largest
absolute and relative errors and the ULP distance, and where the first difference is.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import torch
from torch.utils._pytree import tree_flatten

from torchcts import dtypes as dtype_names
from torchcts.core.op_categories import CATEGORIES, category, values_comparable
from torchcts.engine import precision

# (rtol, atol), as torch.testing.assert_close uses them; float8 from the format's precision.
_DEFAULTS: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7), torch.complex32: (1e-3, 1e-5), torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
    **{d: (torch.finfo(d).eps, torch.finfo(d).smallest_normal) for d in dtype_names.FLOAT8_DTYPES},
}

def strides_defined(op_name: str) -> bool:
    """Whether CPU's output strides are part of the op's contract: elementwise ops keep their
    input's memory format (TensorIterator); other ops leave output strides to the backend."""
    return category(op_name) == "elementwise" and values_comparable(op_name)


@attrs.frozen
class Tolerance:
    rtol: float
    atol: float
    source: str  # "default", "opinfo", "manifest", "exact"

    def widened(self, factor: float) -> "Tolerance":
        return Tolerance(self.rtol * factor, self.atol * factor, f"{self.source} x{factor:g}")


def comparison_categories(op_name: str | None, *, compiled: bool = False) -> tuple[str, ...]:
    """The tolerance categories of comparing an op's results, most specific first: the op's category (none for a
    scenario, op_name None), under `compile` for a run through torch.compile (`--compile`)."""
    own = (category(op_name),) if op_name is not None else ()
    return ("compile", *own) if compiled else own


def gradient_categories(own: str) -> tuple[str, ...]:
    """The tolerance categories of comparing the gradients of an op in category `own` (`category(op_name)`):
    `matmul_backward` (matmul ops), `backward`, then `own` (an override of `conv` still reaches a convolution's
    gradients where `backward` has none)."""
    return ("matmul_backward", "backward", own) if own == "matmul" else ("backward", own)


def with_manifest(tol: Tolerance, manifest: Any, categories: tuple[str, ...], dtype: torch.dtype) -> Tolerance:
    """`tol` under the manifest's overrides for a comparison of `categories` (most specific first) in `dtype`; the
    one place a manifest's tolerance reaches a comparison's (suites with a base of their own call it too)."""
    override = manifest.tolerance_override(categories, dtype) if manifest is not None else None
    if override is None:
        return tol
    return Tolerance(override.rtol if override.rtol is not None else tol.rtol,
                     override.atol if override.atol is not None else tol.atol, "manifest")


def tolerance(dtype: torch.dtype, op: Any = None, manifest: Any = None, device_type: str = "cpu",
              categories: tuple[str, ...] | None = None) -> Tolerance:
    """The tolerance for comparing `op`'s results in `dtype` on `device_type` with CPU's (op None: a scenario), with
    the manifest's overrides for `categories` (most specific first; default: `comparison_categories` of the op)."""
    if dtype not in _DEFAULTS:
        return Tolerance(0.0, 0.0, "exact")
    rtol, atol = precision.capped(dtype, _budget_category(op, categories), *_DEFAULTS[dtype])  # claimed precision
    result = Tolerance(rtol, atol, "default")
    if op is not None:
        found = _opinfo_overrides(op, dtype, device_type)
        if found:
            result = Tolerance(max(t.rtol for t in found), max(t.atol for t in found), "opinfo")
    if categories is None:  # a scenario item (op None) takes the manifest's "default" override alone
        categories = comparison_categories(op.name if op is not None else None)
    return with_manifest(result, manifest, categories, dtype)


def _budget_category(op: Any, categories: tuple[str, ...] | None) -> str | None:
    """The op category whose ULP budget caps the defaults (`precision.budget`): the op's, else the least specific of
    `categories` where it names one (a path-shapes case, a gradient), else None (a scenario)."""
    if op is not None:
        return category(op.name)
    return categories[-1] if categories and categories[-1] in CATEGORIES else None


def accumulation_widening(inputs: Any, outputs: Any) -> float:
    """How much to widen a floating tolerance for results that each sum many inputs.

    A sum of n terms rounds differently in another order (another layout, another device's
    reduction tree); the error grows about as sqrt(n). n is taken as the elements in over the
    elements out, so elementwise ops get 1 and a reduction over 1,024 elements about 8. Inputs
    that broadcast together count as their broadcast shape: a reduction over a broadcast dimension
    sums that many terms though each input holds few of them.
    """
    n = terms_per_output(inputs, outputs)
    return max(1.0, math.sqrt(n) / 4) if n else 1.0


def terms_per_output(inputs: Any, outputs: Any) -> float:
    """The elements in (inputs that broadcast together: their broadcast shape) over the elements out; 0 for none."""
    tensors = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor)]
    count_in = sum(t.numel() for t in tensors)
    try:
        count_in = max(count_in, math.prod(torch.broadcast_shapes(*(t.shape for t in tensors))))
    except RuntimeError:  # shapes that do not broadcast (matmul operands): their own sizes
        pass
    count_out = sum(t.numel() for t in tree_flatten(outputs)[0] if isinstance(t, torch.Tensor))
    return count_in / count_out if count_in and count_out else 0.0


def accumulation_floor(tol: Tolerance, expected: Any, inputs: Any, category_name: str | None = None) -> Tolerance:
    """`tol` with atol raised to the accumulation bound sqrt(n) * eps * sum|x| of the claimed dtype for results that
    each sum n terms of the case's `inputs` (`precision.accumulation_floor`); `tol` itself where nothing is summed."""
    floor = precision.accumulation_floor(inputs, expected, category_name, terms_per_output(inputs, expected))
    return Tolerance(tol.rtol, floor, f"{tol.source}, accumulation") if floor > tol.atol else tol


def normwise_floor(tol: Tolerance, expected: Any, inputs: Any = None, category_name: str | None = None) -> Tolerance:
    """`tol` with atol raised to rtol times the largest finite magnitude in `expected` and, given the case's
    `inputs`, to the accumulation bound sqrt(n) * eps * sum|x| of the claimed dtype (`precision.accumulation_floor`;
    `category_name`: the op's category, for how sum|x| is estimated).

    For results computed from many inputs (matmul, norms, reductions, losses) an element near zero
    is usually a difference of large terms: its rounding error is relative to the result's scale,
    or to the terms' (a sum that cancels), not to the element (a bfloat16 batch norm is off by
    whole ulps of 1 near 0).
    """
    if inputs is not None:
        tol = accumulation_floor(tol, expected, inputs, category_name)
    scale = 0.0
    for t in tree_flatten(expected)[0]:
        if (isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_nested and t.device.type != "meta"
                and (t.is_floating_point() or t.is_complex()) and t.numel()):
            finite = t.detach().abs().to(torch.float64)
            finite = finite[torch.isfinite(finite)]
            if finite.numel():
                scale = max(scale, float(finite.max()))
    if tol.rtol * scale <= tol.atol:
        return tol
    return Tolerance(tol.rtol, tol.rtol * scale, f"{tol.source}, norm-wise")


def _opinfo_overrides(op: Any, dtype: torch.dtype, device_type: str) -> list[Any]:
    from torch.testing._internal.common_device_type import toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    found = []
    for info in getattr(op, "decorators", ()) or ():
        if not isinstance(info, DecorateInfo) or info.device_type not in (None, device_type):
            continue
        for decorator in info.decorators:
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                found.append(decorator.d[dtype])
    return found


@attrs.frozen
class Comparison:
    """The outcome of comparing a backend's result with CPU's."""

    ok: bool
    message: str = ""
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    max_ulp: int = 0

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def compare(actual: Any, expected: Any, tol: Tolerance, *, values: bool = True,
            strides: bool | str = False, plain: bool | None = None) -> Comparison:
    """Compare a backend's result (any device) with CPU's: structure, dtype, shape, strides
    (True: all; "significant": those of dimensions longer than 1; False: none), and values
    within `tol` (NaN where NaN, equal infinities). Non-tensor leaves compare when `plain`
    (default: `values`): a scenario's metadata (strides, `_is_view()`) is observable without values."""
    actual_leaves, actual_spec = tree_flatten(actual)
    expected_leaves, expected_spec = tree_flatten(expected)
    if actual_spec != expected_spec:
        return Comparison(False, f"result structure {actual_spec} differs from CPU's {expected_spec}")
    worst = Comparison(True)
    for index, (got, want) in enumerate(zip(actual_leaves, expected_leaves)):
        where = f"output {index}" if len(expected_leaves) > 1 else "output"
        result = _compare_leaf(got, want, tol, values, strides, where, values if plain is None else plain)
        if not result.ok:
            return result
        worst = Comparison(True, "", max(worst.max_abs_error, result.max_abs_error),
                           max(worst.max_rel_error, result.max_rel_error), max(worst.max_ulp, result.max_ulp))
    return worst


def _compare_leaf(got: Any, want: Any, tol: Tolerance, values: bool, strides: bool, where: str,
                  plain: bool) -> Comparison:
    if not isinstance(want, torch.Tensor):
        if isinstance(got, torch.Tensor):
            return Comparison(False, f"{where}: a tensor where CPU gives {type(want).__name__} {want!r}")
        if plain and not _scalars_equal(got, want, tol):
            return Comparison(False, f"{where}: {got!r}, CPU gives {want!r}")
        return Comparison(True)
    if not isinstance(got, torch.Tensor):
        return Comparison(False, f"{where}: {type(got).__name__} {got!r} where CPU gives a tensor")
    if got.dtype != want.dtype:
        return Comparison(False, f"{where}: dtype {got.dtype}, CPU gives {want.dtype}")
    if got.shape != want.shape:
        return Comparison(False, f"{where}: shape {tuple(got.shape)}, CPU gives {tuple(want.shape)}")
    if got.layout != want.layout:
        return Comparison(False, f"{where}: layout {got.layout}, CPU gives {want.layout}")
    if strides and want.layout == torch.strided and want.numel() > 1 and _strides_differ(got, want, strides):
        return Comparison(False, f"{where}: strides {got.stride()}, CPU gives {want.stride()}"
                          + (" (on dimensions longer than 1)" if strides == "significant" else ""))
    if not values or got.device.type == "meta" or want.layout != torch.strided:
        return Comparison(True)
    if tol.rtol == 0 and tol.atol == 0 and want.dtype in _DEFAULTS:  # an integer item, floating output (sinh)
        tol = Tolerance(*_DEFAULTS[want.dtype], "default")
    return _compare_values(got.detach().cpu().resolve_conj().resolve_neg(),
                           want.detach().cpu().resolve_conj().resolve_neg(), tol, where)


def _strides_differ(got: torch.Tensor, want: torch.Tensor, strides: bool | str) -> bool:
    if strides == "significant":  # the memory order of dimensions longer than 1 only
        return any(g != w for g, w, n in zip(got.stride(), want.stride(), want.shape) if n > 1)
    return got.stride() != want.stride()


def _scalars_equal(got: Any, want: Any, tol: Tolerance) -> bool:
    if isinstance(want, float) and isinstance(got, (int, float)):
        if math.isnan(want):
            return math.isnan(got)
        return got == want or abs(got - want) <= tol.atol + tol.rtol * abs(want)
    return got == want


def _compare_values(got: torch.Tensor, want: torch.Tensor, tol: Tolerance, where: str) -> Comparison:
    if want.numel() == 0:
        return Comparison(True)
    if not (want.is_floating_point() or want.is_complex()):
        differ = got != want
        if differ.any():
            index = _first(differ)
            return Comparison(False, f"{where}: {got.reshape(-1)[index].item()!r} at flat index {index}, CPU gives "
                              f"{want.reshape(-1)[index].item()!r} (exact comparison for {want.dtype})")
        return Comparison(True)
    if want.is_complex():
        got, want = torch.view_as_real(got), torch.view_as_real(want)
    g, w = got.to(torch.float64), want.to(torch.float64)
    nan_mismatch = g.isnan() != w.isnan()
    both_finite = g.isfinite() & w.isfinite()
    inf_mismatch = ~both_finite & ~g.isnan() & ~w.isnan() & (g != w)
    abs_error = torch.where(both_finite, (g - w).abs(), torch.zeros_like(g))
    rel_error = abs_error / w.abs().clamp_min(torch.finfo(torch.float64).tiny)
    too_far = abs_error > tol.atol + tol.rtol * w.abs()
    bad = nan_mismatch | inf_mismatch | (both_finite & too_far)
    result = Comparison(True, "", float(abs_error.max()), float(torch.where(both_finite, rel_error, 0).max()),
                        _max_ulp(got, want, both_finite))
    if not bad.any():
        return result
    index = _first(bad)
    return Comparison(False, f"{where}: {got.reshape(-1)[index].item()!r} at flat index {index}, CPU gives "
                      f"{want.reshape(-1)[index].item()!r} (rtol {tol.rtol:g}, atol {tol.atol:g}, {tol.source}); "
                      f"{int(bad.sum())} of {bad.numel()} elements differ",
                      result.max_abs_error, result.max_rel_error, result.max_ulp)


def _first(mask: torch.Tensor) -> int:
    return int(mask.reshape(-1).nonzero()[0])


def _max_ulp(got: torch.Tensor, want: torch.Tensor, finite: torch.Tensor) -> int:
    """Largest distance in units in the last place between finite elements of the same dtype."""
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(got.element_size())
    if ints is None or not finite.any():
        return 0
    magnitude = (1 << (8 * got.element_size() - 1)) - 1

    def monotonic(t: torch.Tensor) -> torch.Tensor:
        # sign-magnitude bit patterns -> integers ordered like the floats they encode
        bits = t.contiguous().view(ints).to(torch.int64)
        return torch.where(bits < 0, -(bits & magnitude), bits).to(torch.float64)

    return int((monotonic(got) - monotonic(want)).abs()[finite].max())
