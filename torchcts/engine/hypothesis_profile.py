"""The Hypothesis settings a run's items draw with, and where each value comes from.

The manifest's `hypothesis` block is registered as the settings profile `torchcts-manifest`. A
profile named with `--hypothesis-profile` (or the `HYPOTHESIS_PROFILE` environment variable) goes
over it: each of its values that differs from Hypothesis's own default wins. Command-line flags go
over both. What decides which cases an item draws stays TorchCTS's, whatever the profile says: the
item's seed (`@seed`, from the item id when derandomized), no example database, the phases (all,
or no shrinking with `--no-shrink`), one failure per item, Hypothesis's own backend.
docs/harness.md ("Hypothesis settings") states the rules; `resolve` implements them once.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import os
from typing import Any, Callable, Iterator, Mapping

import attrs
import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity
from hypothesis.errors import InvalidArgument

MANIFEST_PROFILE = "torchcts-manifest"
PROFILE_ENV = "HYPOTHESIS_PROFILE"
# Always off: they time draws (a busy machine would fail what an idle one passes) or object to the
# large tensors and parametrized items TorchCTS draws on purpose.
HEALTH_CHECKS_OFF = ("too_slow", "data_too_large", "large_base_example", "differing_executors")
NO_SHRINK_PHASES = (Phase.explicit, Phase.generate)
STATISTICS_TEXT_CHARS = 4000
# Hypothesis's own engine (a profile's `backend`, e.g. crosshair, would draw other cases); older Hypothesis has one only
_OWN_BACKEND = {"backend": "hypothesis"} if "backend" in (hypothesis.settings.__init__.__kwdefaults__ or {}) else {}


class ProfileError(Exception):
    """A named profile that is not registered; the message names the registered ones."""


def register_manifest_profile(block: Any) -> None:
    """Register the manifest's `hypothesis` block (a `HypothesisSettings`) as `torchcts-manifest`,
    on Hypothesis's own defaults (not on whatever profile happens to be loaded)."""
    hypothesis.settings.register_profile(
        MANIFEST_PROFILE, parent=_hypothesis_defaults(), max_examples=block.max_examples,
        deadline=_deadline(block.deadline_ms), derandomize=block.derandomize, verbosity=Verbosity[block.verbosity],
        print_blob=block.print_blob, suppress_health_check=[HealthCheck[n] for n in block.suppress_health_check])


def registered_profiles() -> list[str]:
    return sorted(getattr(hypothesis.settings, "_profiles", {}))  # Hypothesis has no public listing


