"""Running path-shapes cases on a device against the CPU oracle, into a normal run folder.

Why not the pytest engine: a path-shapes case is a fixed call (its shapes are the point), so it draws
no Hypothesis strategy and has nothing to shrink; its `budget` seeded value draws (`inputs.draw_seed`)
are the whole case. The runner keeps the engine's contracts instead: the outcome vocabulary
(`torchcts.core.outcomes`), the oracle's tolerance model and comparison (`engine.oracle`), and the result
record and run folder (`results.writer.RunWriter`), so `torchcts report --from` reads it like any run.

Each case is two items: `path_shapes` compares the forward result (values, and strides for pointwise
ops), and `path_shapes_backward` compares the gradients of every floating operand under fixed
seeded cotangents (`training`, level 4, as the OpInfo `backward` property). Every item gets one
record. Items the run does not execute are accounted with a reason: the
selection (`deselected`), a level above the manifest's (`level_filtered`), an op in its `skip_ops`
(`op_excluded`), a dtype it does not claim (`dtype_*`), a tier past its `resource_limits`
(`runtime_unavailable`, naming the limit), a tier whose largest item does not fit the host's memory, not named with
`--tier`, or an item whose estimated peak does not fit the memory budget taken at the run's start
(`runtime_unavailable`, `memory.MemoryBudget`), a backward item without the `training` capability
(`capability_not_declared`); a case with no floating operand has no backward item. A waiver never
changes an outcome: the record carries `waiver` and the summary counts waived problems apart; an
expired waiver is ignored with a warning.

Executing one item's draws and comparing them with CPU (`run_case`, `run_backward`) is `pathshapes.compare`; this
module decides which items run and writes the run folder.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.disk import WriteError
from torchcts.manifest.model import DtypeStatus
from torchcts.core.outcomes import PROBLEMS, Outcome
from torchcts.pathshapes.compare import floating_specs, run_backward, run_case  # noqa: F401  (run_*: re-exported)
from torchcts.pathshapes.corpus import TIERS, Case, Corpus
from torchcts.pathshapes.memory import MemoryBudget
from torchcts.plan.build import DTYPE_NOT_RUN
from torchcts.plan.effective import run_claims
from torchcts.plan.selection import Selection as PlanSelection
from torchcts.results.writer import RunWriter, hardware_key

PROPERTY = "path_shapes"
BACKWARD = "path_shapes_backward"
BACKWARD_LEVEL = 4  # the OpInfo backward property's level: gradients are a `training` claim
BACKWARD_CAPABILITY = "training"
PROPERTY_CAPABILITIES = {PROPERTY: "inference", BACKWARD: BACKWARD_CAPABILITY}
MiB = 1 << 20


@attrs.frozen
class Selection:
    """The run's filters (empty: everything)."""

    families: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    levels: tuple[int, ...] = ()
    ids: tuple[str, ...] = ()

    def excludes(self, case: Case) -> str | None:
        """Why the selection leaves `case` out, or None."""
        for flag, wanted, value in (("--family", self.families, case.family), ("--tier", self.tiers, case.tier),
                                    ("--level", self.levels, case.level), ("--id", self.ids, case.id)):
            if wanted and value not in wanted:
                return f"not selected by {flag} {' '.join(map(str, wanted))}"
        return None


@attrs.frozen
class RunSettings:
    """What every case of a run shares. `manifest` None claims everything and sets no limits."""

    device: str
    manifest: Any = None
    validation: bool = False
    selection: Selection = Selection()
    today: datetime.date = attrs.field(factory=datetime.date.today)
    level: int | None = None  # --level: the run's depth, over the manifest's semantic_level (None: the manifest's)
    compile: Any = None  # the device side's `engine.compile_target.CompileSpec` (--compile); None: eager
    memory: Any = None  # `memory.MemoryBudget`: host memory and the tiers opted into; None: `run_corpus` detects it


@attrs.frozen
class RunSummary:
    run_folder: Path
    counts: dict[str, int]
    waived_problems: int
    unwaived_problems: int
    warnings: tuple[str, ...]
    duration_s: float


def item_id(case: Case, prop: str = PROPERTY) -> str:
    return f"{prop}::{case.op}::{case.id}::{case.dtype}"


def properties_of(case: Case) -> tuple[str, ...]:
    """The items of `case`: forward always, backward when it has a floating operand to differentiate."""
    return (PROPERTY, BACKWARD) if floating_specs(case) else (PROPERTY,)


