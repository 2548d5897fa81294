"""`torchcts report --merge`: the run folders of `torchcts run --shard K/N` joined into one run folder.

Each shard is a complete run folder whose records account for every item of the plan: the items of
its shard as run, the others `deselected` ("--shard 1/3: shard 2 runs it"), the items no shard runs
with the same reason in every shard. The merged folder holds each item id once: the record of the
shard that runs it (`torchcts.core.shards.shard_of`), or the common not-run record; its run.json
counts the merged records and is `complete` only when all N shards are there and each was complete.
An item whose shard is missing keeps a `deselected` record that names the missing shard.

Shards of different runs cannot be merged: folders that differ in what decides the cases (versions,
manifest, device, seed, level, examples, the shard count) are refused, naming the folder and field.
Folders are untrusted (read through `torchcts.results.files`). No torch: `torchcts report` imports this.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import json
import os
import secrets
from pathlib import Path
from typing import Any, Iterable

from torchcts.disk import WriteError, write_atomic
from torchcts.core.outcomes import EXECUTED, Outcome
from torchcts.core.shards import ShardError, parse_shard, shard_of
from torchcts.results.files import ResultFileError, missing_kernel_summary, read_records, read_summary

# run.json environment fields that must agree between shards: they decide which items exist and which cases run
MUST_AGREE = ("torch", "torchcts", "hypothesis", "manifest_hash", "effective_manifest_hash", "device", "compile", "validation", "seed",
              "derandomize", "level", "max_examples")
EXECUTED_VALUES = frozenset(o.value for o in EXECUTED)
SCHEMA_VERSION = 1


class MergeError(Exception):
    """Shards that cannot be merged: one line naming the folder and the field."""


def merge_shards(folders: Iterable[Path | str], output: Path | None = None) -> Path:
    """Merge the shard run folders `folders` into a new run folder (default `<parent of the first>/merged-<id>`);
    its path. MergeError (one line) for folders that are not shards of one run; ResultFileError for a
    file that cannot be read."""
    shards = _read_shards([Path(f) for f in folders])
    count = shards[0]["shard"][1]
    present = {s["shard"][0]: s for s in shards}
    missing = [k for k in range(1, count + 1) if k not in present]
    records = _merged_records(shards, count, missing)
    complete = not missing and all(s["summary"].get("status") == "complete" for s in shards)
    run_id = f"merged-{datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"
    folder = Path(output) if output is not None else shards[0]["folder"].parent / run_id
    summary = _summary(shards, records, count, missing, complete, run_id)
    _write(folder, summary, records)
    return folder


def _read_shards(folders: list[Path]) -> list[dict[str, Any]]:
    """The shards' validated run.json and records, checked to be shards of one run."""
    if not folders:
        raise MergeError("--merge needs the run folders of the shards (torchcts run --shard K/N)")
    shards = []
    for folder in folders:
        if not os.path.lexists(folder / "run.json"):
            raise ResultFileError(folder / "run.json", f"missing; is {folder} a run folder (results/<run-id>/)?")
        summary = read_summary(folder)
        shard = _shard(folder, summary)
        shards.append({"folder": folder, "summary": summary, "shard": shard, "records": read_records(folder)})
    first = shards[0]
    for other in shards[1:]:
        _check_same_run(first, other)
    seen: dict[int, Path] = {}
    for shard in shards:
        index = shard["shard"][0]
        if index in seen:
            raise MergeError(f"shard {shard['folder']}: shard {index}/{shard['shard'][1]} again "
                             f"({seen[index]} is shard {index} too); merge one folder per shard")
        seen[index] = shard["folder"]
    return sorted(shards, key=lambda s: s["shard"][0])


def _shard(folder: Path, summary: dict[str, Any]) -> tuple[int, int]:
    """(K, N) of a shard's run.json; MergeError for a folder that is not a shard."""
    value = summary["environment"].get("shard")
    if value is None:
        raise MergeError(f"shard {folder}: not a shard (its run.json has no environment.shard); merge only run "
                         "folders of `torchcts run --shard K/N`")
    try:
        return parse_shard(value)
    except ShardError:
        raise MergeError(f"shard {folder}: environment.shard {value!r} is not K/N (a merged folder cannot be merged "
                         "again)") from None


