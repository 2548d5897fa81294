"""Generated coverage: which backend-relevant overloads no OpInfo reaches get schema-generated cases, and why not the others.

The target set is every backend-relevant overload of the inventory that no OpInfo property reaches
by name (`mapping.map_opinfos`). Each target is "generated" (the `dispatch` property draws its
arguments from its schema, `strategies/schema_args.py`, from traced calls of a sibling or kin,
`strategies/traced_calls.py`, or from a hand-written builder, `strategies/curated_calls.py`, and
compares the device with CPU) or carries the reason it cannot be: a policy reason (layout-only kernels
that belong to a suite, unchecked `_unsafe_*` kernels, both waived for curated overloads), an argument
type no strategy draws, or a CPU kernel that rejected every one of `PROBE_TRIES` drawn argument sets
(probed in a forked child, so a crashing kernel is a reason too).

Computing it imports torch's op database (seconds) and probes CPU kernels (a minute), too slow for
registration time, where the list becomes the property's scenarios. So the answer for the installed
torch is packaged (`generated_overloads.json`), written by `python -m torchcts.coverage.generated
--refresh` and kept honest by a test that recomputes the target set and the schema reasons.
`generated_overloads()` reads it once per process; on another torch its names missing there are
dropped (docs/coverage/generated.md discusses the trade-off).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

PACKAGED = Path(__file__).with_name("generated_overloads.json")
GENERATED = "generated"
PROBE_TRIES = 15  # drawn argument sets a CPU kernel may reject before the overload counts as not generatable
PROBE_TIMEOUT_S = 30.0
MAX_PACKAGED_BYTES = 4 * 2**20
# Relevance rules whose overloads take other layouts than dense tensors: their suites' area (rule id -> reason).
LAYOUT_RULES = {"sparse-only": "sparse layouts only (the sparse suite's area)",
                "quantized-only": "quantized tensors only (no curated call for it: the quantized suites' area)",
                "nested-only": "nested tensors only (the nested suite's area)",
                "sparse-wrapper": "sparse layouts only, in the overload it wraps (the sparse suite's area)",
                "quantized-wrapper": ("quantized tensors only, in the overload it wraps (no curated call for it: the "
                                      "quantized suites' area)"),
                "nested-wrapper": "nested tensors only, in the overload it wraps (the nested suite's area)"}

# Packets (prefixes) whose CPU kernels segfault on drawn arguments they do not check: found by the probe or a
# validation run; every overload of such a packet is left out, since one crash takes a whole run down.
UNCHECKED_PACKETS = ("_fused_", "_cummax_helper", "_cummin_helper", "_batch_norm_no_update", "_weight_norm_interface",
                     "_linalg_eigvals", "_nested_from_padded", "_transform_bias_rescale_qkv", "_convert_indices_from_",
                     "range", "_foreach_copy", "_reshape_alias", "_new_zeros_with_same_feature_meta")


# Packets whose CPU kernel trusts its arguments' sizes, found by a clean faulty run of the drawn calls (out-of-bounds
# reads that answer one call two ways, aborts, segfaults): their cases come only from traced calls, whose shapes an
# OpInfo sample chose; without an accepted traced call they are not generated.
TRACED_ONLY_PACKETS = ("_log_softmax_backward_data", "_logcumsumexp", "_pdist_forward", "_stack",
                      # a kin call (`replication_pad2d_backward`'s, padding wider than the input) aborted CPU
                      "reflection_pad1d_backward", "reflection_pad2d_backward", "reflection_pad3d_backward")
SIZE_TRUSTING = ("cannot generate: a kernel that trusts its arguments' sizes (drawn calls crashed CPU or read out of "
                 "bounds), and no traced call of a sibling was accepted")


class GeneratedListError(Exception):
    """The packaged list cannot be read: the message names the file and what is wrong."""


# -- names -----------------------------------------------------------------------------------------

def split_name(name: str) -> tuple[str, str]:
    """("add_", "Tensor") of "aten.add_.Tensor"."""
    _, packet, overload = name.split(".", 2)
    return packet, overload


def resolve(name: str) -> Any:
    """The installed `torch.ops.aten.<packet>.<overload>`, or None when this torch has no such overload."""
    import torch

    packet, overload = split_name(name)
    try:
        return getattr(getattr(torch.ops.aten, packet), overload)
    except (AttributeError, RuntimeError):
        return None


def _readable(name: str) -> str:
    packet, overload = split_name(name)
    if packet.startswith("__") and packet.endswith("__"):
        packet = "dunder_" + packet.strip("_")
    else:
        packet = ("private_" if packet.startswith("_") else "") + packet.strip("_") + (
            "_inplace" if packet.endswith("_") else "")
    text = re.sub(r"[^a-z0-9]+", "_", f"{packet}_{overload}".lower()).strip("_")
    return text if text[:1].isalpha() else f"op_{text}"


def scenario_names(names: Iterable[str]) -> dict[str, str]:
    """overload name -> its lower_snake_case scenario name ("aten.add_.Tensor" -> "add_inplace_tensor"); names
    that would collide get a short hash of the overload name, so the map is one to one."""
    names = sorted(set(names))
    readable = {name: _readable(name) for name in names}
    counts: dict[str, int] = {}
    for text in readable.values():
        counts[text] = counts.get(text, 0) + 1
    return {name: text if counts[text] == 1 else f"{text}_{hashlib.sha256(name.encode()).hexdigest()[:6]}"
            for name, text in readable.items()}


# -- the packaged list -------------------------------------------------------------------------------

@functools.cache
def _packaged() -> tuple[dict[str, Any], dict[str, str], frozenset[str]]:
    """(metadata, overload -> status, the generated overloads whose cases come from traced calls) of the
    packaged file, checked; GeneratedListError names what is wrong."""
    try:
        text = PACKAGED.read_bytes()[:MAX_PACKAGED_BYTES + 1]
    except OSError as exc:
        raise GeneratedListError(f"{PACKAGED}: cannot read: {exc.strerror or exc}") from None
    if len(text) > MAX_PACKAGED_BYTES:
        raise GeneratedListError(f"{PACKAGED}: more than {MAX_PACKAGED_BYTES} bytes")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GeneratedListError(f"{PACKAGED}: not JSON: {exc}") from None
    overloads = data.get("overloads") if isinstance(data, dict) else None
    if not isinstance(overloads, dict) or not all(isinstance(k, str) and k.startswith("aten.") and k.count(".") >= 2
                                                  and isinstance(v, str) and v for k, v in overloads.items()):
        raise GeneratedListError(f"{PACKAGED}: `overloads` must map 'aten.<packet>.<overload>' names to "
                                 "'generated' or a reason")
    traced = data.get("from_traced_calls", [])
    if not isinstance(traced, list) or not all(overloads.get(name) == GENERATED for name in traced):
        raise GeneratedListError(f"{PACKAGED}: `from_traced_calls` must list overloads whose status is 'generated'")
    return dict(data.get("metadata") or {}), dict(sorted(overloads.items())), frozenset(traced)


@functools.cache
def generated_overloads() -> dict[str, str]:
    """Overload name -> "generated" or why it cannot be, for every relevant overload no OpInfo reaches by name
    (the packaged list, without the names this torch does not have)."""
    _, overloads, _ = _packaged()
    return {name: status for name, status in overloads.items() if resolve(name) is not None}


def from_traced_calls() -> frozenset[str]:
    """The generated overloads whose cases are OpInfo samples' calls of a sibling, rebound to them
    (`strategies/traced_calls.py`): their schema draws were all rejected in the probe."""
    return _packaged()[2]


def packaged_metadata() -> dict[str, Any]:
    """The torch version (and counts) the packaged list was computed for."""
    return _packaged()[0]


@functools.cache
def generated_scenarios() -> dict[str, str]:
    """scenario name -> overload name, for the overloads that get generated cases (the `dispatch` property's items)."""
    names = [name for name, status in generated_overloads().items() if status == GENERATED]
    return {scenario: name for name, scenario in scenario_names(names).items()}


# -- computing it --------------------------------------------------------------------------------------

def targets() -> dict[str, str]:
    """Every relevant overload no OpInfo reaches by name -> "generated" or a reason known without running it
    (a policy reason or an argument no strategy draws). Imports the op database: seconds."""
    from torchcts.coverage.inventory import load_inventory
    from torchcts.coverage.mapping import map_opinfos, opinfo_ops
    from torchcts.plan import registry
    from torchcts.strategies.curated_calls import curated
    from torchcts.strategies.schema_args import unsupported

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
    from torchcts.strategies.curated_calls import curated

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
    import torch
    from hypothesis.errors import InvalidArgument

    from torchcts.coverage.dispatch_calls import accepted_on_cpu, overload_cases

    try:
        cases = overload_cases(name, torch.float32, None, traced=traced)
    except InvalidArgument as exc:  # traced: no sibling call rebinds to it
        return f"cannot generate: {exc}"
    found, last = draw_accepted(cases, 1, accepted_on_cpu, seed=overload_seed(name), tries=tries)
    if found:
        return None
    return f"cannot generate: CPU's kernel rejected all {tries} drawn argument sets (last: {last or 'none drawn'})"


def traced_only(name: str) -> bool:
    """Whether `name`'s cases may come only from traced calls: a size-trusting packet's, without curated calls."""
    from torchcts.strategies.curated_calls import curated

    return split_name(name)[0] in TRACED_ONLY_PACKETS and not curated(name)


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
    import select

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
    import hypothesis
    from hypothesis import HealthCheck, Phase

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
    import torchcts.coverage.dispatch_calls  # noqa: F401 - imported once here, not in every forked child
    from torchcts.coverage.opinfo_trace import packaged
    from torchcts.strategies.traced_calls import kin, siblings

    donors = packaged()["donors"]
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
    import torchcts.coverage.dispatch_calls  # noqa: F401 - imported once here, not in every forked child

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
    from torchcts.strategies.curated_calls import curated

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
    import torch

    import torchcts

    generated = sum(status == GENERATED for status in overloads.values())
    metadata = {"torch": torch.__version__, "torchcts": torchcts.__version__, "targets": len(overloads),
                "generated": generated, "from_traced_calls": len(set(traced)), "probe_tries": PROBE_TRIES}
    content = {"metadata": metadata, "overloads": overloads, "from_traced_calls": sorted(set(traced))}
    from torchcts.disk import write_atomic

    write_atomic(path, json.dumps(content, indent=1, sort_keys=True) + "\n")


_USAGE = ("usage: python -m torchcts.coverage.generated --refresh | --refresh-traced\n"
          "  --refresh         recompute the whole list and package it (probes every target: tens of minutes)\n"
          "  --refresh-traced  bring the list to the installed torch's targets (static reasons, new targets probed),\n"
          "                    then re-probe, with traced calls, the overloads whose schema draws were all rejected")

if __name__ == "__main__":  # python -m torchcts.coverage.generated --refresh
    def _print(line: str) -> None:
        print(line, flush=True)

    if sys.argv[1:] == ["--refresh"]:
        write_packaged(*compute(progress=_print))
    elif sys.argv[1:] == ["--refresh-traced"]:
        _, listed, already = _packaged()
        traced = set(already)
        overloads = resync(dict(listed), traced, _print)
        for _name in overloads:
            if traced_only(_name) and overloads[_name] == GENERATED:  # re-probed with its own family's calls only
                overloads[_name] = SIZE_TRUSTING
                traced.discard(_name)
        probe_traced(overloads, traced, _print)
        write_packaged(overloads, traced)
    else:
        sys.exit(_USAGE)
