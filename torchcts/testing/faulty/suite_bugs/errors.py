"""Seeded bugs for the `errors` property: the device rejects what CPU rejects, but with another error.

These act before the op runs (kind `wrong-error`): the device raises where CPU raises too, so
only a check of the exception's type (or message) sees them; "any exception counts" does not.
"""

from __future__ import annotations

from torchcts.testing.faulty.bug_model import Bug

# overloads whose CPU kernels raise IndexError for an out-of-range dimension (OpInfo error inputs reach them)
_DIM_CHECKED = ("aten.diagonal.default", "aten.diagonal_copy.default", "aten.diag_embed.default", "aten.max.dim",
                "aten.min.dim", "aten.roll.default", "aten.unbind.int", "aten.unbind_copy.int",
                "aten.logcumsumexp.default", "aten.linalg_cross.default", "aten.narrow_copy.default",
                "aten.amax.default", "aten.amin.default", "aten.aminmax.default")


def _functional(func) -> bool:
    return not any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)


def _cpu_index_error(func, args: tuple, kwargs: dict) -> IndexError | None:
    """The IndexError CPU's kernel raises on these arguments, or None (functional overloads only: no side effect)."""
    if not _functional(func):
        return None
    try:
        func(*args, **kwargs)
    except IndexError as exc:
        return exc
    except Exception:  # noqa: BLE001 - another rejection: not this bug's condition
        return None
    return None


def _raise_runtime_error(func, args, kwargs, result):
    error = _cpu_index_error(func, args, kwargs)
    if error is not None:
        raise RuntimeError(str(error))


BUGS = (
    Bug("index_error_as_runtime_error", _DIM_CHECKED,
        "CPU's kernel raises IndexError (a dimension out of range, a reduction over an empty dimension)",
        "raises RuntimeError with CPU's message where CPU raises IndexError (a generic check instead of "
        "the index check)",
        lambda f, a, k: _cpu_index_error(f, a, k) is not None, _raise_runtime_error, kind="wrong-error",
        suite="errors"),
)
