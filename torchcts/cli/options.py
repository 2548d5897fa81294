"""Shared click parameters: the file and folder types every command checks at parse time, and the options
several commands repeat (--manifest, --device, the output folders).

Nothing here imports torch: `torchcts --help` and `torchcts report` start without it.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

import click

from torchcts.core.compile_settings import SHAPE_MODES, backend_spelling_problem

EXIT_BAD_INPUT = 2


def fail(message: str) -> NoReturn:
    """Print a one-line error naming the file, key or option, and exit 2 (bad input)."""
    click.echo(message, err=True)
    sys.exit(EXIT_BAD_INPUT)


class _CheckedPath(click.Path):
    """A path checked beyond click's own rules by `problem(path)`, which returns why it cannot be used, or None."""

    def problem(self, path: Path) -> str | None:
        raise NotImplementedError

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        path = value if value == "" else super().convert(value, param, ctx)
        problem = self.problem(path)
        if problem is not None:
            self.fail(problem, param, ctx)
        return path


class InputFile(_CheckedPath):
    """A file the command reads: when it exists, a regular file (reading a FIFO or /dev/zero never ends)."""

    def __init__(self, exists: bool = False) -> None:
        super().__init__(exists=exists, dir_okay=False, path_type=Path)

    def problem(self, path: Path) -> str | None:
        from torchcts.arguments import input_file_problem

        return input_file_problem(path)


class OutputFolder(_CheckedPath):
    """A folder the command writes into: creatable and writable, checked (and left as found) at parse time,
    so a run does not fail hours in when it first writes there."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def problem(self, path: Path) -> str | None:
        from torchcts.arguments import output_folder_problem

        return output_folder_problem(path)


class OutputFile(_CheckedPath):
    """A file the command writes (beside it, then renamed over it): its folder creatable and writable."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def problem(self, path: Path) -> str | None:
        from torchcts.arguments import output_file_problem

        return output_file_problem(path, replaced=True)


class LazyChoice(click.Choice):
    """A Choice whose names are read only when a value is checked or help is shown, from a module that may
    import torch (`torchcts.manifest` does): importing the CLI stays cheap. `complete`: the names shell
    completion offers without loading them (`torchcts.cli.completion`)."""

    def __init__(self, load: Callable[[], Sequence[str]], complete: Sequence[str] | None = None) -> None:
        self._load = load
        self._names: tuple[str, ...] | None = None
        self._complete = complete
        super().__init__(())

    def shell_complete(self, ctx, param, incomplete):  # noqa: ANN001, ANN201 - click's signature
        if self._complete is None:
            return super().shell_complete(ctx, param, incomplete)
        from click.shell_completion import CompletionItem

        return [CompletionItem(name) for name in self._complete if name.startswith(incomplete)]

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        if self._names is None:
            self._names = tuple(self._load())
        return self._names

    @choices.setter
    def choices(self, _: Sequence[str]) -> None:  # click's __init__ sets it; the names come from `load`
        pass


def _device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--device: a name, not an empty string (an unset shell variable must not mean `cpu`)."""
    if value is not None and not value.strip():
        raise click.BadParameter("empty; name a device: cpu, cuda, cuda:1, meta, or a backend's name", ctx, param)
    return value


def device_option(help: str, required: bool = False) -> Callable:
    """--device D: the device a command tests (or would test, or replays on)."""
    return click.option("--device", required=required, callback=_device, help=help)


MANIFEST_HELP = "Backend manifest: a Python file defining a dict `manifest`."
MANIFEST_DEFAULT = "./manifest.py, else the manifest TorchCTS ships for --device [--compile]"


def manifest_option(default: Path | None = None, help: str = MANIFEST_HELP, resolved: bool = True) -> Callable:
    """--manifest PATH, read as an input file (never a FIFO or a device); None when not given
    (`resolved_manifest` picks ./manifest.py or a shipped target's; a command that does not resolve it
    says its own default in `help`)."""
    show_default = (MANIFEST_DEFAULT if default is None else True) if resolved else False
    return click.option("--manifest", "manifest_path", type=InputFile(), default=default,
                        show_default=show_default, help=help)


def resolved_manifest(given: Path | None, device: str | None, compile_backend: str | None = None,
                      required: bool = True) -> Path | None:
    """--manifest, else ./manifest.py, else the shipped target manifest of --device [--compile], saying so on
    stderr (`torchcts.manifest.targets`); none of them: exit 2 listing the shipped targets (None if not
    `required`)."""
    from torchcts.manifest.targets import NoShippedTarget, resolve_manifest, used_line

    try:
        path, target = resolve_manifest(given, device, compile_backend, required=required)
    except NoShippedTarget as exc:
        fail(str(exc))
    if target is not None:
        click.echo(used_line(target), err=True)
    return path


class CompileBackendName(click.ParamType):
    """A torch.compile backend as typed: a name or module.path:callable. Whether torch._dynamo knows it is checked
    when the run starts, after the manifest's backend_import registered what it registers."""

    name = "BACKEND"

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        problem = backend_spelling_problem(value)
        if problem is not None:
            self.fail(f"{value!r} is not {problem}", param, ctx)
        return value


