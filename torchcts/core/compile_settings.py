"""Compile settings as data: the shape modes, a backend's spelling, and the checks of a settings object.

A manifest's `compile`, a stored case's and a record's compile settings are read with `settings_problem`
(types and sizes only; whether the backend exists needs torch: `engine.compile_target.check_backend`).
No torch: the manifest, the case reader and the report path import this.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

SHAPE_MODES = ("static", "dynamic", "automatic")
AUTOMATIC = "automatic"
# A backend's spelling: a registered name, or module.path:callable (never code: it is imported by name only).
BACKEND_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}")
BACKEND_CALLABLE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*){0,15}:[A-Za-z_]\w*(\.[A-Za-z_]\w*){0,7}")
# Option values a manifest or a case may carry: JSON scalars (a stored case is untrusted; nothing richer).
OPTION_VALUE_TYPES = (bool, int, float, str, type(None))
MAX_OPTIONS = 64


def backend_spelling_problem(name: object) -> str | None:
    """Why `name` cannot name a compile backend (None when it can); no import, no torch."""
    if not isinstance(name, str) or not name:
        return "a backend name (e.g. inductor, aot_eager, openvino) or module:callable"
    if BACKEND_NAME.fullmatch(name):
        return None
    if BACKEND_CALLABLE.fullmatch(name) and not any(part.startswith("__") for part in re.split(r"[.:]", name)):
        return None
    return "a backend name (letters, digits, _ . -) or module.path:callable (no part starting with __)"


def normalized_options(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), v) for k, v in options.items()))


def settings_problem(data: object, backend_required: bool = False) -> str | None:
    """Why a compile-settings object (a manifest's `compile`, a case's or a record's) is malformed, or None.

    Checks types and sizes only; whether the backend exists is `check_backend`'s question (it needs torch)."""
    if not isinstance(data, Mapping):
        return "compile settings must be an object"
    unknown = sorted(set(map(str, data)) - {"backend", "shape_mode", "mode", "options", "fullgraph"})
    if unknown:
        return f"unknown compile setting {unknown[0][:40]!r}; allowed: backend, shape_mode, mode, options, fullgraph"
    backend = data.get("backend")
    if backend is not None or backend_required:
        problem = backend_spelling_problem(backend)
        if problem is not None:
            return f"backend: {problem}"
    if data.get("shape_mode") is not None and data.get("shape_mode") not in SHAPE_MODES:
        return f"shape_mode: one of {', '.join(SHAPE_MODES)}"
    mode = data.get("mode")
    if mode is not None and (not isinstance(mode, str) or not BACKEND_NAME.fullmatch(mode)):
        return "mode: None or a torch.compile mode name such as 'default', 'reduce-overhead', 'max-autotune'"
    options = data.get("options")
    if options is not None:
        if not isinstance(options, Mapping) or len(options) > MAX_OPTIONS:
            return f"options: an object of at most {MAX_OPTIONS} settings"
        for key, value in options.items():
            if not isinstance(key, str) or not BACKEND_NAME.fullmatch(key):
                return "options: keys are option names (letters, digits, _ . -)"
            if not isinstance(value, OPTION_VALUE_TYPES) or (isinstance(value, str) and len(value) > 256):
                return f"options[{key!r}]: a bool, number, string (at most 256 characters) or None"
    if data.get("fullgraph") is not None and not isinstance(data.get("fullgraph"), bool):
        return "fullgraph: True or False"
    if mode is not None and options:
        return "mode and options: torch.compile takes one or the other, not both"
    return None