def not_run_reason(case: Case, settings: RunSettings, prop: str = PROPERTY) -> tuple[Outcome, str] | None:
    """The accounting outcome and reason of an item (`prop` of `case`) the run does not execute, or None to
    execute it."""
    why = settings.selection.excludes(case)
    if why:
        return Outcome.DESELECTED, why
    manifest = settings.manifest
    level = max(case.level, BACKWARD_LEVEL) if prop == BACKWARD else case.level
    depth = settings.level if settings.level is not None else manifest.semantic_level if manifest is not None else 8
    if level > depth:
        what = f"case level {case.level} is" if level == case.level else \
            f"backward items are level {BACKWARD_LEVEL} (the case {case.level}),"
        if settings.level is not None:
            where = f"--level {depth} (the run's depth" + (
                f"; the manifest's semantic_level is {manifest.semantic_level})" if manifest is not None else ")")
        else:
            where = f"the manifest's semantic_level {depth}"
        return Outcome.LEVEL_FILTERED, f"{what} above {where}"
    found = _manifest_reason(case, manifest, prop) if manifest is not None else None
    return found or _memory_reason(case, settings, prop)


def _manifest_reason(case: Case, manifest: Any, prop: str) -> tuple[Outcome, str] | None:
    """Why the manifest (capabilities, skip_ops, dtypes, resource_limits) leaves the item out, or None."""
    if prop == BACKWARD and not manifest.declares(BACKWARD_CAPABILITY):
        return Outcome.CAPABILITY_NOT_DECLARED, f"gradients need the {BACKWARD_CAPABILITY} capability"
    skip = manifest.skip_reason(case.op)
    if skip is not None:
        return Outcome.OP_EXCLUDED, f"skip_ops excludes {case.op}: {skip}"
    for dtype in sorted({s.dtype for s in floating_specs(case)}):
        status = manifest.dtype_status(dtype_names.lookup(dtype), case.op)
        if status is not DtypeStatus.CLAIMED:
            outcome, detail = DTYPE_NOT_RUN[status]
            return outcome, f"the manifest does not claim {dtype} for {case.op}: {detail}"
    limits = manifest.resource_limits
    if limits.max_device_memory_mb is not None and case.needed_bytes > limits.max_device_memory_mb * MiB:
        return Outcome.RUNTIME_UNAVAILABLE, f"tier {case.tier}: needs {case.needed_bytes / MiB:.1f} MiB, above " \
                                            f"resource_limits.max_device_memory_mb {limits.max_device_memory_mb:g}"
    if limits.max_tensor_size_mb is not None and case.largest_bytes > limits.max_tensor_size_mb * MiB:
        return Outcome.RUNTIME_UNAVAILABLE, f"tier {case.tier}: its largest tensor holds " \
                                            f"{case.largest_bytes / MiB:.1f} MiB, above " \
                                            f"resource_limits.max_tensor_size_mb {limits.max_tensor_size_mb:g}"
    return None


def _memory_reason(case: Case, settings: RunSettings, prop: str) -> tuple[Outcome, str] | None:
    """Why host memory leaves the item out (`memory.MemoryBudget`, taken at the run's start: its tier, not opted
    into, has an item past the budget, or its own peak is), or None; checked before anything is allocated."""
    if settings.memory is None:
        return None
    left_out = settings.memory.left_out_tiers().get(case.tier)
    if left_out is not None:
        return Outcome.RUNTIME_UNAVAILABLE, left_out
    refusal = settings.memory.item_refusal(case, prop == BACKWARD)
    return (Outcome.RUNTIME_UNAVAILABLE, refusal) if refusal is not None else None


def run_corpus(corpus: Corpus, settings: RunSettings, results_dir: Path, environment: dict[str, Any],
               progress: Callable[[str], None] = lambda line: None) -> RunSummary:
    """Run (or account) every case of the corpus; write `<results_dir>/<run-id>/` and return the summary."""
    started = time.monotonic()
    settings = judged_memory(corpus, settings)  # a run never allocates what the user did not opt into (`memory`)
    device_type = torch.device(settings.device).type
    writer = RunWriter(results_dir, {**environment, "memory": settings.memory.as_json()})
    warnings: list[str] = _left_out_tiers(corpus, settings)  # printed with the run's summary, kept in run.json
    waived = unwaived = 0
    status = "partial"
    try:
        for case in sorted(corpus.cases, key=lambda c: (c.family, c.id)):
            waiver, expired = case.waiver_for(device_type, settings.today)
            if expired is not None and settings.selection.excludes(case) is None:
                warnings.append(f"{case.file}: case {case.id!r}: waiver expired {expired.expires.isoformat()}; "
                                "ignored")
            for prop in properties_of(case):
                base = {"item": item_id(case, prop), "property": prop, "op": case.op, "variant": case.id,
                        "dtype": case.dtype, "level": max(case.level, BACKWARD_LEVEL) if prop == BACKWARD
                        else case.level, "counterexample": None,
                        **({"compile": settings.compile.as_json()} if settings.compile is not None else {}),
                        "path_shape": {"family": case.family, "tier": case.tier, "needed_bytes": case.needed_bytes,
                                       "largest_tensor_bytes": case.largest_bytes, "budget": case.budget,
                                       "source": case.source, "file": case.file},
                        "waiver": waiver.as_json() if waiver else None}
                accounted = not_run_reason(case, settings, prop)
                if accounted is not None:
                    writer.record({**base, "outcome": accounted[0], "reason": accounted[1], "error": None,
                                   "duration_s": 0.0})
                    continue
                writer.mark_started(base["item"])
                t0 = time.monotonic()
                check = run_backward if prop == BACKWARD else run_case
                fields = check(case, settings.device, settings.manifest, settings.compile)
                if fields["outcome"] in PROBLEMS:
                    if waiver is not None:
                        waived += 1
                    else:
                        unwaived += 1
                    progress(f"{fields['outcome'].value.upper()}{' (waived)' if waiver else ''} {base['item']}: "
                             f"{fields.get('error_line') or fields['reason']}")
                writer.record({**base, **fields, "duration_s": round(time.monotonic() - t0, 4)})
        status = "complete"
    except WriteError:  # a full disk: the records written stay; run.json says partial where it still fits
        status = "unwritable"
        with contextlib.suppress(WriteError):
            writer.close("partial")
        raise
    finally:
        if status != "unwritable":
            writer.close(status)
    counts = dict(sorted(writer.outcomes.items()))
    return RunSummary(writer.folder, counts, waived, unwaived, tuple(warnings), time.monotonic() - started)


