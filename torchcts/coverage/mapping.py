"""Which aten overloads the tests reach by name: OpInfo properties, suite declarations, backend packs.

An OpInfo property reaches an overload when the OpInfo's name (or its `aten_name`, an alias, the
`linalg.x` -> `linalg_x` / `nn.functional.x` -> `x` spellings, a reflected dunder `__radd__` -> `add`, a
short table of renames: `float` -> `_to_copy`, `__or__` -> `bitwise_or`) is the overload's packet: the
function and method variants reach the packet's functional overloads, `inplace` reaches `<packet>_`,
`out` the packet's out= overloads, and a training property also the `<packet>_backward` packets.
With the packaged trace of the OpInfos' samples (`opinfo_trace`) a property also reaches what its
variant's samples dispatched (and a training property what their gradients dispatched).
Named-tensor overloads (a `Dimname` argument) are never reached this way. This is mapping, not measurement:
the dispatch trace (`evidence`) says what a run really reached. A suite reaches what its
`register_property(overloads=...)` declares (a packet means every overload).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable

import attrs

# imports inside functions: plan loads torch, and reading an audit (audit_check, through audit) runs without it

_DUNDER = re.compile(r"^__r?([a-z_]+?)__$")
_PREFIXES = {"torch.ops.aten.": "", "torch.": "", "nn.functional.": "", "linalg.": "linalg_", "special.": "special_",
             "fft.": "fft_", "sparse.": "sparse_"}
# OpInfo spellings whose aten packet is named otherwise (Python operators, conversions, renamed functions)
_RENAMES = {"and": ("bitwise_and",), "or": ("bitwise_or",), "xor": ("bitwise_xor",), "mod": ("remainder",),
            "getitem": ("index", "select", "slice"), "unique": ("_unique2",), "lu": ("linalg_lu_factor_ex",),
            "grid_sample": ("grid_sampler_2d", "grid_sampler_3d"), "cross_entropy": ("cross_entropy_loss",),
            "T": ("numpy_T",), "H": ("adjoint",), "interpolate": ("upsample_nearest1d", "upsample_nearest2d",
            "upsample_nearest3d", "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
            "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d",
            "upsample_trilinear3d", "_adaptive_avg_pool2d"),
            **{conversion: ("_to_copy",) for conversion in ("bfloat16", "bool", "byte", "char", "double", "float",
                                                             "half", "int", "long", "short", "cdouble", "cfloat")}}


@attrs.frozen
class Packets:
    """The installed overloads grouped by packet and form: functional, in-place (`<packet>_`) and out=."""

    functional: dict[str, tuple[str, ...]]
    out: dict[str, tuple[str, ...]]
    names: frozenset[str]

    @classmethod
    def of(cls, inventory: Iterable[Any]) -> "Packets":
        functional: dict[str, list[str]] = defaultdict(list)
        out: dict[str, list[str]] = defaultdict(list)
        names = set()
        for entry in inventory:
            names.add(entry.name)
            if "Dimname" in entry.schema:
                continue
            (out if is_out(entry.schema) else functional)[entry.packet].append(entry.name)
        return cls({k: tuple(v) for k, v in functional.items()}, {k: tuple(v) for k, v in out.items()},
                   frozenset(names))

    def expand(self, declared: str) -> tuple[str, ...]:
        """`aten.x.y` itself when installed; `aten.x` every installed overload of packet x; else ()."""
        if declared in self.names:
            return (declared,)
        packet = declared.removeprefix("aten.")
        return tuple(sorted(self.functional.get(packet, ()) + self.out.get(packet, ())))


def is_out(schema: str) -> bool:
    """An out= overload: a keyword-only argument the overload writes (`*, Tensor(a!) out`)."""
    arguments = schema.split(" -> ", 1)[0]
    return "*" in arguments and "!" in arguments[arguments.find("*"):]


def candidate_packets(op: Any) -> tuple[str, ...]:
    """The aten packet names an OpInfo's names spell, most specific first (not yet checked to exist)."""
    from torchcts.plan.op_metadata import alias_names

    names = [op.name, getattr(op, "aten_name", None) or op.name, *alias_names(op)]
    found: list[str] = []
    for name in names:
        for prefix, replacement in _PREFIXES.items():
            if name.startswith(prefix):
                name = replacement + name[len(prefix):]
                break
        if name.endswith(".default"):  # torch.ops.aten.<packet>.default
            name = name.removesuffix(".default")
        dunder = _DUNDER.match(name)
        spellings = [dunder.group(1), "r" + dunder.group(1)] if dunder else [name]
        spellings += [renamed for spelling in spellings for renamed in _RENAMES.get(spelling, ())]
        for spelling in spellings:
            spelling = spelling.replace(".", "_")
            if spelling not in found:
                found.append(spelling)
    return tuple(found)


@attrs.frozen
class OpInfoReach:
    """One OpInfo: the overloads each of its properties reaches by name, or why it reaches none."""

    op_id: str
    packets: tuple[str, ...]
    by_property: dict[str, tuple[str, ...]]  # property name -> overloads (by name, and by trace when given)
    reason: str = ""  # non-empty when it maps to no overload
    by_trace_only: frozenset[str] = frozenset()  # overloads only the trace of its samples credits

    @property
    def overloads(self) -> frozenset[str]:
        return frozenset(o for found in self.by_property.values() for o in found)


