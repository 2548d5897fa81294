"""Triage one run folder: read its failing records, classify them, read their shrunk cases, group them.

The run's files are untrusted (they travel between teams): records come through
`torchcts.results.files` (bounded, validated, streamed) and only the fields triage needs are kept,
each cut short; corpus cases through the corpus's own reader, at most `MAX_CASES` distinct files, each
once (many missing-kernel items share one). A case that cannot be read leaves its failure's condition
unknown and is listed with the file and field; the triage goes on.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts.core.outcomes import PROBLEMS
from torchcts.results.files import iter_records, read_summary
from torchcts.triage.classify import classify
from torchcts.triage.clusters import Cluster, Failure, group
from torchcts.triage.conditions import OUTPUT_OFFSET, Condition, case_condition, output_features, unknown
from torchcts.triage.kernels import CALL_FEATURES, Trace, TraceLimits, trace_isolated
from torchcts.triage.suspects import PLAIN, VALUES, Suspect, kernel_suspects, suspects
from torchcts.triage.families import (ERROR_INPUT_FAMILY, MISSING_KERNEL_FAMILY, OPINFO_PROPERTIES,
                                      OUTPUT_LAYOUT_FAMILY, RESULT_DTYPE_FAMILY, op_family)
from torchcts.triage.repro import write_repro
from torchcts.untrusted_paths import OutsideFolders, case_folders, resolve_inside

# imports inside functions: cases.files loads torch (seconds): a run with no failing record is triaged without it

PROBLEM_VALUES = frozenset(o.value for o in PROBLEMS)
# Features of values: a trace notes none (only layout, size, dtypes), and a shrunk case keeps them only where the
# bug needs them: such a case keeps its own condition, grouped by the kernel it ran (`kernels.kernel_suspects`)
VALUE_FEATURES = frozenset({"nan", "inf", "-0", "subnormal", "int extremes", "wide int scalar"})
_DTYPE_TRANSITION = re.compile(r"dtype torch\.(\w{1,30}), CPU gives torch\.(\w{1,30})")  # the oracle's words
_CPU_RAISES = re.compile(r"where CPU raises (\w{1,60})\b")  # the error parity property's words
MAX_CASES = 5000  # distinct case files read in one triage
TRACE_BUDGET_S = 300.0  # seconds all traced cases of one triage may take (each at most `TraceLimits.timeout_s`)
_BUDGET_SPENT = "tracing stopped: its time budget is spent"
MAX_CORPUS_FILES = 2000  # files a search for crash cases looks at
TEXT_CHARS = 300  # a kept text field (error line, item id) is at most this long


@attrs.frozen
class Triage:
    folder: Path
    run_id: str | None
    device: str | None
    failures: tuple[Failure, ...]
    clusters: tuple[Cluster, ...]
    problems: tuple[str, ...] = ()  # case files that could not be read, scripts not written: one line each

    def as_json(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for failure in self.failures:
            kinds[failure.kind] = kinds.get(failure.kind, 0) + 1
        return {"schema_version": 1, "run": str(self.folder), "run_id": self.run_id, "device": self.device,
                "failures": len(self.failures), "kinds": kinds, "clusters": [c.as_json() for c in self.clusters],
                "problems": list(self.problems)}


def triage_run(folder: Path | str, output: Path | str | None = None, corpus_dir: Path | str | None = None,
               scripts: bool = True, say: Callable[[str], None] = lambda line: None, trace: bool = True) -> Triage:
    """Classify and group the failing records of the run in `folder`; write repro scripts of crashed and
    timed-out items into `<output>/repro/` (default output: `<folder>/triage`); with `trace`, call each failing
    case's op (`kernels.trace_isolated`) to see which kernels saw its condition. ResultFileError names a
    malformed run file."""
    folder = Path(folder)
    summary = read_summary(folder)
    environment = summary["environment"]
    device = environment.get("device")
    output = Path(output) if output is not None else folder / "triage"
    conditions: dict[Path, tuple[Condition, Any, Any] | None] = {}
    tracer = _Tracer()
    problems: list[str] = []
    failures = []
    roots = case_roots(folder, corpus_dir)
    for record in iter_records(folder):
        if record["outcome"] not in PROBLEM_VALUES:
            continue
        record = _contained(record, folder, roots, problems)
        condition, case, sample = _condition(record, folder, conditions, problems, roots)
        traced = trace and condition.known and record["property"] in OPINFO_PROPERTIES

        def trace_of(case: Any = case, sample: Any = sample) -> Trace | None:  # called where a trace is used
            return tracer.trace(case, sample, problems) if traced else None

        failures.append(_failure(record, condition, case, trace_of))
    if scripts:
        failures = _with_repros(failures, folder, output, device, corpus_dir, problems, say)
    return Triage(folder, summary.get("run_id"), device, tuple(failures), group(failures), tuple(problems))


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 3] + "..."


def _line(text: str) -> str:
    """A problem as one printable line (names in it come from the run's files)."""
    from torchcts.cases.files import printable

    return _text(printable(text))


class _Tracer:
    """Each case's op traced once (`kernels.trace_isolated`), however many records name it, within
    `TRACE_BUDGET_S` for the whole triage: past it, later cases are not traced (a problem line says so)."""

    def __init__(self) -> None:
        self.traces: dict[int, Trace] = {}  # id(sample) -> its trace
        self.spent = 0.0

    def trace(self, case: Any, sample: Any, problems: list[str]) -> Trace | None:
        if sample is None:
            return None
        if id(sample) not in self.traces:
            if self.spent + TraceLimits().timeout_s > TRACE_BUDGET_S:  # one more may take its whole timeout
                if not any(p.startswith(_BUDGET_SPENT) for p in problems):
                    problems.append(f"{_BUDGET_SPENT} ({TRACE_BUDGET_S:.0f} s): later cases are grouped by their op "
                                    "and condition only")
                return None
            started = time.monotonic()
            trace = trace_isolated(case.op, sample)
            self.spent += time.monotonic() - started
            if trace.stopped.startswith("calling"):  # the child died or overran: worth a line
                problems.append(_line(f"case of {case.op}: {trace.stopped}; its kernels are not read"))
            self.traces[id(sample)] = trace
        return self.traces[id(sample)]


def _failure(record: dict[str, Any], condition: Condition, case: Any,
             trace_of: Callable[[], Trace | None] = lambda: None) -> Failure:
    """The failure of `record`; `trace_of()` traces its case's op, called only where a trace is read (a harness
    failure or one whose record names the cause is never traced)."""
    verdict = classify(record, case)
    prop = record["property"]
    family = op_family(record["op"], None if prop in OPINFO_PROPERTIES else prop, condition.tensors)
    trace = trace_of() if verdict.kind in ("values", "strides") else None
    if trace is not None:
        found = output_features(trace.outputs, case.failure.get("difference"))
        # a wrong output that is a view at an offset, or plain inputs with a view, expanded or strided output:
        # the device's views or its readback, whatever the op (the inputs' features are kept under what differs)
        if OUTPUT_OFFSET in found or (found and not condition.features):
            family = OUTPUT_LAYOUT_FAMILY
            condition = attrs.evolve(condition, features=(OUTPUT_OFFSET,) if OUTPUT_OFFSET in found else found,
                                     inputs=condition.features)
    transition = _DTYPE_TRANSITION.search(_text((case.failure.get("difference") if case is not None else None)
                                                or record.get("error_line"))) if verdict.kind == "dtype" else None
    if transition is not None:  # one promotion rule or autocast policy, whatever op or suite shows it
        family = RESULT_DTYPE_FAMILY
        condition = attrs.evolve(condition, root=f"{transition.group(1)} where CPU gives {transition.group(2)}")
    expected = case.inputs.get("error_type") if case is not None and verdict.kind == "error_parity" else None
    if isinstance(expected, str):  # what CPU raised, where the record says: OpInfos declare `Exception` for many
        said = _CPU_RAISES.search(_text(record.get("error") or record.get("error_line")))
        expected = said.group(1) if said else expected
    if isinstance(expected, str) and expected.isidentifier() and len(expected) <= 60:
        family = ERROR_INPUT_FAMILY  # an OpInfo error input: one error-checking bug spans ops (dim wrapping, ...)
        condition = attrs.evolve(condition, root=f"CPU raises {expected}")
    missing = record.get("missing_kernel")
    if record.get("error_kind") == "missing_kernel" and missing:  # one missing overload is one root cause
        family = MISSING_KERNEL_FAMILY
        key = missing.get("dispatch_key")
        condition = attrs.evolve(condition, root=_text(missing["overload"] + (f" ({key})" if key else "")))
    found_suspects = ()  # a harness failure is TorchCTS's, not a kernel's
    if condition.root is None and family != OUTPUT_LAYOUT_FAMILY and verdict.kind != "harness":
        trace = trace if trace is not None else trace_of()
        found_suspects = _suspects(trace, condition, verdict.kind) if trace is not None else ()
    counterexample = record.get("counterexample") or {}
    return Failure(_text(record["item"]), _text(prop), _text(record["op"]), _text(record.get("variant")),
                   _text(record["dtype"]), record["outcome"], verdict.kind, verdict.evidence, family, condition,
                   _text(record.get("error_line") or record.get("reason")), counterexample.get("path"),
                   counterexample.get("replay"), suspects=found_suspects,
                   leg=_text(record.get("leg"))[:40])


def _suspects(trace: Trace, condition: Condition, kind: str) -> tuple[Suspect, ...]:
    """The kernels inside the op that saw a feature of the case (`triage.kernels`): those that saw one the shrunk
    case itself shows when it shows any (shrinking kept it, so the bug needs it), else any a call inside saw (a
    composite op making views of a plain input); for a case that shows nothing, or whose special values are its
    condition (a value is not traced), each kernel the op ran."""
    if VALUE_FEATURES & set(condition.features):
        return kernel_suspects(trace, VALUES)
    found = suspects(trace, with_dtypes=kind == "dtype" or "mixed dtypes" in condition.features)
    own = CALL_FEATURES & set(condition.features)
    if own:
        return tuple(s for s in found if s.feature in own)
    return found if found or condition.features else kernel_suspects(trace, PLAIN)


CaseRoots = tuple[tuple[Path, ...], tuple[Path, ...]]  # (folders a case path may lead into, folders it is read against)


def case_roots(folder: Path, corpus_dir: Path | str | None = None) -> CaseRoots:
    """(roots, bases) of a record's case path (`untrusted_paths.case_folders`): it may lead into the run folder,
    its results folder, the default corpus folders and the corpus folder the user named, never anywhere under
    `/` or the home folder as a whole."""
    return case_folders(folder, corpus_dir)


def case_file(path: str, folder: Path, roots: CaseRoots | None = None) -> Path | None:
    """The case file a record's path names, inside `roots` (default `case_roots(folder)`), links resolved; None
    if none is there. `untrusted_paths.OutsideFolders` for a path that leads out of them (`/etc/passwd`, '..')."""
    inside, bases = roots if roots is not None else case_roots(folder)
    return resolve_inside(path, inside, bases)


def _contained(record: dict[str, Any], folder: Path, roots: CaseRoots, problems: list[str]) -> dict[str, Any]:
    """The record, without its counterexample when the case path leads out of the run's folders (one problem line
    says so; the failure is still triaged, with its condition unknown)."""
    counterexample = record.get("counterexample")
    if not counterexample or counterexample.get("path") is None:
        return record
    try:
        case_file(counterexample["path"], folder, roots)
    except OutsideFolders as exc:
        problems.append(_line(f"records.jsonl: item {_text(record['item'])[:100]}: counterexample.path {exc}; not "
                              "read (a corpus elsewhere: name it with --corpus-dir)"))
        return {**record, "counterexample": None,
                "counterexample_error": "its case path leads outside the run's folders; not read"}
    return record


def _condition(record: dict[str, Any], folder: Path, cache: dict[Path, tuple[Condition, Any, Any] | None],
               problems: list[str], roots: CaseRoots | None = None) -> tuple[Condition, Any, Any]:
    from torchcts.cases.files import CaseFileError

    counterexample = record.get("counterexample")
    if not counterexample or not isinstance(counterexample.get("path"), str):
        why = record.get("counterexample_error") or f"no stored case ({record['outcome']})"
        return unknown(_text(why)), None, None
    path = case_file(counterexample["path"], folder, roots)  # `_contained` refused paths leading out
    if path is None:
        return unknown(_text(f"case {counterexample['path']} not found")), None, None
    if path not in cache:
        if len(cache) >= MAX_CASES:
            return unknown(f"case not read: over the limit of {MAX_CASES} case files"), None, None
        try:
            cache[path] = case_condition(path)
        except CaseFileError as exc:  # it names the file and field
            cache[path] = None
            problems.append(_line(f"case unreadable: {exc}"))
        except (RecursionError, MemoryError, ValueError, TypeError, RuntimeError) as exc:  # decoded, not described
            cache[path] = None
            problems.append(_line(f"case {path}: its condition cannot be read: {type(exc).__name__}: {exc}"))
    found = cache[path]
    if found is None:
        return unknown(_text(f"case {path} unreadable")), None, None
    return found


def _with_repros(failures: list[Failure], folder: Path, output: Path, device: str | None,
                 corpus_dir: Path | str | None, problems: list[str], say: Callable[[str], None]) -> list[Failure]:
    dead = [f for f in failures if f.outcome in ("crashed", "timed_out")]
    if not dead:
        return failures
    crash_cases = _crash_cases(corpus_dir, failures, folder)
    written = {}
    for failure in dead:
        case = case_file(failure.case, folder, case_roots(folder, corpus_dir)) if failure.case else None
        corpus_case = crash_cases.get((failure.property, failure.op, failure.dtype))
        repro = write_repro(failure, output / "repro", device, case, corpus_case)
        if repro.path is None:
            problems.append(_line(f"{failure.item}: no repro script: {repro.source}"))
        else:
            say(f"repro {repro.path} ({repro.source})")
        written[failure.item] = str(repro.path) if repro.path else None
    return [attrs.evolve(f, repro=written[f.item]) if f.item in written else f for f in failures]


def _crash_cases(corpus_dir: Path | str | None, failures: list[Failure], folder: Path) -> dict[tuple, Path]:
    """(property, op, dtype) -> a corpus case whose stored failure is a crash or a hang (fuzz's crash hunt)."""
    from torchcts.cases.files import CaseFileError, case_files, load_case

    if corpus_dir is None:  # the corpus the run's stored cases are in, else ./corpus
        stored = [case_file(f.case, folder, case_roots(folder)) for f in failures if f.case]
        found = [p for p in stored if p is not None]
        corpus_dir = found[0].parent if found else Path("corpus")
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        return {}
    cases = {}
    for path in case_files([corpus_dir])[:MAX_CORPUS_FILES]:
        try:
            case = load_case(path)
        except CaseFileError:
            continue
        if case.failure.get("outcome") in ("crashed", "timed_out"):
            cases.setdefault((case.property, case.op, case.dtype), path)
    return cases
