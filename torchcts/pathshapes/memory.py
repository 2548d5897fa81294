"""How much host memory a path-shapes item may take, and which tiers a run leaves out for it.

A corpus file is untrusted and `validate` accepts a `large` case of up to 4 GiB of operands and
results; running it holds many times that (the CPU operands and result, the device's copies, the
oracle's float64 comparison, gradients, and the op's own temporaries: a convolution's unfolded
input, attention's score matrix, a broadcast matmul's expanded operands). So before anything is
allocated:

- the budget is taken once, when the run starts: the memory available then (cgroup v2 limit of the
  process's own cgroup, /proc/meminfo MemAvailable, else sysconf, else an assumed
  `UNKNOWN_ASSUMED_BYTES`) plus the process's own resident memory then, capped by the manifest's
  `resource_limits.max_system_memory_mb`; every item is judged against that fixed budget, so the same
  corpus gets the same outcomes whatever the machine's load or the memory earlier items left behind;
- a tier is left out unless the run names it (`--tier T`) when the largest estimated peak among its
  items that would otherwise run does not fit (a case whose peak cannot be estimated counts as its
  tier's cap times `WORST_FACTOR`); its items are `runtime_unavailable`, the reason saying how to include it;
- every item, opted in or not, is refused when its own estimated peak does not fit.

The manifest's `max_device_memory_mb` and `max_tensor_size_mb` are checked per case by the runner.
`peak_bytes` is fixed overhead + `needed_bytes` x a factor that grows with the float64 widening of the
comparison + the op's temporaries x their own factor; every constant was measured (docs/path-shapes.md,
"Memory": CPU, torch 2.13, one intra-op thread, peak RSS over the RSS before the item) and set above the
largest ratio seen on the shipped corpus's families and on synthetic cases of each op family.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any, Iterable

import attrs
import torch

from torchcts.pathshapes.corpus import TIERS, Case, tensor_specs
from torchcts.pathshapes.inputs import build_arguments
from torchcts.pathshapes.ops import OPS

MiB = 1 << 20
UNKNOWN_ASSUMED_BYTES = 4 << 30  # when no source says how much memory is free
OVERHEAD_BYTES = 64 * MiB  # an item's first call: kernels' scratch, the autograd engine, the oracle's buffers
# needed_bytes x (constant + per_widening x widening), widening = 8 / the smallest operand itemsize (the
# comparison's float64 copies): the CPU and device copies, the comparison, the gradients.
NEEDED_FACTOR = {"forward": (12, 8), "backward": (12, 12)}
# the op's temporaries (`work_bytes`) x this, on top
WORK_FACTOR = {"conv": {"forward": 0.5, "backward": 0.5},
               "attention": {"forward": 1.0, "backward": 1.0},
               "attention_masked": {"forward": 2.0, "backward": 4.0},
               "broadcast_matmul": {"forward": 8.0, "backward": 8.0}}
WORST_FACTOR = NEEDED_FACTOR["backward"][0] + NEEDED_FACTOR["backward"][1] * 4  # a 2-byte dtype's gradients
CONV_OPS = frozenset({"conv1d", "conv2d", "conv_transpose2d"})
_MAX_CGROUP_DEPTH = 32


def peak_bytes(case: Case, backward: bool) -> int | None:
    """An estimate, measured to bound, of the host bytes one item of `case` holds at its peak; None when the
    case's shapes cannot be evaluated (the tier's cap applies)."""
    prop = "backward" if backward else "forward"
    itemsize = min((s.torch_dtype.itemsize for s in tensor_specs(case)), default=4)
    constant, per_widening = NEEDED_FACTOR[prop]
    needed = case.needed_bytes * (constant + per_widening * max(1, 8 // itemsize))
    work = work_bytes(case)
    if work is None:
        return None
    kind, nbytes = work
    return OVERHEAD_BYTES + needed + (int(nbytes * WORK_FACTOR[kind][prop]) if kind else 0)


def tier_peak_bytes(tier: str) -> int:
    """The fallback bound for an item of `tier` whose peak cannot be estimated: its cap times the worst factor."""
    return OVERHEAD_BYTES + TIERS[tier] * WORST_FACTOR


@functools.lru_cache(maxsize=4096)
def work_bytes(case: Case) -> tuple[str, int] | None:
    """(kind, bytes) of the temporaries the op builds beyond its operands and results, from one call on meta
    tensors ("", 0 for ops without any worth counting); None when the shapes cannot be evaluated.

    conv: the unfolded input (im2col columns) of the whole batch, in at least float32:
    batch x in-channels x kernel area x output positions (transposed: out-channels x input positions);
    attention: the score matrix (batch x heads x queries x keys, float32), and the keys and values expanded
    to the queries' heads under enable_gqa; a broadcast matmul: both operands expanded to the batch shape.
    """
    try:
        args, kwargs = build_arguments(case, "meta", None)
        if case.op in CONV_OPS:
            return "conv", _conv_columns(case.op, args, kwargs, OPS[case.op].fn(*args, **kwargs))
        if case.op == "scaled_dot_product_attention":
            return _attention(args, kwargs)
        if case.op == "matmul" and min(args[0].dim(), args[1].dim()) >= 3:
            return "broadcast_matmul", _broadcast_matmul(args[0], args[1])
    except Exception:  # noqa: BLE001 - shapes torch rejects: no estimate (validate reports them)
        return None
    return "", 0


def _conv_columns(op: str, args: list[Any], kwargs: dict[str, Any], result: torch.Tensor) -> int:
    source, weight = args[0], args[1]
    groups = kwargs.get("groups", args[6] if len(args) > 6 else 1)  # the 7th parameter of all three ops
    spatial = weight.dim() - 2
    batch = math.prod(source.shape[:-(spatial + 1)]) if source.dim() > spatial + 1 else 1
    kernel = math.prod(weight.shape[2:])
    itemsize = max(4, source.element_size())
    if op == "conv_transpose2d":
        return batch * weight.shape[1] * int(groups) * kernel * math.prod(source.shape[-spatial:]) * itemsize
    return batch * weight.shape[1] * int(groups) * kernel * math.prod(result.shape[-spatial:]) * itemsize


def _attention(args: list[Any], kwargs: dict[str, Any]) -> tuple[str, int]:
    query, key = args[0], args[1]
    scores = math.prod(query.shape[:-1]) * key.shape[-2] * 4
    expanded = 2 * math.prod(query.shape[:-2]) * key.shape[-2] * key.shape[-1] * key.element_size() \
        if kwargs.get("enable_gqa") else 0
    masked = kwargs.get("attn_mask") is not None or (len(args) > 3 and args[3] is not None)
    return ("attention_masked" if masked else "attention"), scores + expanded


def _broadcast_matmul(a: torch.Tensor, b: torch.Tensor) -> int:
    batch = math.prod(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    expanded = batch * (a.shape[-2] * a.shape[-1] + b.shape[-2] * b.shape[-1]) * a.element_size()
    return max(0, expanded - a.numel() * a.element_size() - b.numel() * b.element_size())


def available_host_bytes(cgroup_root: Path = Path("/sys/fs/cgroup"),
                         self_cgroup: Path = Path("/proc/self/cgroup"),
                         meminfo: Path = Path("/proc/meminfo")) -> tuple[int | None, str]:
    """(bytes of host memory free for this process, where the number comes from); (None, why) when unknown."""
    found = []
    free = _meminfo_available(meminfo)
    if free is not None:
        found.append((free, "/proc/meminfo MemAvailable"))
    cgroup = cgroup_available(cgroup_root, self_cgroup)
    if cgroup is not None:
        found.append(cgroup)
    if not found:
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "sysconf SC_AVPHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return None, "no source (/proc/meminfo, cgroup, sysconf) says"
    return min(found)


def _meminfo_available(path: Path) -> int | None:
    return _proc_field(path, "MemAvailable")


def process_resident_bytes(status: Path = Path("/proc/self/status")) -> int:
    """This process's resident memory now (VmRSS), 0 when unknown."""
    return _proc_field(status, "VmRSS") or 0


