"""Replay items: each corpus case file becomes one test item of its property, run without Hypothesis.

The engine runs a `ReplayItem` like a plan item, on its stored cases instead of draws (`replayable`
gives the case and what its check runs on). Every file is read and decoded (within `CaseLimits`)
when the items are made, before any runs: a file that cannot be read, or is over a limit, becomes
an item whose test is an `error` record naming the file and the field, and the other cases still
run. This module imports no front end: the plugin and `torchcts replay` (`cases.replay`) use it.
"""

from __future__ import annotations

import builtins
import shlex
import warnings
from pathlib import Path
from typing import Any, Iterable

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.cases.codec import brief
from torchcts.cases.files import CaseFileError, CorpusCase, case_files, load_case
from torchcts.core.case_limits import CaseLimits
from torchcts.core.outcomes import Outcome, parse
from torchcts.plan import registry
from torchcts.plan.catalog import find_op

# An unreadable file has no property of its own; its item is collected under, and its `error` record names,
# an installed property whose test function is always collected. Result files already carry this value.
UNREADABLE_REPORTED_BY = "forward"


class UnreadableCase(CaseFileError):
    """A case file that cannot be replayed, raised when its item's context is built: the item's
    record is an `error` naming the file, the field and the problem (one line in pytest's output)."""


@attrs.frozen
class ReplayItem:
    """One case file to replay; `problem` is set when the file cannot be read."""

    path: str
    property: str
    op: str
    variant: str
    dtype: str
    level: int
    fingerprint: str = ""
    status: str = ""
    problem: tuple[str, str] | None = None  # (field, what is wrong) when the file cannot be replayed
    crash: bool = False  # the case crashed the process: it is replayed in a forked child

    @property
    def id(self) -> str:
        if self.problem is not None:
            return f"replay::unreadable::{Path(self.path).name}"
        return f"replay::{self.property}::{self.op}::{self.variant}::{self.dtype}::{self.fingerprint[:16]}"

    def as_json(self) -> dict[str, Any]:
        return {"item": self.id, "property": self.property, "op": self.op, "variant": self.variant,
                "dtype": self.dtype, "level": self.level,
                "case": {"path": self.path, "fingerprint": self.fingerprint, "status": self.status,
                         "unreadable": ": ".join(self.problem) if self.problem else None}}


def replay_items(paths: Iterable[Path | str], limits: CaseLimits = CaseLimits()) -> list[ReplayItem]:
    """An item per case file under `paths`; files that cannot be read and decoded within `limits`
    become items that report why. Each case is decoded here once and dropped, one at a time."""
    items = []
    for path in case_files(paths):
        try:
            case = checked_case(path, limits)
            with warnings.catch_warnings():  # nested tensors warn they are a prototype: once, when they run
                warnings.simplefilter("ignore")
                replay_cases(case, limits)
        except CaseFileError as exc:
            items.append(ReplayItem(str(path), UNREADABLE_REPORTED_BY, "", "", "", 0, problem=(exc.field, exc.message)))
            continue
        items.append(ReplayItem(str(path), case.property, case.op, case.variant, case.dtype,
                                _properties()[case.property].level, case.fingerprint, case.status,
                                crash=parse(case.failure.get("outcome")) in (Outcome.CRASHED, Outcome.TIMED_OUT)))
    return items


def _properties() -> dict[str, registry.PropertySpec]:
    """The registered properties by name (the installed suites, and custom ones loaded before)."""
    registry.load()  # the installed suites; not `load`'s answer, which leaves out custom folders it was not given
    return {spec.name: spec for spec in registry.properties()}


