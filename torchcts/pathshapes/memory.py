"""How much host memory a path-shapes item may take, and which tiers a run leaves out for it.

A corpus file is untrusted and `validate` accepts a `large` case of up to 4 GiB of operands and
results; running it holds many times that (the CPU operands and result, the device's copies, the
oracle's float64 comparison, gradients). So before anything is allocated:

- a tier whose worst case (its cap times the largest peak factor) does not fit the run's memory
  budget is left out unless the run names it (`--tier T`): its items are `runtime_unavailable`,
  the reason saying how to include it;
- every item, opted in or not, is refused when its own estimated peak does not fit the memory
  available just before it runs.

The budget is the host's available memory (cgroup v2 limit, /proc/meminfo MemAvailable, else
sysconf, else an assumed `UNKNOWN_ASSUMED_BYTES`), capped by the manifest's
`resource_limits.max_system_memory_mb` (the device side's `max_device_memory_mb` and `max_tensor_size_mb`
are checked per case by the runner, against the case's own bytes).
The peak factors were measured on CPU (torch 2.13, ru_maxrss over the import baseline): 9.4x
`needed_bytes` for a float32 add, 16.9x for a float16 add (the comparison widens to float64), 12.5x
for a float32 matmul's gradients; `peak_bytes` stays above each.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from torchcts.pathshapes.corpus import TIERS, Case, tensor_specs

MiB = 1 << 20
UNKNOWN_ASSUMED_BYTES = 4 << 30  # when no source says how much memory is free
_BASE_FACTOR = 3  # operands and result on CPU and their device copies
_WIDENING_FACTOR = {"forward": 4, "backward": 5}  # per float64-widening ratio: the comparison's copies (+ gradients)
WORST_FACTOR = _BASE_FACTOR + _WIDENING_FACTOR["backward"] * 4  # a 2-byte dtype's gradients: 23x


def peak_bytes(case: Case, backward: bool) -> int:
    """A bound on the host bytes one item of `case` holds at its peak (`needed_bytes` times a measured factor)."""
    itemsize = min((s.torch_dtype.itemsize for s in tensor_specs(case)), default=4)
    widening = max(1, 8 // itemsize)
    return case.needed_bytes * (_BASE_FACTOR + _WIDENING_FACTOR["backward" if backward else "forward"] * widening)


def tier_peak_bytes(tier: str) -> int:
    """A bound on the host bytes any item of `tier` may hold: its cap times the worst factor."""
    return TIERS[tier] * WORST_FACTOR


def available_host_bytes() -> tuple[int | None, str]:
    """(bytes of host memory free for this process, where the number comes from); (None, why) when unknown."""
    found = []
    meminfo = _meminfo_available()
    if meminfo is not None:
        found.append((meminfo, "/proc/meminfo MemAvailable"))
    cgroup = _cgroup_available()
    if cgroup is not None:
        found.append((cgroup, "the cgroup's memory.max less memory.current"))
    if not found:
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "sysconf SC_AVPHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return None, "no source (/proc/meminfo, cgroup, sysconf) says"
    return min(found)


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as stream:
            for line in stream.read(64 * 1024).decode("ascii", "replace").splitlines():
                name, _, value = line.partition(":")
                if name == "MemAvailable":
                    number, _, unit = value.strip().partition(" ")
                    return int(number) * 1024 if number.isascii() and number.isdigit() and unit == "kB" else None
    except OSError:
        pass
    return None


def _cgroup_available() -> int | None:
    folder = Path("/sys/fs/cgroup")
    try:
        limit = (folder / "memory.max").read_text(encoding="ascii")[:40].strip()
        current = (folder / "memory.current").read_text(encoding="ascii")[:40].strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not (limit.isascii() and limit.isdigit() and current.isascii() and current.isdigit()):
        return None  # "max": no limit
    return max(0, int(limit) - int(current))


@attrs.frozen
class MemoryBudget:
    """The host memory a run may use and the manifest's limits; `opted_in` tiers are never left out whole."""

    host_bytes: int | None  # None: unknown (UNKNOWN_ASSUMED_BYTES applies)
    host_source: str
    system_limit_mb: float | None = None  # resource_limits.max_system_memory_mb
    opted_in: tuple[str, ...] = ()  # --tier: the tiers the user named

    @classmethod
    def detect(cls, manifest: Any = None, opted_in: tuple[str, ...] = ()) -> "MemoryBudget":
        """The machine's available memory now, with the manifest's limits."""
        host, source = available_host_bytes()
        limits = getattr(manifest, "resource_limits", None)
        return cls(host, source, getattr(limits, "max_system_memory_mb", None), tuple(opted_in))

    def limit(self, host_bytes: int | None = None) -> tuple[int, str]:
        """(bytes the run may hold now, what sets it): the available memory (`host_bytes`, else the detected),
        capped by max_system_memory_mb."""
        host = host_bytes if host_bytes is not None else self.host_bytes
        known = (host, f"the memory available ({self.host_source})") if host is not None else \
            (UNKNOWN_ASSUMED_BYTES, f"the memory assumed available ({self.host_source})")
        if self.system_limit_mb is not None and self.system_limit_mb * MiB < known[0]:
            return int(self.system_limit_mb * MiB), \
                f"resource_limits.max_system_memory_mb {self.system_limit_mb:g}"
        return known

    def left_out_tiers(self) -> dict[str, str]:
        """tier -> why the run leaves it out by default (none named by --tier)."""
        limit, why = self.limit()
        left = {}
        for tier, cap in TIERS.items():
            if tier not in self.opted_in and tier_peak_bytes(tier) > limit:
                left[tier] = (f"tier {tier} (up to {cap // MiB} MiB of operands and results, up to "
                              f"{tier_peak_bytes(tier) // MiB} MiB at its peak) is above {why}, {limit // MiB} MiB; "
                              f"include it with --tier {tier}")
        return left

    def item_refusal(self, case: Case, backward: bool) -> str | None:
        """Why the item must not run now (its estimated peak is above the memory it may use), or None."""
        peak = peak_bytes(case, backward)
        limit, why = self.limit(available_host_bytes()[0] if self.host_bytes is not None else None)
        if peak <= limit:
            return None
        return (f"tier {case.tier}: needs about {peak / MiB:.0f} MiB at its peak ({case.needed_bytes / MiB:.1f} MiB "
                f"of operands and results), above {why}, {limit / MiB:.0f} MiB; not allocated")

    def as_json(self) -> dict[str, Any]:
        """run.json's `memory`: the budget at the start and the tiers left out."""
        limit, why = self.limit()
        return {"available_bytes": self.host_bytes, "source": self.host_source, "limit_bytes": limit,
                "limited_by": why, "opted_in_tiers": list(self.opted_in), "tiers_left_out": self.left_out_tiers()}
