"""Every aten overload of the installed torch, with its schema, tags, kernels and relevance.

The list comes from the dispatcher (`torch._C._dispatch_get_all_op_names`), so it holds exactly
the overloads a backend can be asked to run (about 3,100 on torch 2.13); TorchScript-only builtins
that `torch.ops.aten` also exposes (`aten.add.int`) never reach a dispatcher and are only counted.
Each private torch API is guarded: on a torch that lacks one, the field it feeds degrades (no tags,
no decomposition, kernels queried one at a time or unknown) and the inventory is still built.
Built once per process (about a second after `import torch`).
"""

from __future__ import annotations

import functools
import platform
from collections import Counter
from typing import Any, Callable

import attrs

from torchcts.coverage import relevance

SCHEMA_VERSION = 1  # of inventory.json


@attrs.frozen
class Overload:
    """One aten overload: `name` is `str(OpOverload)` ("aten.add.Tensor", "aten.abs.default")."""

    name: str
    packet: str
    overload: str
    schema: str
    tags: tuple[str, ...]
    kernels: tuple[str, ...]
    decomposition: bool
    relevant: bool
    rule: str  # "rule-id: why", one line; relevance.RULES documents each
    capability: str | None = None  # the manifest capability a layout-only overload belongs to

    @property
    def rule_id(self) -> str:
        """The deciding rule's id, the part of `rule` before ":" ("composite-implicit"), for counts per rule."""
        return self.rule.split(":", 1)[0]

    def to_json(self) -> dict[str, Any]:
        """The overload as the inventory document's JSON object (tuples as lists)."""
        return attrs.asdict(self, recurse=False) | {"tags": list(self.tags), "kernels": list(self.kernels)}


def overload_name(dispatcher_name: str) -> tuple[str, str, str]:
    """("aten.add.Tensor", "add", "Tensor") for "aten::add.Tensor"; "aten::abs" is overload "default"."""
    packet, _, overload = dispatcher_name.removeprefix("aten::").partition(".")
    overload = overload or "default"
    return f"aten.{packet}.{overload}", packet, overload


