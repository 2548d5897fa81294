"""Seeded bugs for the tensor-semantics suites, one module per suite (`BUGS`: a tuple of `Bug`).

Each module's bugs fire only under the condition its suite builds (a layout, a scalar kind, a
special value), on the aten overloads the faulty device runs; `torchcts.testing.faulty.bugs`
collects them into its table with the core bugs. Adding a suite's bugs is adding its module here.
"""

from __future__ import annotations

import importlib
import pkgutil

from torchcts.testing.faulty.bug_model import Bug


def _collect() -> tuple[Bug, ...]:
    found: list[Bug] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(module.BUGS)
    return tuple(found)


SUITE_BUGS: tuple[Bug, ...] = _collect()