def _applies(spec: Any, op: Any) -> bool:
    """Whether the property's item source takes the OpInfo (an `OpMetadata` answers from the OpInfo cache)."""
    from torchcts.plan.op_metadata import OpMetadata, source_key

    if isinstance(op, OpMetadata):
        return op.answers[source_key(spec.items)] is not None  # type: ignore[index]
    try:
        return bool(spec.items.applies(op))
    except Exception:  # noqa: BLE001 - an applies= predicate that fails on an OpInfo: the property skips it
        return False


def _traced_for(spec: Any, traced: dict[str, tuple[str, ...]], names: frozenset[str]) -> set[str]:
    """What the traced phases of an OpInfo's samples credit to `spec`: its variant's phase, and backward for a
    training property (the installed overloads only)."""
    variant = spec.items.variant
    phases = ["function" if variant == "method" else variant] + (["backward"] if spec.capability == "training" else [])
    return {name for phase in phases for name in traced.get(phase, ()) if name in names}


def reach_of(op: Any, op_id: str, properties: Iterable[Any], packets: Packets,
             traced: dict[str, tuple[str, ...]] | None = None) -> OpInfoReach:
    """What the OpInfo properties that apply to `op` reach of the installed overloads: by name, and with
    `traced` (phase -> overloads its samples dispatched, `opinfo_trace`) also by measurement."""
    bases = [p for p in candidate_packets(op) if p in packets.functional or p in packets.out]
    by_property: dict[str, tuple[str, ...]] = {}
    named: set[str] = set()
    trace_only: set[str] = set()
    applying = [spec for spec in properties if not spec.scenario and _applies(spec, op)]
    for spec in applying:
        variant = spec.items.variant
        found: list[str] = []
        for base in bases:
            if variant == "inplace":
                found += packets.functional.get(base + "_", ())
            elif variant == "out":
                found += packets.out.get(base, ())
            else:
                found += packets.functional.get(base, ())
                if spec.capability == "training":
                    found += packets.functional.get(base + "_backward", ())
        named |= set(found)
        extra = _traced_for(spec, traced, packets.names) if traced else set()
        trace_only |= extra
        if found or extra:
            by_property[spec.name] = tuple(sorted(set(found) | extra))
    trace_only -= named
    reason = ""
    if not by_property:
        reason = _unmapped_reason(op, bases, applying)
    return OpInfoReach(op_id, tuple(bases), by_property, reason, frozenset(trace_only))


def _unmapped_reason(op: Any, bases: list[str], applying: list[Any]) -> str:
    if not applying:
        return "no OpInfo property applies to it"
    if bases:
        return (f"packet {', '.join(bases)} has no overload of the forms its properties call "
                f"({', '.join(sorted({s.items.variant for s in applying}))})")
    module = op.name.split(".")[0] if "." in op.name else "torch"
    return (f"no aten packet is named {' or '.join(candidate_packets(op))}: a Python-level composite "
            f"({module}) that dispatches other overloads")


def map_opinfos(ops: Iterable[Any], properties: Iterable[Any], inventory: Iterable[Any],
                traced: dict[str, dict[str, tuple[str, ...]]] | None = None) -> tuple[OpInfoReach, ...]:
    """Every OpInfo's reach (`ops` in database order, OpInfos or the cache's `OpMetadata`: `opinfo_ops`;
    `properties` the registered ones), by name only, or with `traced` (OpInfo id -> phase -> overloads,
    `opinfo_trace.traced_reach()`) by measurement too."""
    from torchcts.plan.catalog import op_id

    packets = Packets.of(inventory)
    specs = tuple(properties)
    return tuple(reach_of(op, op_id(op), specs, packets, (traced or {}).get(op_id(op))) for op in ops)


def opinfo_ops(properties: Iterable[Any]) -> Any:
    """The OpInfos to map for these properties: the OpInfo metadata cache's records when it answers every OpInfo
    property's item source (no op database import), else the op database's OpInfos."""
    from torchcts.plan.op_metadata import planning_ops

    return planning_ops([spec.items for spec in properties if not spec.scenario])


def declared_reach(properties: Iterable[Any], packets: Packets) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """property name -> the installed overloads its `overloads=` declares; and the declared names not installed."""
    reach: dict[str, tuple[str, ...]] = {}
    missing: list[str] = []
    for spec in properties:
        found: set[str] = set()
        for declared in spec.overloads:
            expanded = packets.expand(declared)
            if not expanded:
                missing.append(f"{spec.name}: {declared}")
            found.update(expanded)
        if found:
            reach[spec.name] = tuple(sorted(found))
    return reach, missing


def is_builtin(spec: Any) -> bool:
    """A property of the installed suites (not one loaded from a manifest's `custom_test_dirs`)."""
    from torchcts.plan.registry import CUSTOM_MODULE_PREFIX

    return not spec.module.startswith(CUSTOM_MODULE_PREFIX + ".")
