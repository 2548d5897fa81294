"""Running probes guarded: every exception is a result, and a crash or hang costs one probe, not the run.

`run_probes` runs a list of probes (dtype names, capability names) on a device. Where the device
survives a fork (the run's isolation can fork), the probes run one after another in a forked child
that appends each result to a file as it finishes; a child that dies or overruns the batch timeout
makes the probe it was in a `failed` result naming the step it was at ("crashed: the process
running it died (killed by SIGSEGV)"), and the rest continue in a fresh child. Where forking is
impossible (CUDA), they run in this process, each on a few elements only.
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from torchcts import backend_exits
from torchcts import disk
from torchcts.disk import WriteError, writing
from torchcts import dtypes as dtype_names
from torchcts.isolation.fork import AUTOGRAD_AFTER_FORK, run_forked
from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.probe.capabilities import CAPABILITY_PROBES, ProbeEnv
from torchcts.probe.dtypes import probe_dtype
from torchcts.probe.result import (FAILED, NO_PROBE, OK, NoProbe, ProbeResult, StepFailed, Steps, backend_exit_line,
                                   error_line)

BATCH_TIMEOUT_S = 120.0  # probes take milliseconds; a batch still running after this has a hung probe

Probe = tuple[str, str]  # (kind, name): ("dtype", "bfloat16"), ("capability", "training")


def probes_for(manifest: Any, dtypes: Iterable[torch.dtype] | None = None,
               capabilities: Iterable[str] | None = None) -> list[Probe]:
    """The probes a run of `manifest` makes: one per dtype it claims (only `dtypes`, when given: the ones
    its plan runs), then one per capability it declares (only `capabilities`, when given: the ones its plan's
    items test), in the vocabulary's order."""
    claimed = list(manifest.claimed_dtypes) if manifest is not None else [torch.float32]
    wanted = set(dtypes) if dtypes is not None else None
    probes = [("dtype", dtype_names.canonical_name(d)) for d in dtype_names.CLAIMABLE_DTYPES
              if d in claimed and (wanted is None or d in wanted)]
    declared = manifest.capabilities if manifest is not None else ()
    tested = set(capabilities) if capabilities is not None else None
    probes += [("capability", name) for name in CAPABILITIES
               if name in declared and (tested is None or name in tested)]
    return probes


def value_dtype(manifest: Any) -> torch.dtype:
    """The float dtype capability probes compute in: float32, unless the manifest claims other floats only."""
    claimed = manifest.claimed_dtypes if manifest is not None else ()
    if not claimed or torch.float32 in claimed:
        return torch.float32
    floats = [d for d in claimed if d.is_floating_point and d not in dtype_names.FLOAT8_DTYPES]
    return floats[0] if floats else torch.float32


def run_probe(device: str, probe: Probe, manifest: Any = None, *, announce: Path | None = None) -> ProbeResult:
    """One probe, guarded: ok, failed at a step, or no_probe; never raises (interrupts excepted)."""
    kind, name = probe
    if torch.device(device).type == "meta":  # every probe reads values back: meta holds none
        return ProbeResult(kind, name, NO_PROBE, None, "no probe: the meta device holds no data, and probes compare "
                                                        "values with CPU", 0.0)
    steps = Steps(announce=announce)
    started = time.monotonic()
    status, step, error = OK, None, None
    with warnings.catch_warnings(), backend_exits.guard():  # os._exit, a signal to itself: this probe's result
        warnings.simplefilter("ignore")  # a probe's warnings (prototype APIs, deprecations) are not the run's
        try:
            if kind == "dtype":
                probe_dtype(device, dtype_names.lookup(name), steps)
            else:
                check = CAPABILITY_PROBES.get(name)
                if check is None:
                    raise NoProbe(f"TorchCTS has no probe for {name!r}")
                check(ProbeEnv(device=device, dtype=value_dtype(manifest), steps=steps, manifest=manifest))
        except StepFailed as failure:
            status, step, error = FAILED, failure.step, failure.error
        except NoProbe as reason:
            status, error = NO_PROBE, f"no probe: {reason}"
        except WriteError:  # the step file on a full disk: no result of the backend's
            raise
        except Exception as exc:  # noqa: BLE001 - outside any step (a probe's own setup): still a result
            status, step, error = FAILED, "probe", error_line(exc)
        except BaseException as exc:  # sys.exit in a probe's own setup; the user's interrupts propagate
            if not backend_exits.is_backend_exit(exc):
                raise
            status, step, error = FAILED, "probe", backend_exit_line(exc)
    return ProbeResult(kind, name, status, step, error, time.monotonic() - started)


