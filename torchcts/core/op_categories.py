"""An op's category from its name alone: the oracle's tolerance categories, and ops whose values mean nothing.

One table, read by the oracle (a manifest's `tolerance_overrides` are keyed by the category), by triage (its
families start from these patterns) and by anything else that groups ops without torch's op database. First
match wins; an op in no category is `elementwise`. No torch: torch-free paths import this.
"""

from __future__ import annotations

import re

ELEMENTWISE = "elementwise"

# (category, name pattern), first match wins.
CATEGORY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("linalg", r"^(linalg\.|norm\.nuc|cholesky|lu|qr|svd|pinverse|inverse|det|logdet|slogdet|triangular_solve)"),
    ("matmul", r"(^|\.)(_?scaled_mm|mm|bmm|matmul|addmm|addbmm|baddbmm|addmv|mv|dot|vdot|inner|einsum|tensordot|"
               r"linear|bilinear|chain_matmul|__rmatmul__|addr|kron)"),
    ("conv", r"conv"),
    ("fft", r"^fft\."),
    ("norm", r"(norm|normalize)"),
    ("sdpa", r"attention"),
    ("loss", r"loss"),
    ("reduction", r"(^|\.)(sum|nansum|mean|nanmean|prod|std|var|std_mean|var_mean|cumsum|cumprod|logsumexp|"
                  r"logcumsumexp|cummax|cummin|trapz|trapezoid|cumulative_trapezoid|softmax|log_softmax)"),
)
CATEGORIES: tuple[str, ...] = tuple(name for name, _ in CATEGORY_PATTERNS) + (ELEMENTWISE,)
_COMPILED = tuple((re.compile(pattern), name) for name, pattern in CATEGORY_PATTERNS)

# Ops whose result values are unspecified (uninitialised memory) or random: metadata only.
_VALUES_UNDEFINED = re.compile(
    r"(^|\.)(empty|new_empty|empty_like|empty_strided|new_empty_strided|empty_permuted|resize_|resize_as_)$")
_RANDOM = re.compile(r"rand|normal|bernoulli|multinomial|dropout|uniform|exponential|geometric|cauchy|"
                     r"log_normal|poisson|rrelu|randperm")


def category(op_name: str) -> str:
    """The tolerance category of an op (manifest `tolerance_overrides` are keyed by it)."""
    for pattern, name in _COMPILED:
        if pattern.search(op_name):
            return name
    return ELEMENTWISE


def values_comparable(op_name: str) -> bool:
    """False for ops whose values are undefined (`empty*`) or random: compare metadata only."""
    return not (_VALUES_UNDEFINED.search(op_name) or _RANDOM.search(op_name))
