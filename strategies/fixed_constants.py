"""Hypothesis's pool of "local constants", fixed empty: draws do not depend on what is imported.

Hypothesis (6.131 on) sometimes draws an integer, float or string from constants it finds in the
source of every non-library module in `sys.modules` ("local" code: TorchCTS itself when
installed editable, a backend's own package, whatever the front end imported). Which modules
are loaded when an item is drawn differs between `torchcts run`, plain pytest, a fuzz worker and
the items run before it, so the same derandomized item drew different cases (found with
`layout::mul::function::float32`). `fix_local_constants()` makes the pool empty for the process:
draws then depend only on the seed and the versions (Hypothesis's own constants stay). It is
called when `torchcts.strategies` is imported, before any of its strategies draws; it affects
every Hypothesis test in the process, which loses only that heuristic.
"""

from __future__ import annotations

from typing import Any

_EMPTY: Any = None


def fix_local_constants() -> bool:
    """Make Hypothesis's local-constant pool empty from now on; False if this Hypothesis has none."""
    global _EMPTY
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the providers module
        return False
    if not hasattr(providers, "_get_local_constants") or not hasattr(providers, "Constants"):
        return False  # pragma: no cover - a Hypothesis without local constants: nothing varies
    if _EMPTY is None:
        _EMPTY = providers.Constants()
    providers._get_local_constants = _no_local_constants
    providers.CONSTANTS_CACHE.cache.clear()  # pools filtered before now may hold local constants
    return True


def _no_local_constants() -> Any:
    return _EMPTY
