"""The one place the engine's settings (`engine.run.EngineSettings`) are built, for every front end.

A conformance run (the plugin), a fuzz hunt, a kernel probe and the spawned workers' codec all get their
settings from `engine_settings`: what derives from the target, the manifest and the draw (the replay
command stored with a case, the deadline, tracebacks, the found-by fields) is derived here once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import replay_flags
from torchcts.engine.blame import DEFAULT_BLAME_CASES
from torchcts.engine.run import EngineSettings, versions
from torchcts.engine.targets import Target
from torchcts.run_setup.device import worker_device_setup

TRACE_ENV = "TORCHCTS_TRACE_DEVICE_OPS"  # "1": records name the aten overloads the faulty device ran (selftest)


def engine_settings(target: Target, manifest: Any, *, max_examples: int, level: int | None = None,
                    draw: Any = None, run_seed: int | None = None, shrink: bool = True,
                    corpus_dir: Path | None = None, isolation: Any = None, run_id: str | None = None,
                    hardware_key: str | None = None, targeting: bool = False, blame_cases: int | None = None,
                    trace_dispatch: bool = False, show_traceback: bool | None = None,
                    case_limits: CaseLimits = CaseLimits(), replay_shape_mode: str | None = None) -> EngineSettings:
    """The engine's settings for `target` and `manifest` (None: a replay without one).

    `level` defaults to the manifest's semantic level; `draw` (`hypothesis_profile.DrawSettings`) gives the
    deadline; `run_id` (a run that records) fills the stored cases' found-by fields; `blame_cases` None is the
    engine's default budget, below 0 none; `show_traceback` None follows the manifest. The faulty device traces
    its aten overloads when TORCHCTS_TRACE_DEVICE_OPS=1 (`torchcts selftest` sets it)."""
    found = {} if run_id is None else {"run_seed": run_seed, "derandomize": run_seed is None, "run_id": run_id,
                                       "hardware_key": hardware_key}
    source = manifest.source if manifest is not None else None
    return EngineSettings(
        target=target, manifest=manifest, level=level if level is not None else manifest.semantic_level,
        max_examples=max_examples, run_seed=run_seed, versions=versions(),
        deadline_ms=draw.deadline_ms if draw is not None else None, shrink=shrink, corpus_dir=corpus_dir,
        found=found, replay_flags=replay_flags(target.device, target.compile_backend, source), targeting=targeting,
        isolation=isolation, trace_device_ops=os.environ.get(TRACE_ENV) == "1" and target.device_type == "faulty",
        trace_dispatch=trace_dispatch,
        show_traceback=bool(manifest is not None and manifest.show_traceback) if show_traceback is None
        else show_traceback,
        case_limits=case_limits, draw=draw, replay_shape_mode=replay_shape_mode,
        blame_cases=DEFAULT_BLAME_CASES if blame_cases is None else max(0, blame_cases),
        device_setup=worker_device_setup(target.device))
