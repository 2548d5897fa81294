"""An op's family for grouping failures: one table of name patterns, first match wins.

The oracle's tolerance categories (`torchcts.core.op_categories`: linalg, matmul, conv, fft,
norm, sdpa, loss; reduction here is a wider pattern) are families, by the same patterns; the
families around them split what the oracle calls elementwise into what a kernel author would
look at (comparison, indexing, views, sort, pooling, ...). A scenario suite's item (`views`,
`streams`, ...) is in the family of its suite. Elementwise ops are split into unary and binary by
the number of tensors in their shrunk case.
"""

from __future__ import annotations

import re

from torchcts.core.op_categories import CATEGORY_PATTERNS

_CATEGORY = dict(CATEGORY_PATTERNS)
_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"(interpolate|upsample|grid_sample|affine_grid|pixel_(un)?shuffle)", "resampling"),
    (_CATEGORY["linalg"], "linalg"),
    (_CATEGORY["matmul"], "matmul"),
    (_CATEGORY["conv"], "conv"),
    (_CATEGORY["fft"], "fft"),
    (r"(^|\.)(\w*_pool\w*|\w*pool[123]d\w*)", "pooling"),
    (r"(^|\.)(\w*rand\w*|normal|bernoulli|multinomial|\w*dropout\w*|uniform|exponential|geometric|cauchy|"
     r"log_normal|poisson)(\.|$)", "random"),
    (_CATEGORY["norm"], "norm"),
    (_CATEGORY["sdpa"], "sdpa"),
    (_CATEGORY["loss"], "loss"),
    (r"(^|\.)(sort|argsort|msort|topk|kthvalue|median|nanmedian|mode|unique\w*|searchsorted|bucketize)$", "sort"),
    (r"(^|\.)(sum|nansum|mean|nanmean|prod|std|var|std_mean|var_mean|cumsum|cumprod|logsumexp|logcumsumexp|"
     r"cummax|cummin|trapz|trapezoid|cumulative_trapezoid|softmax|log_softmax|max|min|amax|amin|aminmax|argmax|"
     r"argmin|all|any|count_nonzero)(\.|$)", "reduction"),
    (r"(^|\.)(eq|ne|lt|le|gt|ge|equal|isclose|allclose|greater\w*|less\w*|not_equal)$", "comparison"),
    (r"(^|\.)(index\w*|gather|scatter\w*|take\w*|put\w*|masked\w*|diagonal\w*|diag\w*|select\w*|narrow\w*|"
     r"nonzero\w*|where|tril\w*|triu\w*)(\.|$)", "indexing"),
    (r"(^|\.)(view\w*|reshape\w*|permute|expand\w*|as_strided\w*|transpose|t|flatten|unflatten|squeeze|unsqueeze|"
     r"movedim|moveaxis|\w*split\w*|\w*chunk|unbind|cat|concat\w*|stack|hstack|vstack|dstack|flip\w*|roll|rot90|"
     r"repeat\w*|tile|contiguous|clone|alias\w*|broadcast\w*|atleast_\w+)(\.|$)", "shape"),
    (r"(^|\.)(to|to_sparse|type_as|double|float|half|bfloat16|int|long|short|byte|char|bool|_to_copy|copy_?)$",
     "conversion"),
    (r"(^|\.)(empty\w*|zeros\w*|ones\w*|full\w*|arange|linspace|logspace|eye|new_\w+)$", "factory"),
)
_COMPILED = tuple((re.compile(pattern), family) for pattern, family in _FAMILIES)
MISSING_KERNEL_FAMILY = "missing kernel"  # a missing overload breaks ops of every family: grouped by the overload
ERROR_INPUT_FAMILY = "error checks"  # an input CPU rejects, rejected differently: grouped by CPU's error type
OUTPUT_LAYOUT_FAMILY = "output layout"  # a wrong view at an offset, or plain inputs with a strided output
RESULT_DTYPE_FAMILY = "result dtype"  # a wrong result dtype: grouped by (device's, CPU's) dtype, op or suite
FAMILIES = tuple(dict.fromkeys(family for _, family in _FAMILIES)) + (
    "elementwise", "suite", MISSING_KERNEL_FAMILY, ERROR_INPUT_FAMILY, OUTPUT_LAYOUT_FAMILY, RESULT_DTYPE_FAMILY)

# Names of one kernel: torch's aliases (subtract, multiply, true_divide, ...), the reflected operators, and the
# ops ATen computes with another's kernel (sub is add with a negated alpha; amax and maximum share max's NaN rule).
_KERNEL_STEMS = {
    "sub": "add", "subtract": "add", "rsub": "add", "__rsub__": "add", "__radd__": "add",
    "multiply": "mul", "__rmul__": "mul", "divide": "div", "true_divide": "div", "__rdiv__": "div",
    "__rtruediv__": "div", "floor_divide": "div", "__rpow__": "pow", "float_power": "pow",
    "maximum": "max", "amax": "max", "fmax": "max", "minimum": "min", "amin": "min", "fmin": "min",
    "clip": "clamp", "absolute": "abs", "negative": "neg", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arctan2": "atan2", "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "greater": "gt",
    "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne", "fix": "trunc",
}
_NAME_PREFIXES = ("nn.functional.", "special.", "_refs.", "masked.", "linalg.")


def _bare(op: str) -> str:
    name = op
    for prefix in _NAME_PREFIXES:
        name = name.removeprefix(prefix)
    return name.removeprefix("unsafe_")


def kernel_stem(op: str) -> str:
    """The kernel an OpInfo id, a scenario's name or an overload most likely runs, for grouping: its name without
    namespace, variant, in-place underscore, `unsafe_` and rank suffix (`conv2d` -> `conv`), through torch's
    aliases (`true_divide` -> `div`, `sub` -> `add`, `amax` -> `max`)."""
    name = _bare(op).split(".")[0]
    if name.endswith("_") and not name.endswith("__"):  # an in-place kernel is its op's (`clamp_min_`)
        name = name[:-1]
    name = _KERNEL_STEMS.get(name, name)
    return re.sub(r"(?<=[a-z])_?[123]d$", "", name)  # one kernel template per rank: batch_norm2d, max_pool3d


def op_family(op: str, scenario_suite: str | None = None, tensor_inputs: int | None = None) -> str:
    """The family of the OpInfo id `op` (`nn.functional.relu`, `max.reduction_no_dim`); a scenario item's is its
    suite's (`suite views`). An elementwise op is `elementwise unary` or `elementwise binary` when the number of
    tensors its shrunk case passes is known."""
    if scenario_suite is not None:
        return f"suite {scenario_suite}"
    name = op.removeprefix("nn.functional.").removeprefix("special.").removeprefix("_refs.").removeprefix("unsafe_")
    for pattern, family in _COMPILED:
        if pattern.search(name):
            return family
    if tensor_inputs is None:
        return "elementwise"
    return "elementwise unary" if tensor_inputs <= 1 else "elementwise binary"


# The OpInfo properties (`torchcts.plan.registry`: their items are OpInfo items, their `op` an OpInfo id);
# every other property runs scenarios and its items are grouped by suite. tests/triage checks it against the registry.
OPINFO_PROPERTIES = frozenset({"forward", "errors", "layout", "inplace", "out", "backward", "double_backward",
                               "gradcheck"})
