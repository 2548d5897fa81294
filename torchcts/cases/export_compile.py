"""The `torch.compile(...)` call an exported script makes for a case found under a compile backend.

The case's backend and its settings (shape mode, mode, options, fullgraph) become literals: `load_case` checked
their spelling (a backend name, or `module.path:callable` whose module is a plain module name) and that every
option value is a JSON scalar, so nothing from the file reaches the script as code. A `module:callable` backend
is imported by the script (`importlib.import_module` of the literal module name), as a `backend_import` is.
"""

from __future__ import annotations

import math
from typing import Any

from torchcts.cases.export_values import float_literal

_DYNAMIC = {"static": "False", "dynamic": "True", "automatic": "None"}


def compile_call(case: Any, subject: str) -> tuple[str, set[str]]:
    """(`torch.compile(subject, backend=..., dynamic=..., ...)`, the attribute names the expression uses)."""
    settings = case.compile or {}
    attributes: set[str] = set()
    if ":" in case.backend:
        module, _, path = case.backend.partition(":")
        parts = path.split(".")
        attributes.update(parts)
        backend = f"importlib.import_module({ascii(module)})" + "".join(f".{part}" for part in parts)
    else:
        backend = ascii(case.backend)
    arguments = [subject, f"backend={backend}", f"dynamic={_DYNAMIC[case.shape_mode]}"]
    if settings.get("mode") is not None:
        arguments.append(f"mode={ascii(settings['mode'])}")
    if settings.get("options"):
        items = ", ".join(f"{ascii(key)}: {_scalar(value)}" for key, value in sorted(settings["options"].items()))
        arguments.append(f"options={{{items}}}")
    if settings.get("fullgraph"):
        arguments.append("fullgraph=True")
    return f"torch.compile({', '.join(arguments)})", attributes


def _scalar(value: Any) -> str:
    """A JSON scalar as a Python literal (`settings_problem` admitted nothing else)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return float_literal(value) if not math.isnan(value) else "float('nan')"
    return ascii(str(value))
