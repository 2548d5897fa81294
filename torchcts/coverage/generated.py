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
torch is packaged (`generated_overloads.json`), written by `python -m torchcts.coverage.generated_compute
--refresh` (which computes it) and kept honest by a test that recomputes the target set and the schema reasons.
`generated_overloads()` reads it once per process; on another torch its names missing there are
dropped (docs/coverage/generated.md discusses the trade-off).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable

from torchcts.core.overload_names import split_name

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

SIZE_TRUSTING = ("cannot generate: a kernel that trusts its arguments' sizes (drawn calls crashed CPU or read out of "
                 "bounds), and no traced call of a sibling was accepted")


class GeneratedListError(Exception):
    """The packaged list cannot be read: the message names the file and what is wrong."""


# -- names -----------------------------------------------------------------------------------------

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
    from torchcts.strategies.overloads import resolve  # torch: reading the list's metadata does not need it

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


def traced_only(name: str) -> bool:
    """Whether `name`'s cases may come only from traced calls: a size-trusting packet's, without curated calls."""
    from torchcts.strategies.curated_calls import curated  # lazy: reading the list loads no strategies
    from torchcts.strategies.traced_calls import TRACED_ONLY_PACKETS  # lazy: as above

    return split_name(name)[0] in TRACED_ONLY_PACKETS and not curated(name)