def _check_same_run(first: dict[str, Any], other: dict[str, Any]) -> None:
    """MergeError naming the first field in which `other` differs from `first`."""
    env, env_other = first["summary"]["environment"], other["summary"]["environment"]
    for field in MUST_AGREE:
        if env.get(field) != env_other.get(field):
            raise MergeError(f"shard {other['folder']}: {field} {_shown(env_other.get(field))} differs from "
                             f"{first['folder']}'s {_shown(env.get(field))}")
    if first["shard"][1] != other["shard"][1]:
        raise MergeError(f"shard {other['folder']}: shard count {other['shard'][1]} (shard {other['shard'][0]}/"
                         f"{other['shard'][1]}) differs from {first['folder']}'s {first['shard'][1]}")
    kinds = first["summary"].get("run_kind"), other["summary"].get("run_kind")
    if kinds[0] != kinds[1]:
        raise MergeError(f"shard {other['folder']}: run_kind {_shown(kinds[1])} differs from {first['folder']}'s "
                         f"{_shown(kinds[0])}")


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def _shard_deselected(record: dict[str, Any]) -> bool:
    return record["outcome"] == Outcome.DESELECTED.value and str(record.get("reason") or "").startswith("--shard ")


def _merged_records(shards: list[dict[str, Any]], count: int, missing: list[int]) -> list[dict[str, Any]]:
    """Each item once: its shard's record, else the not-run record every shard shares; items of a missing shard
    keep a `deselected` record naming it. Not-run records first, then the executed ones, in shard order."""
    chosen: dict[str, dict[str, Any]] = {}
    orphans: dict[str, dict[str, Any]] = {}  # items only ever deselected by --shard (their shard missing or cut short)
    for shard in shards:
        index = shard["shard"][0]
        for record in shard["records"]:
            item = record["item"]
            if _shard_deselected(record):
                orphans.setdefault(item, record)
                continue
            owner = shard_of(item, count)
            if record["outcome"] in EXECUTED_VALUES and owner != index:
                raise MergeError(f"shard {shard['folder']}: item {item} ran there, but --shard sends it to shard "
                                 f"{owner}/{count}; its TorchCTS splits items differently")
            if item not in chosen or owner == index:
                chosen[item] = record
    missing_set = set(missing)
    for item, record in orphans.items():
        owner = shard_of(item, count)
        if item in chosen or owner not in missing_set:
            continue  # run by its shard; or its shard is here but stopped before it (the merged run is partial)
        chosen[item] = {**record, "reason": f"--shard {owner}/{count}: shard {owner} is missing from the merge"}
    records = list(chosen.values())
    return ([r for r in records if r["outcome"] not in EXECUTED_VALUES]
            + [r for r in records if r["outcome"] in EXECUTED_VALUES])


def _summary(shards: list[dict[str, Any]], records: list[dict[str, Any]], count: int, missing: list[int],
             complete: bool, run_id: str) -> dict[str, Any]:
    first = shards[0]["summary"]
    counts = collections.Counter(r["outcome"] for r in records)
    starts = [s["summary"].get("started") for s in shards if s["summary"].get("started")]
    ends = [s["summary"].get("finished") for s in shards if s["summary"].get("finished")]
    joined = ",".join(str(s["shard"][0]) for s in shards)
    environment = {**first["environment"], "shard": f"merged {joined}/{count}",
                   "planned_items": sum(s["summary"]["environment"].get("planned_items") or 0 for s in shards),
                   "warnings": sorted({w for s in shards for w in s["summary"]["environment"].get("warnings") or []
                                       if isinstance(w, str)})}
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "status": "complete" if complete else "partial",
        "complete": complete,
        "started": min(starts) if starts else None,
        "finished": max(ends) if ends else None,
        "environment": environment,
        "counts": dict(sorted(counts.items())),
        "executed": sum(n for o, n in counts.items() if o in EXECUTED_VALUES),
        "interrupted": None,
        "hypothesis": first.get("hypothesis"),
        "run_kind": first.get("run_kind") or "run",
        "missing_kernels": missing_kernel_summary(records),
        "probes": first.get("probes"),
        "merged": {"shard_count": count, "missing": missing,
                   "shards": [{"shard": s["shard"][0], "folder": str(s["folder"]),
                               "run_id": s["summary"].get("run_id"), "status": s["summary"].get("status")}
                              for s in shards]},
    }


def _write(folder: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """records.jsonl, then run.json (a folder without run.json is no run); refuses a folder that holds files.
    WriteError when a file cannot be written: the new folder is removed again."""
    created = not os.path.lexists(folder)
    try:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise MergeError(f"--output {folder}: exists and is not an empty folder; name a new one")
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MergeError(f"--output {folder}: cannot write the merged run folder: {exc.strerror or exc}") from None
    try:
        write_atomic(folder / "records.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        write_atomic(folder / "run.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    except WriteError:  # a full disk: no half-merged folder is left to be mistaken for a run (the shards stay)
        with contextlib.suppress(OSError):
            (folder / "records.jsonl").unlink(missing_ok=True)
            if created:
                folder.rmdir()
        raise