def run_probes(device: str, probes: list[Probe], manifest: Any = None, *, fork: bool = True,
               batch_timeout_s: float = BATCH_TIMEOUT_S,
               on_result: Callable[[ProbeResult], None] | None = None) -> list[ProbeResult]:
    """Every probe's result, in order: in forked children when `fork`, else in this process. Forking, the
    caller runs with the harness's one intra-op thread, as for forked items: a child forked while an
    OpenMP pool is busy in its parent can deadlock in its first parallel op."""
    report = on_result or (lambda result: None)
    if not fork:
        results = []
        for probe in probes:
            results.append(run_probe(device, probe, manifest))
            report(results[-1])
        return results
    results: list[ProbeResult] = []
    remaining = list(probes)
    while remaining:
        with writing(tempfile.gettempdir()):  # a full temporary folder: WriteError, no probe blamed for it
            scratch = tempfile.TemporaryDirectory(prefix="torchcts-probes-")
        with scratch as folder:
            lines, steps_file = Path(folder) / "results.jsonl", Path(folder) / "step"
            batch = list(remaining)
            ended = run_forked(lambda: _run_batch(device, batch, manifest, lines, steps_file), batch_timeout_s)
            unwritable = ended.answer.get("unwritable") if isinstance(ended.answer, dict) else None
            if unwritable:  # the child could not write its results: the disk's fault, not a probe's
                raise WriteError(*unwritable)
            done = [_unforked(result, device, manifest) for result in _read_results(lines)]
            step = _step_at(steps_file)
        for result in done:
            report(result)
        results += done
        remaining = remaining[len(done):]
        if remaining:  # the child ended before its last probe: the one it was in died or hung
            kind, name = remaining.pop(0)
            spent = max(0.0, ended.duration_s - sum(r.duration_s for r in done))
            how = "the probe's process ended without its result" if ended.status == "finished" else \
                f"{ended.status.replace('_', ' ')}: {ended.describe()}"
            results.append(ProbeResult(kind, name, FAILED, step, how, spent))
            report(results[-1])
    return results


def _unforked(result: ProbeResult, device: str, manifest: Any) -> ProbeResult:
    """A forked probe's result, or the probe run again in this process where only the fork made it fail."""
    if result.status == FAILED and AUTOGRAD_AFTER_FORK in (result.error or ""):
        return run_probe(device, (result.kind, result.name), manifest)
    return result


def _run_batch(device: str, probes: list[Probe], manifest: Any, lines: Path, steps_file: Path) -> int | dict[str, Any]:
    """In the forked child: each probe's result appended to `lines` as soon as it is known (and each
    step's name written to `steps_file` before it runs); {"unwritable": [file, reason]} on a full disk."""
    try:
        with open(lines, "a", encoding="utf-8") as out:
            for probe in probes:
                with writing(steps_file):
                    steps_file.write_text("probe", encoding="utf-8")  # until its first step: a crash in its setup
                result = json.dumps(run_probe(device, probe, manifest, announce=steps_file).as_json()) + "\n"
                with writing(lines):
                    out.write(result)
                    out.flush()  # in the kernel's hands: a crash later does not lose it
    except (WriteError, OSError) as exc:  # a full disk: the parent raises it (`run_probes`)
        return {"unwritable": [str(getattr(exc, "path", lines)), getattr(exc, "reason", None) or disk.reason(exc)]}
    return len(probes)


def _read_results(lines: Path) -> list[ProbeResult]:
    results = []
    try:
        text = lines.read_text(encoding="utf-8")
    except OSError:
        return results
    for line in text.splitlines():
        try:
            results.append(ProbeResult.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):  # a line torn by the crash: that probe did not finish
            break
    return results


def _step_at(steps_file: Path) -> str:
    """The step a dead child was in: the last name it wrote before running a step."""
    try:
        return steps_file.read_text(encoding="utf-8").strip() or "probe"
    except OSError:
        return "probe"