def named_profile(flag: str | None, environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """(the profile a user named, where: "--hypothesis-profile" or "HYPOTHESIS_PROFILE"), or (None, None).
    ProfileError when the name is not registered."""
    name, source = (flag, "--hypothesis-profile") if flag else (environ.get(PROFILE_ENV) or None, PROFILE_ENV)
    if name is None:
        return None, None
    try:
        hypothesis.settings.get_profile(name)
    except InvalidArgument:
        raise ProfileError(f"{source} {name!r} is not a registered Hypothesis settings profile; registered: "
                           f"{', '.join(registered_profiles())} (register profiles in the manifest's backend_import "
                           "module or an installed package's Hypothesis entry point)") from None
    return name, source


@attrs.frozen
class DrawSettings:
    """The settings a run's items draw with, as plain values (they travel into forked children), each
    with where it came from ("--max-examples", "profile NAME", "manifest")."""

    profile: str  # the profile the items' settings are built on: the named one, or torchcts-manifest
    named_by: str | None  # "--hypothesis-profile", "HYPOTHESIS_PROFILE", or None (no profile named)
    max_examples: int
    max_examples_from: str
    deadline_ms: float | None
    deadline_from: str
    verbosity: str
    print_blob: bool
    suppress_health_check: tuple[str, ...]  # TorchCTS's own and the manifest's and profile's
    profile_derandomizes: bool = False  # the named profile says derandomize=True
    show_statistics: bool = False

    def as_json(self, *, derandomize: bool, seed: int | None, shrink: bool) -> dict[str, Any]:
        """run.json's `hypothesis`: the settings actually used."""
        return {"profile": self.profile, "named_by": self.named_by, "max_examples": self.max_examples,
                "max_examples_from": self.max_examples_from, "deadline_ms": self.deadline_ms,
                "deadline_from": self.deadline_from, "derandomize": derandomize, "seed": seed,
                "phases": [p.name for p in phases(shrink)], "database": None, "report_multiple_bugs": False,
                "verbosity": self.verbosity, "print_blob": self.print_blob,
                "suppress_health_check": list(self.suppress_health_check), "show_statistics": self.show_statistics}

    def header(self, *, derandomize: bool, seed: int | None, shrink: bool) -> str:
        """The session header's line: the settings actually used."""
        profile = self.profile if self.named_by is None else \
            f"{self.profile} ({self.named_by}, over {MANIFEST_PROFILE})"
        deadline = "none" if self.deadline_ms is None else f"{self.deadline_ms:g} ms"
        draws = "derandomized (seeds from item ids)" if derandomize else f"seed {seed}"
        return (f"torchcts: hypothesis profile {profile}: max_examples {self.max_examples} ({self.max_examples_from}), "
                f"deadline {deadline} ({self.deadline_from}), {draws}, phases "
                f"{','.join(p.name for p in phases(shrink))}, database none, verbosity {self.verbosity}"
                + (", statistics recorded" if self.show_statistics else ""))


def resolve(block: Any, *, profile: str | None = None, named_by: str | None = None, max_examples: int | None = None,
            verbosity: str | None = None, show_statistics: bool = False) -> DrawSettings:
    """The run's draw settings: flags (`max_examples`, `verbosity`) > the named `profile`'s values that
    differ from Hypothesis's defaults > the manifest's block (`HypothesisSettings`, its defaults included)."""
    given = hypothesis.settings.get_profile(profile) if profile is not None else None
    defaults = _hypothesis_defaults()

    def pick(name: str, manifest_value: Any) -> tuple[Any, str]:
        if given is not None and getattr(given, name) != getattr(defaults, name):
            return getattr(given, name), f"profile {profile}"
        return manifest_value, "manifest"

    examples, examples_from = pick("max_examples", block.max_examples)
    if max_examples is not None:
        examples, examples_from = max_examples, "--max-examples"
    deadline, deadline_from = pick("deadline", _deadline(block.deadline_ms))
    chosen_verbosity, _ = pick("verbosity", Verbosity[block.verbosity])
    print_blob, _ = pick("print_blob", block.print_blob)
    checks = set(HEALTH_CHECKS_OFF) | set(block.suppress_health_check)
    checks |= {c.name for c in given.suppress_health_check} if given is not None else set()
    return DrawSettings(
        profile=profile or MANIFEST_PROFILE, named_by=named_by if profile else None, max_examples=examples,
        max_examples_from=examples_from, deadline_ms=None if deadline is None else deadline.total_seconds() * 1000,
        deadline_from=deadline_from, verbosity=verbosity or chosen_verbosity.name, print_blob=bool(print_blob),
        suppress_health_check=tuple(sorted(checks)), profile_derandomizes=bool(given is not None and given.derandomize),
        show_statistics=show_statistics)


def item_settings(draw: DrawSettings | None, *, max_examples: int, deadline_ms: float | None,
                  shrink: bool) -> hypothesis.settings:
    """The settings one item draws with. On the run's profile (`draw.profile`; Hypothesis's current
    profile when `draw` is None: fuzz and other front ends without one), with what TorchCTS owns set:
    no database, no Hypothesis derandomization (TorchCTS seeds each item), the phases, one failure
    per item, Hypothesis's own backend. Verbosity, print_blob and health checks come from `draw`."""
    parent, chosen = None, {}
    if draw is not None:
        parent = _profile_or_defaults(draw.profile)
        chosen = {"verbosity": Verbosity[draw.verbosity], "print_blob": draw.print_blob}
    checks = set(draw.suppress_health_check if draw is not None else HEALTH_CHECKS_OFF)
    return hypothesis.settings(
        parent, max_examples=max_examples, deadline=_deadline(deadline_ms), database=None, derandomize=False,
        phases=phases(shrink), report_multiple_bugs=False, **_OWN_BACKEND,
        suppress_health_check=sorted((HealthCheck[c] for c in checks), key=lambda c: c.name),
        **({"print_blob": False} if draw is None else chosen))


def phases(shrink: bool) -> tuple[Phase, ...]:
    return tuple(Phase) if shrink else NO_SHRINK_PHASES


@contextlib.contextmanager
def collecting_statistics(enabled: bool, store: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """While Hypothesis runs an item: hand its statistics to `store` (as `statistics_record`), and on to
    whoever collected them before (Hypothesis's pytest plugin, which prints them with
    --hypothesis-show-statistics). Does nothing unless `enabled`."""
    if not enabled:
        yield
        return
    from hypothesis.statistics import collector

    outer = collector.value

    def note(stats: dict[str, Any]) -> None:
        store(statistics_record(stats))
        if outer is not None:
            outer(stats)

    with collector.with_value(note):
        yield


def statistics_record(stats: Mapping[str, Any]) -> dict[str, Any]:
    """A record's `hypothesis_statistics`: test cases per phase by status, why Hypothesis stopped, and
    Hypothesis's own description (bounded)."""
    from hypothesis.statistics import describe_statistics

    by_phase = {}
    for phase in Phase:
        data = stats.get(f"{phase.name}-phase") or {}
        cases = data.get("test-cases") or []
        if not cases:
            continue
        statuses = collections.Counter(str(case.get("status")) for case in cases)
        entry = {"test_cases": len(cases), "passing": statuses["valid"], "failing": statuses["interesting"],
                 "invalid": statuses["invalid"] + statuses["overrun"],
                 "seconds": round(float(data.get("duration-seconds") or 0.0), 3)}
        if phase is Phase.shrink:
            entry["shrinks_successful"] = int(data.get("shrinks-successful") or 0)
        by_phase[phase.name] = entry
    try:
        text = describe_statistics(dict(stats))
    except Exception as exc:  # noqa: BLE001 - Hypothesis does not promise the format; the counts stand
        text = f"(Hypothesis could not describe its statistics: {type(exc).__name__})"
    return {"phases": by_phase, "stopped_because": str(stats.get("stopped-because") or ""),
            "text": text[:STATISTICS_TEXT_CHARS]}


def merge_statistics(first: dict[str, Any] | None, second: dict[str, Any]) -> dict[str, Any]:
    """An item whose check ran Hypothesis more than once: counts added per phase, texts joined."""
    if first is None:
        return second
    phases_sum = {name: dict(entry) for name, entry in first["phases"].items()}
    for name, entry in second["phases"].items():
        into = phases_sum.setdefault(name, {key: 0 for key in entry})
        for key, value in entry.items():
            into[key] = round(into.get(key, 0) + value, 3)
    return {"phases": phases_sum, "stopped_because": second["stopped_because"],
            "text": (first["text"] + "\n" + second["text"])[:STATISTICS_TEXT_CHARS]}


@attrs.define
class StatisticsTotals:
    """The run's Hypothesis statistics added up over its items' records, for one summary line."""

    items: int = 0
    counts: collections.Counter = attrs.field(factory=collections.Counter)

    def add(self, record: Mapping[str, Any]) -> None:
        stats = record.get("hypothesis_statistics")
        if not isinstance(stats, dict):
            return
        self.items += 1
        for name, entry in stats.get("phases", {}).items():
            for key in ("test_cases", "passing", "failing", "invalid"):
                self.counts[key] += entry.get(key, 0)
            if name == "shrink":
                self.counts["shrinks"] += entry.get("test_cases", 0)

    def line(self) -> str | None:
        if not self.items:
            return None
        c = self.counts
        return (f"torchcts: Hypothesis statistics: {self.items} items, {c['test_cases']} test cases ({c['passing']} "
                f"passing, {c['failing']} failing, {c['invalid']} invalid), {c['shrinks']} shrink attempts; per item "
                f"in records.jsonl (hypothesis_statistics)")


def _hypothesis_defaults() -> hypothesis.settings:
    """Hypothesis's built-in defaults: its `default` profile."""
    return hypothesis.settings.get_profile("default")


def _profile_or_defaults(name: str) -> hypothesis.settings:
    """A registered profile; Hypothesis's defaults where this process does not know it (a spawned worker)."""
    try:
        return hypothesis.settings.get_profile(name)
    except InvalidArgument:
        return _hypothesis_defaults()


def _deadline(ms: float | None) -> datetime.timedelta | None:
    return None if ms is None else datetime.timedelta(milliseconds=ms)
