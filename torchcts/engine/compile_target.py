"""The compile target: which `torch.compile` backend a run goes through, and how (one definition for every command).

A `CompileSpec` names the backend (any name `torch._dynamo` knows once the manifest's `backend_import` ran: the
registered backends and the `torch_dynamo_backends` entry point; or `module:callable` for one that is not registered)
and the settings `torch.compile` takes: `mode`, `options`, `fullgraph`, and the shape mode:

- `static`: `dynamic=False`. Every new shape is a recompile specialised to it; dynamo never turns a failure into a
  dynamic-shape one because of what ran before, so a stored case fails (or passes) the same way alone.
- `dynamic`: `dynamic=True`. Sizes are symbolic from the first call.
- `automatic`: `dynamic=None`, torch's default: static until a size changes, then dynamic (the history of shapes
  decides, so a failure may need it; records and cases say so).

The CLI, the pytest plugin, the engine, fuzz, replay, export and path-shapes all take a `CompileSpec`; nothing else
calls `torch.compile` for a target.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

import attrs

from torchcts.core.compile_settings import (AUTOMATIC, SHAPE_MODES, backend_spelling_problem, normalized_options,
                                           settings_problem)

_DYNAMIC_ARGUMENT = {"static": False, "dynamic": True, "automatic": None}
_SHAPES_SAID = {"static": "static shapes", "dynamic": "dynamic shapes", "automatic": "automatic shapes"}


class UnknownCompileBackend(Exception):
    """A backend name torch._dynamo does not know, or a `module:callable` that cannot be imported (one line)."""


@attrs.frozen
class CompileSpec:
    """How a target is compiled: the backend and the settings `torch.compile` is called with."""

    backend: str
    shape_mode: str = AUTOMATIC
    mode: str | None = None
    options: tuple[tuple[str, Any], ...] = ()  # sorted (key, JSON scalar) pairs
    fullgraph: bool = False

    def __attrs_post_init__(self) -> None:
        if self.shape_mode not in SHAPE_MODES:
            raise ValueError(f"shape mode {self.shape_mode!r}; allowed: {', '.join(SHAPE_MODES)}")

    @property
    def dynamic(self) -> bool | None:
        """torch.compile's `dynamic` argument for the shape mode."""
        return _DYNAMIC_ARGUMENT[self.shape_mode]

    def evolve(self, **changes: Any) -> "CompileSpec":
        return attrs.evolve(self, **changes)

    def describe(self) -> str:
        """E.g. `torch.compile(openvino, static shapes)`; settings left at their defaults are not named."""
        parts = [self.backend, _SHAPES_SAID[self.shape_mode]]
        if self.mode is not None:
            parts.append(f"mode={self.mode}")
        if self.fullgraph:
            parts.append("fullgraph")
        if self.options:
            parts.append("options=" + ", ".join(f"{k}={v!r}" for k, v in self.options))
        return f"torch.compile({', '.join(parts)})"

    def as_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "shape_mode": self.shape_mode, "mode": self.mode,
                "options": dict(self.options), "fullgraph": self.fullgraph}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CompileSpec":
        """From `as_json` (a record, a case, a spawned worker's message): ValueError on anything else."""
        problem = settings_problem(data, backend_required=True)
        if problem is not None:
            raise ValueError(problem)
        return cls(data["backend"], shape_mode=data.get("shape_mode") or AUTOMATIC, mode=data.get("mode"),
                   options=normalized_options(data.get("options") or {}), fullgraph=bool(data.get("fullgraph")))

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` under torch.compile with these settings (the backend is looked up now)."""
        import torch

        raise_recompile_limits()
        kwargs: dict[str, Any] = {"backend": resolve_backend(self.backend), "dynamic": self.dynamic,
                                  "fullgraph": self.fullgraph}
        if self.mode is not None:
            kwargs["mode"] = self.mode
        if self.options:
            kwargs["options"] = dict(self.options)
        return torch.compile(fn, **kwargs)


def check_settings(spec: CompileSpec) -> None:
    """UnknownCompileBackend (one line) when torch.compile refuses the spec's settings (an unknown mode or option
    of inductor, mode with options): said once at the start, not as a backend error on every item."""
    try:
        spec.compile(lambda x: x)  # torch.compile checks its arguments here; nothing is traced or compiled yet
    except UnknownCompileBackend:
        raise
    except Exception as exc:  # noqa: BLE001 - torch's refusal of the settings, in one line
        text = str(exc).splitlines()[0][:240] if str(exc) else ""
        raise UnknownCompileBackend(f"torch.compile refuses the compile settings {spec.describe()}: "
                                    f"{type(exc).__name__}: {text}") from None


def known_backends() -> list[str]:
    """The names torch._dynamo knows here (registered, and the `torch_dynamo_backends` entry point), debug ones too."""
    import torch._dynamo

    return list(torch._dynamo.list_backends(exclude_tags=()))


def resolve_backend(name: str) -> Any:
    """What torch.compile's `backend=` gets: the name itself, or the callable `module:callable` names."""
    if ":" not in name:
        return name
    module_name, _, attribute = name.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix, said in one line
        raise UnknownCompileBackend(f"--compile {name}: cannot import it ({type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0][:160] if str(exc) else ''})") from None
    if not callable(found):
        raise UnknownCompileBackend(f"--compile {name}: {attribute} is not callable (a torch.compile backend is a "
                                    "function of (graph module, example inputs))")
    return found


def check_backend(name: str) -> None:
    """UnknownCompileBackend (one line naming what exists) unless torch.compile can use `name` here."""
    problem = backend_spelling_problem(name)
    if problem is not None:
        raise UnknownCompileBackend(f"--compile {name!r}: not {problem}")
    if ":" in name:
        resolve_backend(name)
        return
    names = known_backends()
    if name not in names:
        raise UnknownCompileBackend(
            f"--compile {name}: torch._dynamo knows no backend of that name (after the manifest's backend_import); "
            f"known: {', '.join(names)}; or name an unregistered one as module:callable")


# Dynamo's limits count cache entries per code object, and every op's compiled function runs the same code
# (`strategies.call_variant`, its own frame after `run`'s graph break): at 256, about 50 ops into a run, every later
# op ran eagerly, silently, and passed. The limit is a whole run's compiles, and reaching it is an error.
_RECOMPILE_LIMIT = 1 << 20
# Compiles an item may spend shrinking a failure once it has found one: each shrink candidate with a new shape (or
# scalar) is a compile, and a real compiler takes 0.1 s (OpenVINO) to seconds (inductor) for one, so Hypothesis's
# own bound (5 minutes of shrinking) made every failing item cost 5 minutes. Past the budget the item reports the
# last case that failed (run again to confirm it), as shrunk as it got. 16: a failing OpenVINO item takes 4-15 s on
# 2 cores (48: 20-65 s), at the price of larger kept cases (abs 400 elements, add 10251, clamp 30720 on OpenVINO
# at level 2; 5 minutes of shrinking took abs to 4).
SHRINK_COMPILE_BUDGET = 16


def compiles_so_far() -> int:
    """Frames dynamo has started compiling in this process (its own counter: torch._dynamo.reset() keeps it)."""
    from torch._dynamo.utils import counters

    return int(counters["frames"]["total"])


def raise_recompile_limits() -> None:
    """Dynamo falls back to eager, silently, past its recompile limits and where errors are suppressed: raise the
    limits far above what a run compiles, make reaching one an error (the case's error), and suppress nothing."""
    import torch._dynamo

    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name) and getattr(torch._dynamo.config, name) < _RECOMPILE_LIMIT:
            setattr(torch._dynamo.config, name, _RECOMPILE_LIMIT)
    if hasattr(torch._dynamo.config, "fail_on_recompile_limit_hit"):
        torch._dynamo.config.fail_on_recompile_limit_hit = True
    # TORCHDYNAMO_SUPPRESS_ERRORS=1 makes a compile failure run the frame eagerly (a pass that tested eager) and
    # cannot be combined with the setting above: a conformance run never suppresses them
    torch._dynamo.config.suppress_errors = False


def run_compile_spec(settings: Any, backend: str | None, shape_mode: str | None) -> CompileSpec | None:
    """The run's compile target: --compile (`backend`) and --shape-mode over the manifest's `compile` section
    (`manifest.model.CompileSettings`, or None). The section's settings apply to its own backend only: --compile
    naming another backend runs that one with torch.compile's defaults. None: the run is eager."""
    own = settings is not None and (backend is None or settings.backend in (None, backend))
    name = backend or (settings.backend if settings is not None else None)
    if name is None:
        return None
    if not own:
        return CompileSpec(name, shape_mode=shape_mode or AUTOMATIC)
    return CompileSpec(name, shape_mode=shape_mode or settings.shape_mode, mode=settings.mode,
                       options=tuple(settings.options), fullgraph=settings.fullgraph)