def judged_memory(corpus: Corpus, settings: RunSettings) -> RunSettings:
    """`settings` with a memory budget (detected now when it has none) that has judged which tiers to leave
    out, on the items that selection, level, capabilities, skip_ops, dtypes and resource_limits let through."""
    memory = settings.memory or MemoryBudget.detect(settings.manifest, settings.selection.tiers)
    if memory.tiers_left_out is None:
        plain = attrs.evolve(settings, memory=None)
        memory = memory.judging((case, prop == BACKWARD) for case in corpus.cases for prop in properties_of(case)
                                if not_run_reason(case, plain, prop) is None)
    return attrs.evolve(settings, memory=memory)


def _left_out_tiers(corpus: Corpus, settings: RunSettings) -> list[str]:
    """One line per tier the memory budget leaves out: why, how to include it, and how many items it accounts
    `runtime_unavailable` (those no earlier reason, such as the level or a capability, already accounts)."""
    lines = []
    for tier, why in settings.memory.left_out_tiers().items():
        items = [(case.id, prop) for case in corpus.cases if case.tier == tier for prop in properties_of(case)
                 if not_run_reason(case, settings, prop) == (Outcome.RUNTIME_UNAVAILABLE, why)]
        if items:
            lines.append(f"left out: {why} ({len({c for c, _ in items})} cases, {len(items)} items recorded "
                         "runtime_unavailable)")
    return lines


def _claims(manifest: Any, level: int | None) -> dict[str, Any]:
    """run.json's `effective_manifest_hash` and `claims` (`plan.effective`): `--level` is the run's depth."""
    if manifest is None:
        return {"effective_manifest_hash": None, "claims": None}
    claims = run_claims(manifest, PlanSelection(level=level))
    return {"effective_manifest_hash": claims.effective.fingerprint(), "claims": claims.as_json()}


def environment(settings: RunSettings, corpus: Corpus) -> dict[str, Any]:
    """run.json's environment block: what a report needs to say what ran where."""
    import hypothesis

    import torchcts

    manifest = settings.manifest
    compile = settings.compile
    return {"device": settings.device, "compile": compile.backend if compile is not None else None,
            "compile_settings": compile.as_json() if compile is not None else None, "validation": settings.validation,
            "hardware_key": hardware_key(settings.device), "torch": torch.__version__,
            "torchcts": torchcts.__version__, "hypothesis": hypothesis.__version__,
            "python": sys.version.split()[0], "python_hash_seed": os.environ.get("PYTHONHASHSEED"), "seed": None,
            "derandomize": True, "max_examples": None,
            "level": settings.level if settings.level is not None else
            manifest.semantic_level if manifest is not None else None,
            "manifest": str(manifest.source) if manifest is not None else None,
            "manifest_hash": manifest.fingerprint() if manifest is not None else None,
            **_claims(manifest, settings.level),
            "suite": "path-shapes", "corpus": str(corpus.folder),
            "planned_items": sum(len(properties_of(c)) for c in corpus.cases),
            "selection": attrs.asdict(settings.selection), "tiers": {t: b for t, b in TIERS.items()},
            "memory": judged_memory(corpus, settings).memory.as_json(),
            "claimed_dtypes": [dtype_names.canonical_name(d) for d in manifest.claimed_dtypes]
            if manifest is not None else None,
            "capabilities": sorted(manifest.capabilities) if manifest is not None else [],
            "property_capabilities": dict(PROPERTY_CAPABILITIES)}
