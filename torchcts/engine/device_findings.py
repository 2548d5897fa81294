"""Device findings: a defect of the device as a whole, found once by a probe at run start, that makes many
items fail with an error naming a symptom rather than the cause; those items' records point at it.

The one known so far, `device_index_none`: a backend whose tensors report `device.index == None` (a wrapper
subclass made with `device="newdev"` instead of `"newdev:0"`, or `torch.device("newdev")`). Every structured
multi-output op (max.dim, sort, topk, aminmax, ...) then fails with PyTorch's internal assert "structured
kernels don't support multi-device outputs" (the generated kernels compare the device guard's device, which
has an index, with the output's, which has none), and every backward with autograd's assert on the device
index of its ready queue: dozens of items, one cause, a one-line fix.

`probe(device)` runs the check (a tensor made on the device and one copied there, each `.device.index`) and
notes the findings for this process (forked children inherit them; a spawned worker probes again:
`engine.worker_process`); `explaining(exc)` is the finding an item's exception is a symptom of, which the
engine writes into the record (`finding`). run.json's `environment.findings` holds each finding's text; the
console and the report show it once, with the number of items it causes.
"""

from __future__ import annotations

from typing import Any

import attrs

INDEX_NONE = "device_index_none"
# PyTorch's words for the symptoms: torchgen's structured kernels' set_output, and autograd's engine (its ready
# queue per device index) when a backward runs on such tensors (torch/csrc/autograd/engine.cpp)
_INDEX_NONE_SYMPTOMS = ("structured kernels don't support multi-device outputs", "*current_device == options.device()",
                        "device.index() < static_cast<c10::DeviceIndex>(device_ready_queues_.size())")
_INDEXLESS_TYPES = frozenset({"cpu", "meta"})  # device types whose tensors have no index by design
MAX_CHAIN = 8  # exceptions followed through __cause__ / __context__
MAX_TEXT = 20_000  # characters of an exception's message searched for a symptom


@attrs.frozen
class DeviceFinding:
    """A device defect: its id, what was found, the symptom it causes, and the fix."""

    id: str
    device: str
    summary: str
    symptom: str
    fix: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "device": self.device, "summary": self.summary, "symptom": self.symptom,
                "fix": self.fix}

    def line(self) -> str:
        """The finding in one line, as the console prints it."""
        return f"{self.summary}; {self.symptom}; fix: {self.fix}"


_active: dict[str, DeviceFinding] = {}  # this process's findings, by id (set by `probe`)


def probe(device: str) -> tuple[DeviceFinding, ...]:
    """Check the device once (a tensor made there, a tensor copied there) and note what it finds for this process.
    A device that cannot make a tensor at all finds nothing here (the run's device check says so)."""
    import torch

    found = []
    devices = []
    for make in (lambda: torch.empty(1, device=device), lambda: torch.zeros(1).to(device)):
        try:
            devices.append(make().device)
        except Exception:  # noqa: BLE001 - an unusable device is reported elsewhere, not as a finding
            continue
    indexless = [d for d in devices if d.index is None and d.type not in _INDEXLESS_TYPES]
    if indexless:
        found.append(index_none_finding(device, str(indexless[0])))
    _active.clear()
    _active.update((finding.id, finding) for finding in found)
    return tuple(found)


def index_none_finding(device: str, reported: str) -> DeviceFinding:
    kind = reported.split(":", 1)[0]
    return DeviceFinding(
        INDEX_NONE, device,
        f"tensors on {device} report device {reported!r} with no index (device.index is None)",
        "multi-output ops (max.dim, sort, topk, aminmax, ...) fail with PyTorch's internal assert \"structured "
        "kernels don't support multi-device outputs\", and backward with autograd's \"device.index() < ... "
        "device_ready_queues_.size()\" assert",
        f"give every device tensor an index: torch.device({kind!r}, 0) or \"{kind}:0\", not {kind!r} (in "
        "_make_wrapper_subclass(..., device=...) and wherever the backend makes its tensors)")


def active() -> tuple[DeviceFinding, ...]:
    """The findings `probe` noted in this process."""
    return tuple(_active.values())


def explaining(exc: BaseException) -> str | None:
    """The id of the noted finding `exc` is a symptom of (searched through its `__cause__` chain, as dynamo wraps
    errors with `raise ... from`; not `__context__`, an error raised while handling one), or None."""
    if not _active:
        return None
    if INDEX_NONE in _active and _any_message_has(exc, _INDEX_NONE_SYMPTOMS):
        return INDEX_NONE
    return None


def _any_message_has(exc: BaseException, needles: tuple[str, ...]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    for _ in range(MAX_CHAIN):
        if current is None or id(current) in seen:
            return False
        seen.add(id(current))
        try:
            text = str(current)[:MAX_TEXT]
        except Exception:  # noqa: BLE001 - a message that cannot be read says nothing
            text = ""
        if any(needle in text for needle in needles):
            return True
        current = current.__cause__  # `raise ... from` (dynamo's wrappers); not __context__: another error
        # raised while handling the assert is another cause
    return False


def items_per_finding(records: Any) -> dict[str, int]:
    """How many records point at each finding (records: an iterable of record dicts)."""
    counts: dict[str, int] = {}
    for record in records:
        finding = record.get("finding") if isinstance(record, dict) else None
        if isinstance(finding, str):
            counts[finding] = counts.get(finding, 0) + 1
    return counts


def end_lines(findings: Any, records_path: Any) -> list[str]:
    """The run summary's lines about its findings (run.json `environment.findings`): each once, with how many
    items of the run's records.jsonl point at it, and the fix. None when the run found nothing."""
    if not findings:
        return []
    import json

    counts: dict[str, int] = {}
    try:
        with open(records_path, "rb") as lines:
            counts = items_per_finding(_loaded(line, json) for line in lines if b'"finding"' in line)
    except OSError:
        pass
    return [f"torchcts: finding: {f['summary']}: {counts.get(f['id'], 0)} item(s) fail from it (their records' "
            f"`finding` is {f['id']}); fix: {f['fix']}" for f in findings]


def _loaded(line: bytes, json: Any) -> Any:
    try:
        return json.loads(line)
    except ValueError:  # a torn last line
        return None