def compile_option(help: str, runs: bool = True) -> Callable:
    """--compile B: run every op through torch.compile(backend=B) on the device (`runs` False: the option only
    picks a shipped target manifest, as in check-manifest and show-skips)."""
    if runs:
        help += (" B: any backend torch._dynamo knows once the manifest's backend_import ran (inductor, aot_eager, "
                 "eager, openvino, ...), or module.path:callable. Default: the manifest's compile.backend.")
    return click.option("--compile", "compile_backend", type=CompileBackendName(), help=help)


def shape_mode_option(help: str = "With a compile target: static (dynamic=False: every shape compiled on its own), "
                                  "dynamic (dynamic=True from the first case) or automatic (torch's default: dynamic "
                                  "after a size changes). Default: the manifest's compile.dynamic, else automatic.") \
        -> Callable:
    """--shape-mode M: the compile target's shape mode (docs/compile.md)."""
    return click.option("--shape-mode", type=click.Choice(SHAPE_MODES), help=help)


def output_folder_option(flag: str, help: str, default: Path | None = None,
                         dest: str | None = None, show_default: bool | str = True) -> Callable:
    """An output folder (--results-dir, --corpus-dir, --output): creatable and writable, checked at parse time.

    One factory for every command's output folders, so each is checked the same way and an empty
    value (an unset shell variable) is refused rather than read as the current folder."""
    names = (flag,) if dest is None else (flag, dest)
    shown = show_default if default is not None or isinstance(show_default, str) else False
    return click.option(*names, type=OutputFolder(), default=default, show_default=shown, help=help)


def results_dir_option(help: str, default: Path = Path("results")) -> Callable:
    """--results-dir DIR: where a command's run folder goes."""
    return output_folder_option("--results-dir", help, default=default)


CORPUS_DEFAULT = "./corpus; RESULTS_DIR/corpus where ./corpus is TorchCTS's own curated corpus"


def corpus_option(help: str) -> Callable:
    """--corpus-dir DIR: where new counterexamples are written (default: `resolve_corpus`)."""
    return output_folder_option("--corpus-dir", help, dest="corpus_dir", show_default=CORPUS_DEFAULT)


def resolve_corpus(corpus_dir: Path | None, results_dir: Path) -> Path:
    """--corpus-dir as given, or the default folder (`torchcts.cases.corpus_default`), checked like a given one."""
    from torchcts.cases.corpus_default import default_corpus_dir

    return corpus_dir if corpus_dir is not None else checked_output_folder(default_corpus_dir(results_dir),
                                                                           "--corpus-dir")


# flags that were renamed: using one is a one-line error naming what replaced it (exit 2)
REMOVED_FLAGS = {
    "--corpus": "--corpus is gone: --corpus-dir DIR is where new counterexamples go; to replay corpus cases use "
                "`torchcts replay PATH` (under pytest: --replay PATH)",
}
PYTEST_ARGS = "torchcts.pytest_args"  # ctx.meta key: what followed `--`


class Command(click.Command):
    """A TorchCTS command: a removed flag is a one-line error naming its replacement (exit 2). With
    `pytest_args`, what follows `--` is kept for pytest (`ctx.meta[PYTEST_ARGS]`) and only that: an
    unknown option before `--` is click's error with a suggestion, never handed to pytest."""

    def __init__(self, *args: Any, pytest_args: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pytest_args = pytest_args

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own, passed = list(args), []
        if self.pytest_args and "--" in own:
            at = own.index("--")
            own, passed = own[:at], own[at + 1:]
        for arg in own:
            removed = REMOVED_FLAGS.get(arg.split("=", 1)[0])
            if removed is not None:
                fail(removed)
        ctx.meta[PYTEST_ARGS] = tuple(passed)
        return super().parse_args(ctx, own)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return pieces + ["[-- PYTEST_ARGS...]"] if self.pytest_args else pieces


def checked_output_folder(path: Path, flag: str) -> Path:
    """A folder chosen after parsing (a computed default): the same check an OutputFolder option makes."""
    from torchcts.arguments import output_folder_problem

    problem = output_folder_problem(path)
    if problem is not None:
        raise click.BadParameter(problem, param_hint=flag)
    return path


def apply(*decorators: Callable) -> Callable[[Any], Any]:
    """Several click decorators as one, applied in the order listed (the first is outermost, as if stacked)."""
    def decorate(function: Any) -> Any:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function
    return decorate


class WorkerCount(click.ParamType):
    """-n: `auto`, `logical` (pytest-xdist's words) or a worker count from 0 (no workers) to 256; pytest-xdist
    must be installed."""

    name = "workers"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        if text not in ("auto", "logical") and not (text.isascii() and text.isdigit() and int(text) <= 256):
            self.fail(f"{value!r}: a worker count from 0 to 256, auto or logical", param, ctx)
        import importlib.util

        if text != "0" and importlib.util.find_spec("xdist") is None:
            self.fail("needs pytest-xdist, which this Python environment lacks: pip install 'torchcts[xdist]'",
                      param, ctx)
        return text
