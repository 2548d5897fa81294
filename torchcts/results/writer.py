"""Run results on disk: `records.jsonl` (one JSON object per item, appended as it finishes) and
`run.json` (environment, counts, complete or partial). docs/results.md documents the schema.

Under pytest-xdist one run has several writers (`role`): the controller made the folder and alone writes
`run.json`; every worker appends its items' records and start marks to the same files, and the controller
counts them from the file when the run closes.

Records are written with one `write` call on a file opened for appending, so a run killed at any
moment leaves whole lines (a reader skips a torn last line); `run.json` is replaced atomically
and says `running` until the run ends, so a killed run reads as partial. On a full disk
(`torchcts.disk.WriteError`) a record the disk took in part is cut back to the file's whole lines, and a
run.json that cannot be finished keeps its last whole version, its start marks dropped (a run that
stopped on the disk died in no item).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import json
import os
import platform
import secrets
from pathlib import Path
from typing import Any, Iterable

import torch

from torchcts import disk, interrupts
from torchcts.core.record import RECORD_VERSION, VERSION_FIELD
from torchcts.core.record import check as check_record
from torchcts.core.typed_json import RecordError
from torchcts.disk import WriteError
from torchcts.core.outcomes import EXECUTED, Outcome
# run.json `run_kind`: "run" (a conformance run drawing cases), "replay" (a corpus replay), "collect_only"
from torchcts.results.files import RUN_KINDS, missing_kernel_summary
from torchcts.results.files import read_records as read_validated

SCHEMA_VERSION = 1
RECORDS_PER_WRITE = 1000  # accounting records per write
ROLES = ("single", "controller", "worker")  # who writes: one process; xdist's controller; one of its workers


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def hardware_key(device: str) -> str:
    """A name for the hardware under test: device type and model (CPU: architecture and processor)."""
    device_type = torch.device(device).type
    model = ""
    module = getattr(torch, device_type, None)
    if device_type not in ("cpu", "meta") and hasattr(module, "get_device_name"):
        try:
            model = module.get_device_name()
        except Exception:  # noqa: BLE001 - a name is nice to have, never required
            model = ""
    if not model:
        model = _cpu_model()
    return f"{device_type}:{model}".replace(" ", "_")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{platform.machine()}:{line.split(':', 1)[1].strip()}"
    except OSError:
        pass
    return platform.machine() or "unknown"


class RunFolderError(OSError):
    """The run folder cannot be created or written; the message names it and says why."""


class RunWriter:
    """Writes one run's records and summary under `<results_dir>/<run_id>/`."""

    def __init__(self, results_dir: Path, environment: dict[str, Any], run_id: str | None = None,
                 hypothesis: dict[str, Any] | None = None, run_kind: str = "run", role: str = "single"):
        self.run_id = run_id or new_run_id()
        if run_kind not in RUN_KINDS:
            raise ValueError(f"run_kind {run_kind!r} is not one of {', '.join(RUN_KINDS)}")
        if role not in ROLES or (role == "worker" and run_id is None):
            raise ValueError(f"role {role!r}: one of {', '.join(ROLES)} (a worker joins a named run)")
        self.role = role
        self.run_kind = run_kind  # what `torchcts report` may pick as the latest run
        self.missing_kernels: dict[str, Any] | None = None  # grouped from the records when the run closes
        self.hypothesis = hypothesis  # the Hypothesis settings the items draw with (None: a run without draws)
        self.probes: dict[str, Any] | None = None  # the probes' summary ({"total", "failed", "problems"}), once run
        self.folder = Path(results_dir) / self.run_id
        self.environment = environment
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.outcomes: collections.Counter[str] = collections.Counter()  # outcome value -> records
        created = not self.folder.exists()
        try:
            if role == "worker" and not (self.folder / "run.json").is_file():
                raise FileNotFoundError(f"the controller's run {self.run_id} has no run.json")
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.folder / "records.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._started_fd = os.open(self.folder / "started.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise RunFolderError(f"cannot write the run folder {self.folder}: {exc.strerror or exc}") from None
        self._last_started: str | None = None
        if role != "worker":
            try:
                self.write_summary("running")
            except WriteError:  # a full disk before the run began: leave no empty run folder behind
                self._close_files()
                if created:
                    _remove_empty_run_folder(self.folder)
                raise

    def set_probes(self, summary: dict[str, Any]) -> None:
        """Keep the probes' summary for run.json (written now too: a run killed later still has it)."""
        self.probes = summary
        if self.role != "worker":
            self.write_summary("running")

    def mark_started(self, item_id: str) -> None:
        """Note that an item starts: if the run dies in it, the next run knows which one it was."""
        disk.append(self._started_fd, (json.dumps({"item": item_id}) + "\n").encode(), self.folder / "started.jsonl")
        self._last_started = item_id

    def record(self, record: dict[str, Any]) -> None:
        """Append one item's record, whole, and count it (a signal waits until both are done)."""
        line = _line(record)
        with interrupts.deferred():
            disk.append(self._fd, line.encode(), self.folder / "records.jsonl")
            self.outcomes[str(record["outcome"])] += 1  # an Outcome member counts as its value

    def record_many(self, records: Iterable[dict[str, Any]]) -> None:
        """Append many records (a plan's accounting: tens of thousands) in few writes of whole lines."""
        chunk: list[tuple[str, str]] = []
        for record in records:
            chunk.append((_line(record), str(record["outcome"])))
            if len(chunk) == RECORDS_PER_WRITE:
                self._write_lines(chunk)
                chunk = []
        self._write_lines(chunk)

    def _write_lines(self, chunk: list[tuple[str, str]]) -> None:
        """Write (line, outcome) pairs in one go and count them (a signal waits until both are done)."""
        with interrupts.deferred():
            data = "".join(line for line, _ in chunk).encode()
            disk.append(self._fd, data, self.folder / "records.jsonl")  # whole lines, or none and WriteError
            self.outcomes.update(outcome for _, outcome in chunk)

    def count(self, outcome: Outcome | str) -> None:
        """Count a record another process wrote to this run (an isolated child)."""
        self.outcomes[str(outcome)] += 1

    def write_summary(self, status: str, interrupted: dict[str, Any] | None = None) -> None:
        summary = {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "status": status,  # running, complete or partial
            "complete": status == "complete",
            "started": self.started.isoformat(),
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat() if status != "running" else None,
            "environment": self.environment,
            "counts": dict(sorted(self.outcomes.items())),
            "executed": sum(n for o, n in self.outcomes.items() if o in EXECUTED),
            "interrupted": interrupted,  # null, or what stopped the run early and the item it stopped in
            "hypothesis": self.hypothesis,
            "run_kind": self.run_kind,
            "missing_kernels": self.missing_kernels,
            "probes": self.probes,  # null when no probe ran (a replay, --collect-only, no item run)
        }
        disk.write_atomic(self.folder / "run.json", json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")

    def close(self, status: str, interrupted: dict[str, Any] | None = None) -> None:
        """Write the final run.json (a worker only closes its files). A run that stops early is counted from
        records.jsonl itself: a signal may fall between an isolated child's record and the parent's count of
        it; so is every run whose workers wrote the records. The missing kernels are grouped from the records
        on disk."""
        try:
            if self.role == "worker":
                return
            self.missing_kernels = missing_kernels(self.folder / "records.jsonl")
            if status != "complete" or self.role == "controller":
                recorded = self._recount()
                if interrupted is not None:
                    interrupted = {"signal": None, **interrupted, "item": self._running_item(recorded)}
            self.write_summary(status, interrupted)
        except WriteError:  # run.json keeps saying `running` (read as partial): no item of it is taken for a crash
            with contextlib.suppress(OSError):
                os.ftruncate(self._started_fd, 0)
            raise
        finally:
            self._close_files()

    def _close_files(self) -> None:
        for fd in (self._fd, self._started_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _running_item(self, recorded: set[str]) -> str | None:
        """The item that was running when the run stopped and has no record (None: none). The controller of
        xdist workers reads the workers' start marks: the first started item without a record."""
        if self.role != "controller":
            return self._last_started if self._last_started not in recorded else None
        with open(self.folder / "started.jsonl", "rb") as lines:
            for line in lines:
                try:
                    item = json.loads(line).get("item")
                except (ValueError, AttributeError):  # a torn last line; not an object
                    continue
                if isinstance(item, str) and item not in recorded:
                    return item
        return None

    def _recount(self) -> set[str]:
        """Count the outcomes of the whole records on disk; the ids of the items recorded."""
        outcomes: collections.Counter[str] = collections.Counter()
        recorded = set()
        with open(self.folder / "records.jsonl", "rb") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:  # a torn last line
                    continue
                if isinstance(record, dict) and isinstance(record.get("outcome"), str):
                    outcomes[record["outcome"]] += 1
                    recorded.add(record.get("item"))
        self.outcomes = outcomes
        return recorded


def _line(record: dict[str, Any]) -> str:
    """A record's line of records.jsonl, marked with the record version it was written as and checked as one
    (`core.record.check`): a field the record does not name, or a value of the wrong type, is a defect of the
    code that filled it and raises RecordError naming the item and the field here, not in a later reader."""
    line = {**record, VERSION_FIELD: RECORD_VERSION}
    try:
        check_record(line)
    except RecordError as exc:
        raise RecordError(f"record of {record.get('item')!r} not written: {exc} (a TorchCTS defect)") from None
    return json.dumps(line, sort_keys=True, default=str) + "\n"


def _remove_empty_run_folder(folder: Path) -> None:
    """Remove a run folder this writer created whose files are all empty (its run.json could not be written)."""
    with contextlib.suppress(OSError):
        if all(f.is_file() and f.stat().st_size == 0 for f in folder.iterdir()):
            for file in folder.iterdir():
                file.unlink()
            folder.rmdir()


def missing_kernels(path: Path) -> dict[str, Any]:
    """run.json's `missing_kernels`, grouped from the whole records of `records.jsonl` (`missing_kernel_summary`)."""
    def whole_records():
        with open(path, "rb") as lines:
            for line in lines:
                if b'"missing_kernel"' not in line:  # most records: nothing to parse
                    continue
                try:
                    yield json.loads(line)
                except ValueError:  # a torn last line
                    continue

    return missing_kernel_summary(whole_records())


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Every whole record of a run (a torn last line from a killed run is skipped), validated by
    `torchcts.results.files`: a malformed file raises its ResultFileError naming file and line."""
    return read_validated(folder)
