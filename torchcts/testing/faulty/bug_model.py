"""A seeded bug of the faulty device: the aten overloads it affects, when it fires, what it does."""

from __future__ import annotations

from typing import Any, Callable

import attrs


@attrs.frozen
class Bug:
    """One seeded bug: the aten overloads it affects, when it fires, what it does."""

    name: str
    ops: tuple[str, ...]  # overloads as str(func) prints them: "aten.add.Tensor"
    condition: str
    description: str
    fires: Callable[[Any, tuple, dict], bool] = attrs.field(repr=False)
    perturb: Callable[[Any, tuple, dict, Any], Any] = attrs.field(repr=False)
    # or "crash" / "hang" / "missing-kernel" / "wrong-error" (raises another exception than CPU's): act before the op runs
    kind: str = "wrong-result"
    suite: str = "opinfo"  # the suite written to catch it: "opinfo" (the OpInfo properties) or a suite module's name

    @property
    def in_all(self) -> bool:
        return self.kind in ("wrong-result", "missing-kernel", "wrong-error")
