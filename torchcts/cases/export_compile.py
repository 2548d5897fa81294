"""The `torch.compile(...)` call an exported script makes for a case found under a compile backend.

The case's backend, shape mode and `fullgraph` become literals: `load_case` checked their spelling (a backend
name, or `module.path:callable` whose module is a plain module name), so nothing from the file reaches the script
as code. A `module:callable` backend is imported by the script (`importlib.import_module` of the literal module
name), as a `backend_import` is. The case's `mode` and `options` are left out: the file is untrusted, and a
backend option can name a program the compiler runs (inductor's `cpp.cxx`); the script's docstring does not
repeat them either. Add them by hand where the case needs them (`replay` does not apply them either).
"""

from __future__ import annotations

from typing import Any

_DYNAMIC = {"static": "False", "dynamic": "True", "automatic": "None"}


def compile_call(case: Any, subject: str) -> tuple[str, set[str]]:
    """(`torch.compile(subject, backend=..., dynamic=..., ...)`, the attribute names the expression uses)."""
    attributes: set[str] = set()
    if ":" in case.backend:
        module, _, path = case.backend.partition(":")
        parts = path.split(".")
        attributes.update(parts)
        backend = f"importlib.import_module({ascii(module)})" + "".join(f".{part}" for part in parts)
    else:
        backend = ascii(case.backend)
    arguments = [subject, f"backend={backend}", f"dynamic={_DYNAMIC[case.shape_mode]}"]
    if case.fullgraph:
        arguments.append("fullgraph=True")
    return f"torch.compile({', '.join(arguments)})", attributes

