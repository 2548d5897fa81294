"""Computing the generated-coverage list (`torchcts.coverage.generated` reads it): every target's static reason,
a forked probe of CPU's kernel on drawn argument sets, then sibling calls of OpInfo samples for those it rejected,
and writing the packaged file. Seconds to import the op database, minutes to probe: run by
`python -m torchcts.coverage.generated_compute --refresh` (or `--refresh-traced`) and by the test that keeps the list honest,
never at registration time. `draw_accepted` and `overload_seed` also serve `coverage materialize`.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import hypothesis
import torch
from hypothesis import HealthCheck, Phase
from hypothesis.errors import InvalidArgument

import torchcts
from torchcts.coverage.dispatch_calls import accepted_on_cpu, overload_cases  # in the parent: forked probes inherit it
from torchcts.coverage.generated import (GENERATED, LAYOUT_RULES, PACKAGED, PROBE_TIMEOUT_S, PROBE_TRIES,
                                         SIZE_TRUSTING, UNCHECKED_PACKETS, _packaged, traced_only)
from torchcts.coverage.inventory import load_inventory
from torchcts.coverage.mapping import map_opinfos, opinfo_ops
from torchcts.disk import write_atomic
from torchcts.plan import registry
from torchcts.strategies import opinfo_trace
from torchcts.strategies.curated_calls import curated
from torchcts.strategies.overloads import resolve
from torchcts.strategies.schema_args import unsupported
from torchcts.strategies.traced_calls import kin, siblings


def targets() -> dict[str, str]:
    """Every relevant overload no OpInfo reaches by name -> "generated" or a reason known without running it
    (a policy reason or an argument no strategy draws). Imports the op database: seconds."""
    inventory = load_inventory()
    properties = registry.load()
    reached: set[str] = set()
    for reach in map_opinfos(opinfo_ops(properties), properties, inventory):
        reached |= reach.overloads
    found = {}
    for entry in inventory:
        if not entry.relevant or entry.name in reached:
            continue
        op = resolve(entry.name)
        found[entry.name] = _static_reason(entry, op) or (
            GENERATED if curated(entry.name) else unsupported(op._schema) or GENERATED)
    return dict(sorted(found.items()))


def _static_reason(entry: Any, op: Any) -> str | None:
    if op is None:
        return "cannot generate: torch.ops.aten does not expose it"
    if curated(entry.name):
        return None  # hand-written calls keep the rules its kernel trusts (`strategies/curated_calls.py`)
    if entry.rule_id in LAYOUT_RULES:
        return f"cannot generate: kernels for {LAYOUT_RULES[entry.rule_id]}"
    if "unsafe" in entry.packet:
        return "cannot generate: an unchecked (_unsafe) kernel: out-of-range arguments read arbitrary memory"
    if entry.packet.rstrip("_").startswith(UNCHECKED_PACKETS):
        return "cannot generate: a kernel that trusts its arguments' sizes (drawn ones crashed CPU in a probe or run)"
    if entry.packet.startswith("_nested_"):
        return "cannot generate: takes or returns nested tensors (the nested suite's area)"
    if "Dimname" in entry.schema:
        return "cannot generate: named tensors (a Dimname argument), a prototype"
    return None


def probe(name: str, tries: int = PROBE_TRIES, traced: bool = False) -> str | None:
    """None when CPU's kernel accepts one of `tries` drawn argument sets of `name` (float32 items; with `traced`,
    rebound sibling calls of OpInfo samples), else why not. Runs in this process: `probe_forked` isolates a
    kernel that may crash."""
    try:
        cases = overload_cases(name, torch.float32, None, traced=traced)
    except InvalidArgument as exc:  # traced: no sibling call rebinds to it
        return f"cannot generate: {exc}"
    found, last = draw_accepted(cases, 1, accepted_on_cpu, seed=overload_seed(name), tries=tries)
    if found:
        return None
    return f"cannot generate: CPU's kernel rejected all {tries} drawn argument sets (last: {last or 'none drawn'})"


def probe_status(name: str, tries: int = PROBE_TRIES) -> str:
    """"generated" or why not, for a target whose arguments can be drawn: a `traced_only` one waits for traced
    calls (`SIZE_TRUSTING`), any other is probed in a forked child."""
    return SIZE_TRUSTING if traced_only(name) else probe_forked(name, tries) or GENERATED


def probe_forked(name: str, tries: int = PROBE_TRIES, timeout_s: float = PROBE_TIMEOUT_S,
                 traced: bool = False) -> str | None:
    """`probe` in a forked child: a crash or a hang of CPU's kernel is a reason too."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer one line, then leave without running the parent's cleanup
        code = 0
        try:
            os.close(read)
            answer = probe(name, tries, traced) or ""
            os.write(write, answer.encode()[:4000])
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    ready, _, _ = select.select([read], [], [], timeout_s)
    if not ready:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read)
        return f"cannot generate: CPU's kernel ran past {timeout_s:.0f} s on a drawn argument set"
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0:
        return "cannot generate: CPU's kernel crashed the process on a drawn argument set"
    return data.decode(errors="replace") or None  # cut at a byte limit: a character may be split


def overload_seed(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:12], 16)


class _Enough(BaseException):
    """Stops drawing once enough accepted cases are found (Hypothesis lets a BaseException through)."""