def checked_case(path: Path | str, limits: CaseLimits = CaseLimits()) -> CorpusCase:
    """A case file loaded and checked against what this TorchCTS can replay."""
    case = load_case(path, limits)
    known = _properties()
    if case.property not in known:
        raise CaseFileError(path, "property", f"{brief(case.property)}; known: {', '.join(known)}")
    if case.variant != known[case.property].variant:  # it names the item: nothing else may go there
        raise CaseFileError(path, "variant", f"{brief(case.variant)}; {case.property} cases are "
                                             f"{known[case.property].variant!r}")
    if dtype_names.lookup(case.dtype) is None:
        raise CaseFileError(path, "dtype", f"unknown dtype {brief(case.dtype)}")
    spec = known[case.property]
    if spec.scenario:  # a scenario case's op is the scenario's name: no OpInfo
        if case.op not in spec.items.scenarios:
            raise CaseFileError(path, "op", f"{brief(case.op)}; {case.property} scenarios: "
                                            f"{', '.join(spec.items.scenarios)}")
        return case
    try:
        find_op(case.op)
    except (KeyError, LookupError):
        raise CaseFileError(path, "op", f"no OpInfo {brief(case.op)} in this torch ({torch.__version__})") from None
    return case


def replayable(item: ReplayItem, limits: CaseLimits = CaseLimits()) -> tuple[CorpusCase, list[Any]]:
    """(the case, what its check runs on) for an item; `UnreadableCase` when its file cannot be read."""
    if item.problem is not None:
        raise UnreadableCase(item.path, *item.problem)
    try:
        case = checked_case(item.path, limits)
        return case, replay_cases(case, limits)
    except CaseFileError as exc:  # the file changed since the items were made
        raise UnreadableCase(item.path, exc.field, exc.message) from None


def replay_cases(case: CorpusCase, limits: CaseLimits = CaseLimits()) -> list[Any]:
    """What the property's check runs on: a strategies Case, or an OpInfo ErrorInput for a property whose
    cases are OpInfo error inputs (the registry's `draws=False`, like `errors`)."""
    from torch.testing._internal.opinfo.core import ErrorInput

    # hypothesis and the strategies: `checked_case` (export) runs without them
    from torchcts.strategies.samples import Case

    sample = case.sample(limits)
    problem = stored_values_problem(registry.get(case.property), case.op, sample)
    if problem is not None:
        raise CaseFileError(case.path or case.short_id, *problem)
    if holds_error_input(case):
        error_type = getattr(builtins, str(case.inputs.get("error_type", "RuntimeError")), None)
        if not (isinstance(error_type, type) and issubclass(error_type, Exception)):
            raise CaseFileError(case.path or case.short_id, "inputs.error_type",
                                f"{brief(case.inputs.get('error_type'))} is not a built-in exception type")
        return [ErrorInput(sample, error_type=error_type, error_regex=str(case.inputs.get("error_regex", "")))]
    return [Case(case.op, case.variant, dtype_names.lookup(case.dtype), sample, -1,
                 (f"corpus case {case.short_id}",))]


def stored_values_problem(spec: registry.PropertySpec, scenario: str, sample: Any) -> tuple[str, str] | None:
    """(field, what is wrong) when a scenario case's stored values are outside what its suite declares it draws
    (`ScenarioItems.params`), checked before its program runs; None for OpInfo cases and cases within bounds."""
    if not spec.scenario:
        return None
    params = spec.items.case_params(scenario)
    if params is None:  # undeclared: tensors only, which --max-case-bytes bounds; a plain value needs a bound
        values = [("inputs.input", sample.input), *((f"inputs.args[{i}]", v) for i, v in enumerate(sample.args)),
                  *((f"inputs.kwargs.{str(k)[:40]}", v) for k, v in sample.kwargs.items())]
        for field, value in values:
            if not isinstance(value, torch.Tensor):
                return (field, f"a {type(value).__name__}: {spec.name} declares no bounds for what its {scenario!r} "
                               "cases store (ScenarioItems.params), so they may hold tensors only")
        return None
    return params.problem(sample)


def holds_error_input(case: CorpusCase) -> bool:
    """Whether the case's property checks OpInfo error inputs (a fixed list, `draws=False`), not drawn samples."""
    return not registry.get(case.property).draws


def replay_flags(device: str, compile_backend: str | None, manifest: Path | str | None) -> str:
    """The options of the `torchcts replay` command printed for a stored case: the run's device, compile
    backend and manifest (which registers custom properties), each quoted for a shell."""
    flags = ["--device", device] + (["--compile", compile_backend] if compile_backend else [])
    flags += ["--manifest", str(manifest)] if manifest is not None else []
    return " ".join(shlex.quote(flag) for flag in flags)
