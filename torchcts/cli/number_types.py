"""click's `IntRange` and `FloatRange`, refusing what is not an ASCII number (`torchcts.ascii_numbers`).

click converts with `int()` and `float()`, which take full-width and other Unicode digits (`--level ８`),
underscores (`1_0`) and, for floats, `nan` and `inf`. These types check the text first, then let click
apply the range and say what is allowed.
"""

from __future__ import annotations

from typing import Any

import click

from torchcts.ascii_numbers import NotAsciiNumber, ascii_float, ascii_int


class IntRange(click.IntRange):
    """An integer option in ASCII digits, within a range."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            value = ascii_int(value)
        except NotAsciiNumber as exc:
            self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)


class FloatRange(click.FloatRange):
    """A number option in ASCII (digits, '.', an exponent; no nan or inf), within a range."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            value = ascii_float(value)
        except NotAsciiNumber as exc:
            self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)