def draw_accepted(strategy: Any, count: int, accept: Callable[[Any], str | None], *, seed: int,
                  tries: int) -> tuple[list[Any], str]:
    """Up to `count` values of `strategy` that `accept` (None: accepted, else why not) takes, among at most
    `tries` draws in a fixed order (the seed); (the accepted values, the last rejection)."""
    found: list[Any] = []
    last = [""]

    @hypothesis.seed(seed)
    @hypothesis.settings(max_examples=tries, database=None, derandomize=False, deadline=None,
                         phases=(Phase.generate,), suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @hypothesis.given(strategy)
    def collect(value: Any) -> None:
        why = accept(value)
        if why is not None:
            last[0] = why
            return
        found.append(value)
        if len(found) >= count:
            raise _Enough()

    try:
        collect()
    except _Enough:
        pass
    return found, last[0]


_REJECTED_ALL = "cannot generate: CPU's kernel rejected all "


def probe_traced(found: dict[str, str], traced: set[str], progress: Callable[[str], None] = lambda _: None) -> None:
    """For each overload of `found` whose schema draws CPU rejected all, probe rebound sibling (or kin) calls of
    OpInfo samples (`traced_calls`); one CPU accepts makes it generated from traced calls (updates both in place)."""
    donors = opinfo_trace.packaged()["donors"]
    for name, status in found.items():
        if (status.startswith(_REJECTED_ALL) or status == SIZE_TRUSTING) and (siblings(name, donors)
                                                                                or kin(name, donors)):
            if probe_forked(name, PROBE_TRIES, traced=True) is None:
                found[name] = GENERATED
                traced.add(name)
            progress(f"{name}: {'generated from traced calls' if name in traced else 'no traced call accepted'}")


def compute(*, tries: int = PROBE_TRIES, progress: Callable[[str], None] = lambda _: None,
            shard: tuple[int, int] = (0, 1)) -> tuple[dict[str, str], set[str]]:
    """The list to package and the overloads generated from traced calls: `targets()`, each generatable one
    probed on CPU in a forked child, then `probe_traced` (only every `shard[1]`-th target from `shard[0]` on
    is probed: shards run in parallel, and their answers merge)."""
    found = targets()
    mine = {}
    for index, (name, status) in enumerate(found.items()):
        if index % shard[1] != shard[0]:
            continue
        if status == GENERATED:
            found[name] = probe_status(name, tries)
        mine[name] = found[name]
        progress(f"{index + 1}/{len(found)} {name}: {found[name]}")
    traced: set[str] = set()
    probe_traced(mine, traced, progress)
    found.update(mine)
    return found, traced


def resync(listed: dict[str, str], traced: set[str], progress: Callable[[str], None] = lambda _: None) -> dict[str, str]:
    """The packaged answers (`listed`, `traced`) brought to `targets()` of the installed torch without re-probing
    every overload: static reasons are taken as they are now, a generatable target keeps its probe answer, a new
    one (or one with curated calls) is probed; targets no longer relevant or now reached by an OpInfo leave (and
    leave `traced`)."""
    found = targets()
    for name, status in found.items():
        if status != GENERATED:
            continue
        if name in listed and not listed[name].startswith("cannot generate: kernels for ") and not curated(name):
            found[name] = listed[name]
        else:
            found[name] = probe_status(name)
            progress(f"{name}: {found[name]}")
    traced.intersection_update(n for n, status in found.items() if status == GENERATED)
    return found


def write_packaged(overloads: dict[str, str], traced: Iterable[str] = (), path: Path = PACKAGED) -> None:
    generated = sum(status == GENERATED for status in overloads.values())
    metadata = {"torch": torch.__version__, "torchcts": torchcts.__version__, "targets": len(overloads),
                "generated": generated, "from_traced_calls": len(set(traced)), "probe_tries": PROBE_TRIES}
    content = {"metadata": metadata, "overloads": overloads, "from_traced_calls": sorted(set(traced))}
    write_atomic(path, json.dumps(content, indent=1, sort_keys=True) + "\n")


_USAGE = ("usage: python -m torchcts.coverage.generated_compute --refresh | --refresh-traced\n"
          "  --refresh         recompute the whole list and package it (probes every target: tens of minutes)\n"
          "  --refresh-traced  bring the list to the installed torch's targets (static reasons, new targets probed),\n"
          "                    then re-probe, with traced calls, the overloads whose schema draws were all rejected")

def _print(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str]) -> int | str:
    """`python -m torchcts.coverage.generated_compute --refresh | --refresh-traced`: 0 once the list is written, else the
    usage text (which `sys.exit` prints, exit status 1)."""
    if argv == ["--refresh"]:
        write_packaged(*compute(progress=_print))
    elif argv == ["--refresh-traced"]:
        _, listed, already = _packaged()
        traced = set(already)
        overloads = resync(dict(listed), traced, _print)
        for name in overloads:
            if traced_only(name) and overloads[name] == GENERATED:  # re-probed with its own family's calls only
                overloads[name] = SIZE_TRUSTING
                traced.discard(name)
        probe_traced(overloads, traced, _print)
        write_packaged(overloads, traced)
    else:
        return _USAGE
    return 0


if __name__ == "__main__":  # python -m torchcts.coverage.generated_compute --refresh | --refresh-traced
    sys.exit(main(sys.argv[1:]))
