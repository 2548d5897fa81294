"""Value kinds: how one manifest value is checked and normalised, and what a bad one is told.

The schema (`torchcts.manifest.schema`) gives each scalar key a kind; the parser applies it, so
a key's rule lives in one place. A kind accepts a value or raises `Invalid` with the message,
the allowed text and the nearest valid name.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Sequence

import attrs

from torchcts.core.compile_settings import settings_problem
from torchcts.manifest.problems import allowed_list, suggest

INT_MAX = 2**63 - 1  # every integer setting fits int64 (seeds, counts) and prints in JSON
MAX_EXAMPLES = 1_000_000  # as `--max-examples` allows: more examples per item is a typo, not a plan
DEADLINE_MAX_MS = 86_400_000.0  # one day; Hypothesis cannot represent much longer deadlines
NAME_MAX_CHARS = 200  # device, module and decoder names; longer is a mistake (and would flood the summary)
DEVICE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(:[0-9]+)?")
MODULE_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
DECODER_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class Invalid(Exception):
    """A value a kind does not accept: the message, what is allowed, and the nearest valid name."""

    def __init__(self, message: str, allowed: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message, self.allowed, self.hint = message, allowed, hint


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A finite int or float (an int too large for a float, like 10**400, is not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def name_like(value: object, form: re.Pattern[str]) -> bool:
    """A string of at most NAME_MAX_CHARS characters that `form` matches whole."""
    return isinstance(value, str) and len(value) <= NAME_MAX_CHARS and form.fullmatch(value) is not None


def _same(value: object) -> object:
    return value


def _never(value: object) -> bool:
    return False


@attrs.frozen
class Kind:
    """Accepted values, their normal form, and the message for a value that is not accepted.

    `too_large` is checked first, so an out-of-range number gets its bound rather than the
    generic message; `choices` makes a closed set of names (allowed list and nearest name)."""

    accepts: Callable[[object], bool] = _never
    message: str = "invalid value"
    normalise: Callable[[object], object] = _same
    show_allowed: bool = True
    too_large: Callable[[object], bool] = _never
    too_large_message: str = ""
    choices: tuple[str, ...] = ()

    def parse(self, value: object, allowed: str | None) -> object:
        """The normal form of `value`; raises `Invalid` (with `allowed` shown where the kind says so)."""
        if self.too_large(value):
            raise Invalid(self.too_large_message)
        if self.choices:
            if value in self.choices:
                return value
            raise Invalid(self.message, allowed_list(self.choices), suggest(value, self.choices))
        if not self.accepts(value):
            raise Invalid(self.message, allowed if self.show_allowed else None)
        return self.normalise(value)


def integer(minimum: int) -> Kind:
    """An int from `minimum` to 2**63-1."""
    return Kind(lambda v: is_int(v) and minimum <= v <= INT_MAX, f"must be an integer >= {minimum} (at most 2**63-1)")


def integer_range(low: int, high: int, show_allowed: bool = True) -> Kind:
    return Kind(lambda v: is_int(v) and low <= v <= high, f"must be an integer from {low} to {high}",
                show_allowed=show_allowed)


def choice(names: Sequence[str], what: str) -> Kind:
    return Kind(message=f"unknown {what}", choices=tuple(names))


def name_list(names: Sequence[str], what: str) -> Kind:
    """A list (or tuple) of names from a closed set, normalised to a sorted tuple without repeats."""
    return Kind(lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) and x in names for x in v),
                f"must be a list of {what}s", normalise=lambda v: tuple(sorted(set(v))))


def _positive(value: object) -> bool:
    return is_number(value) and value > 0


def _positive_list(value: object) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(_positive(v) for v in value)


def _auto_or(accepts: Callable[[object], bool], normalise: Callable[[object], object]) -> Kind:
    """'auto' (normalised to None: detect at run time) or a value `accepts` takes."""
    return Kind(lambda v: v == "auto" or accepts(v), normalise=lambda v: None if v == "auto" else normalise(v))


DEVICE = Kind(lambda v: name_like(v, DEVICE_NAME), "must be a device type name")
MODULE = Kind(lambda v: v is None or name_like(v, MODULE_PATH), "must be None or a dotted module name")
FLAG = Kind(lambda v: isinstance(v, bool), "must be a bool")
BOOL = Kind(lambda v: isinstance(v, bool))  # a bool whose bad values get the generic message
AUTO_OR_POSITIVE = _auto_or(_positive, float)
AUTO_OR_POSITIVE_LIST = _auto_or(_positive_list, lambda v: tuple(float(x) for x in v))
NONE_OR_POSITIVE = Kind(lambda v: v is None or _positive(v), "must be None or a positive number",
                        normalise=lambda v: None if v is None else float(v))
MAX_EXAMPLES_KIND = Kind(lambda v: is_int(v) and v >= 1, too_large=lambda v: is_int(v) and v > MAX_EXAMPLES,
                         too_large_message=f"must be at most {MAX_EXAMPLES:,}")
DEADLINE = Kind(lambda v: v is None or _positive(v), normalise=lambda v: None if v is None else float(v),
                too_large=lambda v: is_number(v) and v > DEADLINE_MAX_MS,
                too_large_message=f"must be at most {DEADLINE_MAX_MS:.0f} ms (one day); None disables the deadline")
SEED = Kind(lambda v: v is None or (is_int(v) and v >= 0), too_large=lambda v: is_int(v) and v > INT_MAX,
            too_large_message="must be at most 2**63-1")


# `compile`: the rules of `core.compile_settings.settings_problem` (one definition: a run refuses nothing a manifest
# check passed); a backend name as torch._dynamo knows it, or module.path:callable
def _compile_setting(name: str, value: object) -> bool:
    return settings_problem({name: value}) is None


COMPILE_BACKEND = Kind(lambda v: v is None or _compile_setting("backend", v),
                       "must be None, a backend name or module.path:callable (no part starting with __)")
TRISTATE = Kind(lambda v: v is None or isinstance(v, bool), "must be True, False or None")
COMPILE_MODE = Kind(lambda v: v is None or _compile_setting("mode", v), "must be None or a torch.compile mode name")


def _compile_options(value: object) -> bool:
    """A dict of at most 64 option names to JSON scalars (strings of at most 256 characters)."""
    return isinstance(value, dict) and _compile_setting("options", value) and all(
        v is None or isinstance(v, (bool, str)) or is_number(v) for v in value.values())


COMPILE_OPTIONS = Kind(_compile_options, "must be a dict of option names to bools, numbers, strings or None",
                       normalise=lambda v: tuple(sorted(v.items())))