def _proc_field(path: Path, field: str) -> int | None:
    """A `Name:   N kB` field of a /proc file, in bytes."""
    try:
        with open(path, "rb") as stream:
            for line in stream.read(64 * 1024).decode("ascii", "replace").splitlines():
                name, _, value = line.partition(":")
                if name == field:
                    number, _, unit = value.strip().partition(" ")
                    return int(number) * 1024 if number.isascii() and number.isdigit() and unit == "kB" else None
    except OSError:
        pass
    return None


def cgroup_available(root: Path = Path("/sys/fs/cgroup"),
                     self_cgroup: Path = Path("/proc/self/cgroup")) -> tuple[int, str] | None:
    """(memory.max less memory.current, which cgroup) of the tightest limited cgroup v2 among the process's own
    (its `0::PATH` line in /proc/self/cgroup) and its ancestors up to `root`; the root's own files when the
    process's cgroup is not found; None when no limit is set or readable."""
    folders = [root]
    relative = _own_cgroup(self_cgroup)
    if relative is not None:
        folder = root.joinpath(*relative)
        folders = [folder, *folder.parents][:len(relative) + 1]
    limits = []
    for folder in folders:
        limit, current = _number(folder / "memory.max"), _number(folder / "memory.current")
        if limit is not None and current is not None:
            limits.append((max(0, limit - current), f"the cgroup's memory.max less memory.current ({folder})"))
    return min(limits) if limits else None


