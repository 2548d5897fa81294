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
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import attrs
import torch
from torch.utils._pytree import tree_leaves

from torchcts import dtypes as dtype_names
from torchcts.disk import WriteError
from torchcts.engine import oracle
from torchcts.engine.gradients import fixed_cotangent
from torchcts.manifest.model import DtypeStatus
from torchcts.core.outcomes import PROBLEMS, Outcome
from torchcts.pathshapes.corpus import TIERS, Case, Corpus, tensor_specs
from torchcts.pathshapes.inputs import build_arguments, draw_seed
from torchcts.pathshapes.memory import MemoryBudget
from torchcts.pathshapes.ops import OPS, POINTWISE
from torchcts.plan.build import DTYPE_NOT_RUN

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
    return (PROPERTY, BACKWARD) if _floating_specs(case) else (PROPERTY,)


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
    for dtype in sorted({s.dtype for s in _floating_specs(case)}):
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


def _floating_specs(case: Case) -> list[Any]:
    return [s for s in tensor_specs(case) if s.torch_dtype.is_floating_point]


def _device_op(case: Case, compile: Any) -> Any:
    """The case's op as the device side runs it: under `compile` (a CompileSpec, compiled once per process) or
    eager."""
    spec = OPS[case.op]
    if compile is None:
        return spec
    from torchcts.engine.targets import compiled_callable

    return attrs.evolve(spec, fn=compiled_callable(spec.fn, compile))


def run_case(case: Case, device: str, manifest: Any = None, compile: Any = None) -> dict[str, Any]:
    """Execute one case's draws on `device` (under `compile`, a CompileSpec, where given) and on CPU; the record
    fields of its verdict (outcome, reason, error, examples, the largest errors seen)."""
    spec, device_spec = OPS[case.op], _device_op(case, compile)
    worst = oracle.Comparison(True)
    for draw in range(case.budget):
        generator = torch.Generator().manual_seed(draw_seed(case.id, draw))
        args, kwargs = build_arguments(case, "cpu", generator)
        call = f"{case.op} draw {draw} (seed {draw_seed(case.id, draw)})"
        try:
            expected = spec.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the oracle rejects the case: not a finding about the backend
            return _verdict(Outcome.CPU_CONTRACT, f"the CPU oracle raised on {call}", exc, draw)
        try:
            device_args, device_kwargs = _to_device(args, device), {k: _to_device(v, device) for k, v in kwargs.items()}
            actual = device_spec.fn(*device_args, **device_kwargs)
        except Exception as exc:  # noqa: BLE001 - the backend raised where CPU did not
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        tol = _tolerance(case, spec.category, args, expected, manifest, device,
                         ("compile", spec.category) if compile is not None else None)
        try:  # comparing reads the device's result back: a backend failing there is the backend's error
            result = oracle.compare(actual, expected, tol, strides="significant" if case.op in POINTWISE else False)
        except Exception as exc:  # noqa: BLE001
            return _verdict(Outcome.ERROR, f"the backend raised reading back {call} where CPU did not", exc, draw)
        if not result.ok:
            return {"outcome": Outcome.FAILED, "reason": "the backend's result differs from the CPU oracle's",
                    "error": f"{call}: {result.message}", "error_line": result.message[:300],
                    "examples": draw + 1, "max_abs_error": result.max_abs_error, "max_ulp": result.max_ulp}
        worst = oracle.Comparison(True, "", max(worst.max_abs_error, result.max_abs_error),
                                  max(worst.max_rel_error, result.max_rel_error), max(worst.max_ulp, result.max_ulp))
    return {"outcome": Outcome.PASSED, "reason": "", "error": None, "examples": case.budget,
            "max_abs_error": worst.max_abs_error, "max_ulp": worst.max_ulp}


