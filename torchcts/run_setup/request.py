"""What a front end asks of a run: every option as typed, before anything is checked or loaded.

The fields are the run's command-line options (`torchcts run`, or pytest with the plugin: `--device`
is `device`, `--known-crashes` is `known_crashes`), Hypothesis's own pytest options that TorchCTS honours,
and how the run is distributed. Defaults are the options' defaults, so a front end names only what it
sets. Values are kept as given (lists stay lists): run.json records some of them as typed.
"""

from __future__ import annotations

from typing import Any

import attrs

SINGLE, CONTROLLER, WORKER = "single", "controller", "worker"  # a pytest-xdist run's roles (`plugin.distributed`)


@attrs.frozen
class RunRequest:
    """A run's options, unchecked (`checks.checked_options` and `start.start_run` check them)."""

    device: str | None = None
    validation: bool = False
    manifest: str | None = None
    compile: str | None = None
    shape_mode: str | None = None
    blame_cases: int | None = None
    level: int | None = None
    dtypes: list[str] | None = None
    ops: list[str] | None = None
    shard: str | None = None
    properties: list[str] | None = None
    capabilities: list[str] | None = None
    last_failed_from: str | None = None
    derandomize: bool | None = None
    seed: int | None = None
    max_examples: int | None = None
    no_shrink: bool = False
    trace_dispatch: bool = False
    replay: list[str] | None = None
    max_case_bytes: int | None = None
    corpus_dir: str | None = None
    subprocess_per_test: bool = False
    isolation_start: str | None = "auto"
    known_segfault_policy: str = "isolate"
    known_crashes: str | None = None
    known_segfault_audit: bool = False
    adaptive_isolation: str = "auto"
    item_timeout: float | None = None
    results_dir: str = "results"
    # Hypothesis's pytest options, as given (absent when its plugin is disabled)
    hypothesis_seed: Any = None  # `--hypothesis-seed N`: acts like --seed N (`seeds.hypothesis_seed`)
    hypothesis_profile: str | None = None
    hypothesis_verbosity: Any = None
    hypothesis_show_statistics: bool = False
    # how the run is held
    collect_only: bool = False  # pytest --collect-only: run.json's run_kind
    role: str = SINGLE
    joined: tuple[str, int | None] | None = None  # a worker's (run id, run seed), from its controller
    workers: int = 1  # a controller's pytest-xdist workers

    @property
    def run_kind(self) -> str:
        """run.json's `run_kind`: "replay" (--replay), "collect_only" (pytest --collect-only) or "run"."""
        if self.replay:
            return "replay"
        return "collect_only" if self.collect_only else "run"
