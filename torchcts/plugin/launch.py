"""`torchcts run`: the property suites through pytest with the TorchCTS plugin, in this process, with the
quiet console (`plugin.console`) and the report written into the run folder at the end."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from torchcts import interrupts
from torchcts.arguments import output_file_problem
from torchcts.plugin.console import install_quiet_reporter


@attrs.frozen
class RunOptions:
    device: str | None
    manifest: Path | None
    level: int | None = None
    dtypes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    shard: str | None = None  # "K/N": only shard K of N (`torchcts.core.shards`)
    capabilities: tuple[str, ...] = ()  # only the properties that test these capabilities
    last_failed_from: Path | None = None  # rerun only the items that failed in this earlier run folder
    workers: str | None = None  # pytest-xdist's -n: a count, "auto" or "logical" (`plugin.distributed`)
    derandomize: bool | None = None
    seed: int | None = None
    max_examples: int | None = None
    results_dir: Path = Path("results")
    validation: bool = False
    compile_backend: str | None = None
    shape_mode: str | None = None  # static, dynamic or automatic (None: the manifest's, or each replayed case's)
    blame_cases: int | None = None  # compiled failures blamed on a leg per run (None: engine.blame's default)
    replay: tuple[str, ...] = ()  # replay these cases instead of drawing
    corpus_dir: Path | None = None  # where failing items' counterexamples go
    report: bool = False  # write the report into the run folder at the end (`torchcts run` unless --no-report)
    no_shrink: bool = False
    isolation_args: tuple[str, ...] = ()  # --subprocess-per-test, --known-segfault-policy, ... as given
    hypothesis_args: tuple[str, ...] = ()  # --hypothesis-profile, --hypothesis-seed, ... (Hypothesis's pytest options)
    pytest_args: tuple[str, ...] = ()


def pytest_arguments(options: RunOptions) -> list[str]:
    """The pytest command line for a run (what `python -m pytest` would need). The plugin adds the
    manifest's `custom_test_dirs` to what pytest collects."""
    args = ["--pyargs", "torchcts.properties", "-p", "no:cacheprovider", "--results-dir", str(options.results_dir)]
    if options.manifest is not None:
        args += ["--manifest", str(options.manifest)]
    for path in options.replay:
        args += ["--replay", str(path)]
    if options.corpus_dir is not None:
        args += ["--corpus-dir", str(options.corpus_dir)]
    if options.device:
        args += ["--device", options.device]
    if options.validation:
        args.append("--validation")
    if options.compile_backend:
        args += ["--compile", options.compile_backend]
    if options.shape_mode:
        args += ["--shape-mode", options.shape_mode]
    if options.blame_cases is not None:
        args += ["--blame-cases", str(options.blame_cases)]
    if options.level is not None:
        args += ["--level", str(options.level)]
    for flag, values in (("--dtype", options.dtypes), ("--ops", options.ops), ("--property", options.properties),
                         ("--capability", options.capabilities)):
        for value in values:
            args += [flag, value]
    if options.last_failed_from is not None:
        args += ["--last-failed-from", str(options.last_failed_from)]
    if options.shard is not None:
        args += ["--shard", options.shard]
    if options.workers is not None:  # worksteal: items of very different lengths keep every worker busy
        args += ["-n", options.workers] + (["--dist", "worksteal"] if options.workers != "0" else [])
    if options.derandomize:
        args.append("--derandomize")
    if options.seed is not None:
        args += ["--seed", str(options.seed)]
    if options.max_examples is not None:
        args += ["--max-examples", str(options.max_examples)]
    if options.no_shrink:
        args.append("--no-shrink")
    return args + list(options.isolation_args) + list(options.hypothesis_args) + list(options.pytest_args)


EXIT_NOTHING_RAN = 3


def run_suites(options: RunOptions) -> int:
    """Run the suites; 0 when nothing failed, 1 when an item failed or errored, 2 for bad input, 3 when
    the selection executed no item (the console said why), 128 + the signal's number when Ctrl-C,
    SIGTERM or SIGHUP stopped the run (130, 143, 129)."""
    with interrupts.handling():
        try:
            code = pytest.main(pytest_arguments(options), plugins=[PytestArgumentErrors(), RunCommand(options.report)])
        except KeyboardInterrupt:  # a second signal while pytest was cleaning up after the first
            code = pytest.ExitCode.INTERRUPTED
        signum = interrupts.requested()
    if signum is not None:  # even if the interruption was swallowed and pytest ran to the end
        return interrupts.exit_code(signum)
    if code == pytest.ExitCode.OK:
        return 0
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:  # the session said why (or pytest collected nothing at all)
        return EXIT_NOTHING_RAN
    if code == pytest.ExitCode.TESTS_FAILED:
        return 1
    if code == pytest.ExitCode.INTERRUPTED:
        return 130
    return 2


class RunCommand:
    """What `torchcts run` (and `torchcts replay`) add to their pytest session: the quiet console in place
    of pytest's terminal output, and (`report`) the report written into the run folder at the end."""

    def __init__(self, report: bool):
        self.report = report

    @pytest.hookimpl(trylast=True)  # after pytest's terminal reporter and the TorchCTS run session are made
    def pytest_configure(self, config: pytest.Config) -> None:
        from torchcts.plugin import SESSION_KEY

        session = config.stash.get(SESSION_KEY, None)
        if session is None:
            return
        session.write_report = self.report
        screen = install_quiet_reporter(config, session.header)
        if screen is not None:
            session.console.screen = screen
            session.console.findings = session.replaying is None  # a replay prints a verdict per case instead
            session.console.progress = config.option.verbose == 0  # -v: pytest's line per item; -q: none


class PytestArgumentErrors:
    """`torchcts run`'s pytest arguments (after `--`): a bad one is one line, never pytest's usage or a traceback."""

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_parse(self, pluginmanager: pytest.PytestPluginManager, args: list[str]):
        try:
            config = yield
        except pytest.UsageError as exc:
            raise pytest.UsageError(f"pytest arguments after --: {one_line_usage_error(str(exc))}") from None
        self.check_output_files(config)
        return config

    @staticmethod
    def check_output_files(config: pytest.Config) -> None:
        """Files pytest writes (the JUnit XML, the log file) go where they can be written, checked once the
        arguments are parsed: before any plugin's pytest_configure starts the run."""
        for flag, name in (("--junitxml", "xmlpath"), ("--log-file", "log_file")):
            path = getattr(config.option, name, None)  # absent when `-p no:junitxml` / `-p no:logging`
            problem = output_file_problem(path) if path else None
            if problem is not None:
                raise pytest.UsageError(f"pytest arguments after --: {flag} {path}: {problem}")


def one_line_usage_error(text: str) -> str:
    """The substance of a pytest usage error on one line: argparse's `prog: error: ...` without the usage
    synopsis and ini/rootdir notes, or the first and last lines of a message that carries a traceback."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if ": error: " in line:
            return line.split(": error: ", 1)[1]
    if len(lines) > 1:
        return f"{lines[0]} {lines[-1]}"
    return lines[0] if lines else text


def run_folders(results_dir: Path) -> set[Path]:
    """Every folder of `results_dir` holding a run.json (whatever its name: folders travel between teams)."""
    return {p.parent for p in Path(results_dir).glob("*/run.json")}


def latest_run(results_dir: Path, before: set[Path] | None = None) -> Path | None:
    """The run folder a command just wrote: the newest of those not in `before` (by run id)."""
    folders = sorted(run_folders(results_dir) - (before or set()))
    return folders[-1] if folders else None


