"""`torchcts run`: the property suites through pytest with the TorchCTS plugin, in this process."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest


@attrs.frozen
class RunOptions:
    device: str | None
    manifest: Path | None
    level: int | None = None
    dtypes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    derandomize: bool | None = None
    seed: int | None = None
    max_examples: int | None = None
    results_dir: Path = Path("results")
    validation: bool = False
    compile_backend: str | None = None
    corpus: tuple[str, ...] = ()  # replay these cases instead of drawing
    corpus_dir: Path | None = None  # where failing items' counterexamples go
    isolation_args: tuple[str, ...] = ()  # --subprocess-per-test, --known-segfault-policy, ... as given
    pytest_args: tuple[str, ...] = ()


def pytest_arguments(options: RunOptions) -> list[str]:
    """The pytest command line for a run (what `python -m pytest` would need)."""
    args = ["--pyargs", "torchcts.properties", "-p", "no:cacheprovider", "-q", "--results-dir", str(options.results_dir)]
    if options.manifest is not None:
        args += ["--manifest", str(options.manifest)]
    for path in options.corpus:
        args += ["--corpus", str(path)]
    if options.corpus_dir is not None:
        args += ["--corpus-dir", str(options.corpus_dir)]
    if options.device:
        args += ["--device", options.device]
    if options.validation:
        args.append("--validation")
    if options.compile_backend:
        args += ["--compile", options.compile_backend]
    if options.level is not None:
        args += ["--level", str(options.level)]
    for flag, values in (("--dtype", options.dtypes), ("--ops", options.ops), ("--property", options.properties)):
        for value in values:
            args += [flag, value]
    if options.derandomize:
        args.append("--derandomize")
    if options.seed is not None:
        args += ["--seed", str(options.seed)]
    if options.max_examples is not None:
        args += ["--max-examples", str(options.max_examples)]
    return args + list(options.isolation_args) + list(options.pytest_args)


def run_suites(options: RunOptions) -> int:
    """Run the suites; 0 when nothing failed, 1 when an item failed or errored, 2 for bad input."""
    code = pytest.main(pytest_arguments(options))
    if code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return 0
    if code == pytest.ExitCode.TESTS_FAILED:
        return 1
    if code == pytest.ExitCode.INTERRUPTED:
        return 130
    return 2


def latest_run(results_dir: Path) -> Path | None:
    folders = sorted(p for p in Path(results_dir).glob("*/run.json"))
    return folders[-1].parent if folders else None


