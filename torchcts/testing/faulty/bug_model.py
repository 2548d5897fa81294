"""A seeded bug of the faulty device: the aten overloads it affects, when it fires, what it does."""

from __future__ import annotations

from typing import Any, Callable

import attrs

# Steps of the device that are no aten overload, named where a bug's `ops` names overloads: the device's torch.save
# (`bugs.after` sees the CPU data about to be written, and what it returns is written) ...
SAVE_STEP = "faulty.save"
# ... and its autocast kernels (`bugs.after` sees (op, class) and the dtype the policy chose; None: no cast)
AUTOCAST_STEP = "faulty.autocast"


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


def argument(func: Any, args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
    """The value of argument `name` of a call of aten overload `func`, positional or keyword, else `default`
    (a generated call passes later arguments by keyword once it leaves one at its default)."""
    for position, arg in enumerate(func._schema.arguments):
        if arg.name == name:
            if name in kwargs:
                return kwargs[name]
            return args[position] if position < len(args) else default
    return default