def _guard(default: Any) -> Callable:
    """A missing or changed private API degrades one field to `default`, never fails the inventory."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def guarded(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception:  # noqa: BLE001 - any failure of a private torch API means "unknown"
                return default
        return guarded
    return wrap


@_guard(None)
def _registrations() -> dict[str, frozenset[str]] | None:
    """Dispatch key -> dispatcher names with a kernel for it: one query per key (fast), or None."""
    import torch

    table = {}
    for key in relevance.KERNEL_KEYS:
        try:
            table[key] = frozenset(torch._C._dispatch_get_registrations_for_dispatch_key(key))
        except RuntimeError:  # a key this torch does not know
            continue
    return table


def _kernels_one_by_one(dispatcher_name: str) -> tuple[str, ...] | None:
    """The slower per-overload query, for a torch without `_dispatch_get_registrations_for_dispatch_key`."""
    import torch

    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        return None
    found = []
    for key in relevance.KERNEL_KEYS:
        try:
            if has(dispatcher_name, key):
                found.append(key)
        except RuntimeError:
            continue
    return tuple(found)


@_guard(frozenset())
def _decomposed() -> frozenset[str]:
    from torch._decomp import decomposition_table

    return frozenset(str(op) for op in decomposition_table)


@_guard(())
def _tags(op: Any) -> tuple[str, ...]:
    return tuple(sorted(tag.name for tag in op.tags))


def _schema(op: Any, dispatcher_name: str) -> str:
    try:
        return str(op._schema)
    except Exception:  # noqa: BLE001 - a schema that cannot be printed is still an overload
        return dispatcher_name


def _dispatcher_names() -> list[str]:
    """"aten::add.Tensor", ... from the dispatcher; on a torch without that query, from the schema
    registry (which also holds TorchScript builtins: more names, none missing)."""
    import torch

    for query in ("_dispatch_get_all_op_names", "_get_all_op_names"):
        names = getattr(torch._C, query, None)
        if names is not None:
            return sorted(n for n in names() if n.startswith("aten::"))
    schemas = torch._C._jit_get_all_schemas()
    return sorted({f"{s.name}.{s.overload_name}" if s.overload_name else s.name
                   for s in schemas if s.name.startswith("aten::")})


def _wrapper_facts(found: list[tuple]) -> dict[str, relevance.Facts]:
    """name -> the facts its rule is decided on: its packet and kernels, and for a codegen wrapper the facts of
    the overload it calls, themselves a wrapper's facts where that one is a wrapper too (`_philox_normal.out` ->
    `_philox_normal.default` -> `_philox_normal_.default`)."""
    by_name = {name: (packet, kernels, tags) for name, packet, _, _, _, kernels, tags in found}
    names = frozenset(by_name)
    facts: dict[str, relevance.Facts] = {}

    def of(name: str, depth: int = 0) -> relevance.Facts:
        if name not in facts:
            packet, kernels, tags = by_name[name]
            base = relevance.wrapper_of(name, tags, kernels, names) if kernels is not None and depth < 4 else None
            facts[name] = relevance.Facts(packet, frozenset(kernels or ()), kernels is not None,
                                          of(base, depth + 1) if base is not None else None)
        return facts[name]

    for name in by_name:
        of(name)
    return facts


@functools.cache
def load_inventory() -> tuple[Overload, ...]:
    """Every aten overload the dispatcher knows, sorted by name; cached per process."""
    import torch

    registrations = _registrations()
    decomposed = _decomposed()
    found = []  # (name, packet, overload, dispatcher name, op, kernels or None, tags)
    for dispatcher_name in _dispatcher_names():
        name, packet, overload = overload_name(dispatcher_name)
        try:
            op = getattr(getattr(torch.ops.aten, packet), overload)
        except (AttributeError, RuntimeError):
            op = None
        if registrations is not None:
            kernels = tuple(k for k in relevance.KERNEL_KEYS if dispatcher_name in registrations.get(k, ()))
        else:
            kernels = _kernels_one_by_one(dispatcher_name)
        found.append((name, packet, overload, dispatcher_name, op, kernels, _tags(op) if op is not None else ()))
    facts = _wrapper_facts(found)
    entries = []
    for name, packet, overload, dispatcher_name, op, kernels, tags in found:
        rule = relevance.decide(facts[name])
        entries.append(Overload(
            name=name, packet=packet, overload=overload,
            schema=_schema(op, dispatcher_name) if op is not None else dispatcher_name,
            tags=tags, kernels=kernels or (),
            decomposition=name in decomposed, relevant=rule.relevant, rule=rule.text,
            capability=rule.capability))
    return tuple(sorted(entries, key=lambda e: e.name))


@functools.cache
def inventory_names() -> frozenset[str]:
    """The names of `load_inventory()`, for membership tests (stale exclusions, evidence)."""
    return frozenset(entry.name for entry in load_inventory())


@_guard(None)
def _torchscript_only() -> int:
    """Overloads `torch.ops.aten` exposes that the dispatcher does not (TorchScript builtins)."""
    import torch

    known = set(_dispatcher_names())
    packets = {n.removeprefix("aten::").partition(".")[0] for n in known}
    count = 0
    for packet in packets:
        for overload in getattr(torch.ops.aten, packet).overloads():
            name = f"aten::{packet}" + ("" if overload == "default" else f".{overload}")
            count += name not in known
    return count


def inventory_metadata() -> dict[str, Any]:
    """What the inventory was built from (versions) and its counts, overall and per rule."""
    import torch

    import torchcts

    entries = load_inventory()
    rules = Counter(entry.rule_id for entry in entries)
    return {
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None),
        "torchcts": torchcts.__version__,
        "python": platform.python_version(),
        "counts": {
            "overloads": len(entries),
            "relevant": sum(entry.relevant for entry in entries),
            "not_relevant": sum(not entry.relevant for entry in entries),
            "decomposition": sum(entry.decomposition for entry in entries),
            "torchscript_only": _torchscript_only(),
            "per_rule": {rule.id: rules.get(rule.id, 0) for rule in relevance.RULES},
        },
    }