def run_backward(case: Case, device: str, manifest: Any = None, compile: Any = None) -> dict[str, Any]:
    """Execute one case's draws through autograd on `device` (the forward under `compile` where given) and on CPU:
    the gradients of every floating operand under the same seeded cotangents; the record fields of its verdict."""
    spec, device_spec = OPS[case.op], _device_op(case, compile)
    worst = oracle.Comparison(True)
    for draw in range(case.budget):
        seed = draw_seed(case.id, draw)
        args, kwargs = build_arguments(case, "cpu", torch.Generator().manual_seed(seed))
        call = f"{case.op} backward, draw {draw} (seed {seed})"
        try:
            device_args, device_kwargs = _to_device(args, device), {k: _to_device(v, device) for k, v in kwargs.items()}
        except Exception as exc:  # noqa: BLE001 - the backend cannot even hold the operands
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        try:
            outputs, expected = _gradients(spec, args, kwargs, seed)
        except Exception as exc:  # noqa: BLE001 - the oracle rejects the case: not a finding about the backend
            return _verdict(Outcome.CPU_CONTRACT, f"the CPU oracle raised on {call}", exc, draw)
        try:
            _, actual = _gradients(device_spec, device_args, device_kwargs, seed)
        except Exception as exc:  # noqa: BLE001 - the backend raised where CPU did not
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        # a gradient sums over what the forward broadcast or reduced, and over what it fanned out
        tol = _tolerance(case, spec.category, args, outputs, manifest, device,
                         (("compile",) if compile is not None else ()) + oracle.gradient_categories(spec.category))
        widening = oracle.accumulation_widening(outputs, expected)
        tol = oracle.normwise_floor(tol.widened(widening) if widening > 1 else tol, expected)
        try:  # comparing reads the device's gradients back: a backend failing there is the backend's error
            result = oracle.compare(actual, expected, tol)
        except Exception as exc:  # noqa: BLE001
            return _verdict(Outcome.ERROR, f"the backend raised reading back {call} where CPU did not", exc, draw)
        if not result.ok:
            message = result.message.replace("output", "gradient", 1)
            return {"outcome": Outcome.FAILED, "reason": "the backend's gradients differ from the CPU oracle's",
                    "error": f"{call}: {message}", "error_line": message[:300], "examples": draw + 1,
                    "max_abs_error": result.max_abs_error, "max_ulp": result.max_ulp}
        worst = oracle.Comparison(True, "", max(worst.max_abs_error, result.max_abs_error),
                                  max(worst.max_rel_error, result.max_rel_error), max(worst.max_ulp, result.max_ulp))
    return {"outcome": Outcome.PASSED, "reason": "", "error": None, "examples": case.budget,
            "max_abs_error": worst.max_abs_error, "max_ulp": worst.max_ulp}


def _gradients(spec: Any, args: list[Any], kwargs: dict[str, Any], seed: int) -> tuple[list[Any], list[Any]]:
    """(the op's differentiable outputs, detached; the gradient of every floating operand but the op's constants
    (batch norm's running statistics), zeros where autograd gives none) for cotangents drawn from `seed`. The
    operands are fresh leaves (`build_arguments`, `_to_device`)."""
    variables = ([a for i, a in enumerate(args) if i not in spec.constants],
                 {k: v for k, v in kwargs.items() if k not in spec.constants})
    leaves = [t for t in tree_leaves(variables) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for leaf in leaves:
        leaf.requires_grad_(True)
    outputs = [t for t in tree_leaves(spec.fn(*args, **kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs:
        return [], [torch.zeros_like(leaf) for leaf in leaves]
    cotangents = [fixed_cotangent(o, (seed + index) % 2**63) for index, o in enumerate(outputs)]
    grads = torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
    return ([o.detach() for o in outputs],
            [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, grads)])


def _tolerance(case: Case, category: str, args: Any, expected: Any, manifest: Any, device: str,
               categories: tuple[str, ...] | None = None) -> oracle.Tolerance:
    """The oracle's tolerance for the case's first floating dtype, with the manifest's overrides of `categories`
    (default: the op's `category` alone), widened for accumulation and, beyond elementwise ops, norm-wise."""
    dtype = next((s.torch_dtype for s in _floating_specs(case)), torch.float32)
    tol = oracle.tolerance(dtype, None, manifest, device, categories or (category,))
    widening = oracle.accumulation_widening(args, expected)
    if widening > 1:
        tol = tol.widened(widening)
    return oracle.normwise_floor(tol, expected, args, category) if category != "elementwise" else tol


def _to_device(value: Any, device: str) -> Any:
    """A copy of `value` on `device` with the same strides (lists element by element)."""
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if not isinstance(value, torch.Tensor):
        return value
    out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
    return out.copy_(value)


def _verdict(outcome: Outcome, reason: str, exc: BaseException, draw: int) -> dict[str, Any]:
    line = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:300]
    text = "".join(traceback.format_exception_only(type(exc), exc))[-4000:]
    fields = {"outcome": outcome, "reason": reason, "error": text, "error_line": line, "examples": draw + 1}
    if outcome is Outcome.ERROR:
        fields["error_kind"] = "backend"
    return fields


def run_corpus(corpus: Corpus, settings: RunSettings, results_dir: Path, environment: dict[str, Any],
               progress: Callable[[str], None] = lambda line: None) -> RunSummary:
    """Run (or account) every case of the corpus; write `<results_dir>/<run-id>/` and return the summary."""
    from torchcts.results.writer import RunWriter

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
    from torchcts.plan.effective import run_claims
    from torchcts.plan.selection import Selection

    claims = run_claims(manifest, Selection(level=level))
    return {"effective_manifest_hash": claims.effective.fingerprint(), "claims": claims.as_json()}


def environment(settings: RunSettings, corpus: Corpus) -> dict[str, Any]:
    """run.json's environment block: what a report needs to say what ran where."""
    import hypothesis

    import torchcts
    from torchcts.results.writer import hardware_key

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