def _own_cgroup(self_cgroup: Path) -> tuple[str, ...] | None:
    """The parts of the process's cgroup v2 path (the `0::/a/b` line), None when absent or unsafe."""
    try:
        with open(self_cgroup, "rb") as stream:
            text = stream.read(16 * 1024).decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::/"):
            parts = tuple(p for p in line[3:].split("/") if p)
            if len(parts) > _MAX_CGROUP_DEPTH or any(p in (".", "..") or "\x00" in p for p in parts):
                return None
            return parts
    return None


def _number(path: Path) -> int | None:
    """A cgroup file holding one integer; None for "max" (no limit), unreadable or anything else."""
    try:
        with open(path, "rb") as stream:
            text = stream.read(40).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isascii() and text.isdigit() else None


@attrs.frozen
class MemoryBudget:
    """The host memory a run may use, taken once at its start, and the manifest's limit; `opted_in` tiers are
    never left out whole; `tiers_left_out` is set by `judging` from the run's items."""

    host_bytes: int | None  # available at the start; None: unknown (UNKNOWN_ASSUMED_BYTES applies)
    host_source: str
    system_limit_mb: float | None = None  # resource_limits.max_system_memory_mb
    opted_in: tuple[str, ...] = ()  # --tier: the tiers the user named
    process_bytes: int = 0  # the process's own resident memory at the start
    tiers_left_out: dict[str, str] | None = None  # tier -> why; None until `judging`

    @classmethod
    def detect(cls, manifest: Any = None, opted_in: tuple[str, ...] = ()) -> "MemoryBudget":
        """The machine's available memory and this process's resident memory now, with the manifest's limit."""
        host, source = available_host_bytes()
        limits = getattr(manifest, "resource_limits", None)
        return cls(host, source, getattr(limits, "max_system_memory_mb", None), tuple(opted_in),
                   process_resident_bytes())

    def limit(self) -> tuple[int, str]:
        """(bytes an item may hold at its peak, over what the process held at the start; what sets it): the
        memory available at the start, capped by max_system_memory_mb."""
        known = (self.host_bytes, f"the memory available at the start ({self.host_source})") \
            if self.host_bytes is not None else \
            (UNKNOWN_ASSUMED_BYTES, f"the memory assumed available ({self.host_source})")
        if self.system_limit_mb is not None and self.system_limit_mb * MiB < known[0]:
            return int(self.system_limit_mb * MiB), f"resource_limits.max_system_memory_mb {self.system_limit_mb:g}"
        return known

    def judging(self, items: Iterable[tuple[Case, bool]]) -> "MemoryBudget":
        """This budget with `tiers_left_out` set: the tiers, none opted in, where the largest estimated peak of
        the (case, backward) items that would otherwise run does not fit."""
        limit, why = self.limit()
        worst: dict[str, tuple[int, Case]] = {}
        for case, backward in items:
            if case.tier in self.opted_in:
                continue
            peak = peak_bytes(case, backward)
            peak = tier_peak_bytes(case.tier) if peak is None else peak
            if case.tier not in worst or peak > worst[case.tier][0]:
                worst[case.tier] = (peak, case)
        left = {tier: (f"tier {tier} (its largest item, {case.id}, needs about {peak // MiB} MiB at its peak) is "
                       f"above {why}, {limit // MiB} MiB; include it with --tier {tier}")
                for tier, (peak, case) in sorted(worst.items(), key=lambda kv: list(TIERS).index(kv[0]))
                if peak > limit}
        return attrs.evolve(self, tiers_left_out=left)

    def left_out_tiers(self) -> dict[str, str]:
        """tier -> why the run leaves it out by default ({} until `judging`)."""
        return dict(self.tiers_left_out or {})

    def item_refusal(self, case: Case, backward: bool) -> str | None:
        """Why the item must not run (its estimated peak is above the budget), or None."""
        peak = peak_bytes(case, backward)
        peak = tier_peak_bytes(case.tier) if peak is None else peak
        limit, why = self.limit()
        if peak <= limit:
            return None
        return (f"tier {case.tier}: needs about {peak / MiB:.0f} MiB at its peak ({case.needed_bytes / MiB:.1f} MiB "
                f"of operands and results), above {why}, {limit / MiB:.0f} MiB; not allocated")

    def as_json(self) -> dict[str, Any]:
        """run.json's `memory`: the budget taken at the start and the tiers left out."""
        limit, why = self.limit()
        return {"available_bytes": self.host_bytes, "source": self.host_source,
                "process_resident_bytes": self.process_bytes,
                "budget_bytes": (self.host_bytes if self.host_bytes is not None else UNKNOWN_ASSUMED_BYTES)
                + self.process_bytes, "limit_bytes": limit, "limited_by": why,
                "opted_in_tiers": list(self.opted_in), "tiers_left_out": self.left_out_tiers()}
