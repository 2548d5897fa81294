"""A draft manifest from a probe (`torchcts init --probe`): the template's claims, cut to what the device has.

1. Every claimable dtype is probed (`probe.dtypes`) and the template's declared capabilities too
   (`probe.capabilities`). The draft claims the template's dtypes that passed (with the template's
   regex where it has one) and its capabilities that passed; each one dropped gets a comment with
   the probe's finding. `inference` stays claimed whatever its probe says: its items' missing
   kernels become `skip_ops`, and a manifest without it would test nothing.
2. The plan of that manifest runs once through the engine (`probe.ops`); every op one of whose
   items hit a missing kernel goes into `skip_ops` with the reason "no kernel for aten::X".
3. The header says it is a draft, what was probed, when, with which versions, what was dropped,
   and what the probe guarantees.

The draft is text; `torchcts init` validates it and writes it atomically.
"""

from __future__ import annotations

import datetime
import textwrap
from pathlib import Path
from typing import Any, Callable

import attrs
import torch

import torchcts
from torchcts import dtypes as dtype_names
from torchcts.manifest import ManifestError, parse_manifest
from torchcts.manifest.templates import DraftClaims, render_template
from torchcts.probe.ops import OpProbe, probe_ops
from torchcts.probe.result import OK, ProbeResult
from torchcts.probe.runner import run_probes

HEADER_WIDTH = 100
ALWAYS_CLAIMED = ("inference",)  # dropped, the draft would test nothing; its missing kernels become skip_ops


class DraftError(Exception):
    """The draft cannot be made (the template's manifest does not validate); the message says why."""


@attrs.frozen
class Draft:
    text: str
    dtypes: tuple[ProbeResult, ...]
    capabilities: tuple[ProbeResult, ...]
    ops: OpProbe | None
    claimed_dtypes: tuple[str, ...]
    dropped: tuple[str, ...]  # "bfloat16: copy to device fails: ...", the claims the probe took away

    def summary_lines(self) -> list[str]:
        """What `init --probe` prints when it has written the draft."""
        lines = [f"dtypes claimed: {', '.join(self.claimed_dtypes) or 'none'}"]
        lines += [f"dropped {line}" for line in self.dropped]  # "bfloat16: copy to device fails: ..."
        if self.ops is not None:
            skipped = len(self.ops.missing)
            overloads = len({o for found in self.ops.missing.values() for o in found})
            lines.append(f"ops: {self.ops.items} items run in {self.ops.duration_s:.0f} s; {skipped} ops skipped "
                         f"(skip_ops) for {overloads} missing kernels")
        return lines


def make_draft(template: str, device: str, *, device_name: str, backend_import: str | None, output: Path,
               op_patterns: tuple[str, ...] = (), fork: bool = True, say: Callable[[str], None] = lambda line: None,
               progress: Callable[[int, int, int, int], None] = lambda *counts: None) -> Draft:
    """Probe `device` and return the draft manifest for `template` (to be written at `output`)."""
    # the engine (half a second more): `init --probe` checks --ops, the backend and the device before it loads
    from torchcts.engine.run import HARNESS_THREADS

    torch.set_num_threads(HARNESS_THREADS)  # as in a run; also keeps forked probes clear of a running OpenMP pool
    base = parse_text(render_template(template, device_name=device_name, backend_import=backend_import), output)
    say(f"probing {len(dtype_names.CLAIMABLE_DTYPES)} dtypes and {len(base.capabilities)} capabilities on {device}")
    dtypes = run_probes(device, [("dtype", dtype_names.canonical_name(d)) for d in dtype_names.CLAIMABLE_DTYPES],
                        base, fork=fork)
    capabilities = run_probes(device, [("capability", c) for c in sorted(base.capabilities)], base, fork=fork)
    works = {r.name for r in dtypes if r.status == OK}
    template_claims = {claim.name: claim.as_json() for claim in base.dtype_claims if claim.claimed}
    dtype_claims = {name: value for name, value in template_claims.items() if name in works}
    dtype_notes = {r.name: f"probe: {r.problem()}" for r in dtypes if r.name in template_claims and r.name not in works}
    kept = tuple(r.name for r in capabilities if r.status != "failed" or r.name in ALWAYS_CLAIMED)
    capability_notes = {r.name: r.problem() or "" for r in capabilities if r.status == "failed"}
    dropped = tuple([r.problem() or r.name for r in dtypes if r.name in dtype_notes]
                    + [r.problem() or r.name for r in capabilities if r.name not in kept])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def claims(skip_ops: dict[str, str], header: tuple[str, ...]) -> DraftClaims:
        return DraftClaims(header=header, dtype_claims=dtype_claims, capabilities=kept, skip_ops=skip_ops,
                           dtype_notes=dtype_notes, capability_notes=capability_notes)

    claimed = parse_text(render_template(template, device_name=device_name, backend_import=backend_import,
                                         draft=claims({}, ())), output)
    say(f"running the template's items once on {device} (derandomized, as `torchcts run` draws them)")
    ops = probe_ops(claimed, device, op_patterns=op_patterns, ledger_folder=output.parent, progress=progress)
    facts = {"device": device, "backend_import": backend_import, "template": template, "when": now,
             "torch": torch.__version__, "torchcts": torchcts.__version__, "op_patterns": op_patterns,
             "others_working": sorted(works - set(template_claims))}
    text = render_template(template, device_name=device_name, backend_import=backend_import,
                           draft=claims(ops.skip_ops(), header_lines(facts, dtypes, capabilities, ops, dropped)))
    parse_text(text, output)  # the final draft validates (else DraftError)
    return Draft(text=text, dtypes=tuple(dtypes), capabilities=tuple(capabilities), ops=ops,
                 claimed_dtypes=tuple(dtype_claims), dropped=dropped)


def header_lines(facts: dict[str, Any], dtypes: list[ProbeResult], capabilities: list[ProbeResult], ops: OpProbe,
                 dropped: tuple[str, ...]) -> tuple[str, ...]:
    """The draft's header comment: a draft to review, what was probed, what it found, what it guarantees."""
    overloads = sorted({o for found in ops.missing.values() for o in found})
    backend = f" (backend_import {facts['backend_import']})" if facts["backend_import"] else ""
    selected = f", ops matching {' or '.join(facts['op_patterns'])} only" if facts["op_patterns"] else ""
    others = ", ".join(f"{k} {v}" for k, v in ops.outcomes.items() if k not in ("passed", "error", "failed"))
    capabilities_ok = sum(r.status != "failed" for r in capabilities)
    lines = [
        "DRAFT MANIFEST -- REVIEW BEFORE USE. Written by `torchcts init --probe`: its claims are what the",
        "probe found working, not what the backend promises. Edit it, then remove these lines.",
        "",
        f"Probed: device {facts['device']}{backend}, {facts['when']}, torch {facts['torch']}, "
        f"TorchCTS {facts['torchcts']}, template {facts['template']}{selected}.",
        f"Dtypes: {sum(r.status == OK for r in dtypes)} of {len(dtypes)} allocate, copy both ways, fill and multiply "
        f"as on CPU; working but not claimed by the template: {', '.join(facts['others_working']) or 'none'}.",
        f"Capabilities: {capabilities_ok} of the {len(capabilities)} the template claims pass their probe.",
    ]
    if dropped:
        lines.append("Dropped from the template's claims:")
        lines += [f"  {line}" for line in dropped]
    lines += [
        f"Ops: {ops.items} items run once ({ops.settings}) in {ops.duration_s:.0f} s: "
        f"{ops.outcomes.get('passed', 0)} passed, {ops.outcomes.get('error', 0)} errors ({ops.missing_items} of "
        f"them missing kernels), "
        f"{ops.outcomes.get('failed', 0)} failed" + (f", {others}" if others else "") + ".",
        f"skip_ops: {len(ops.missing)} ops whose items hit {len(overloads)} missing kernels"
        + (f" ({', '.join(overloads[:8])}{', ...' if len(overloads) > 8 else ''})" if overloads else "") + ".",
        "Guarantee: a derandomized `torchcts run` of this file with the same torch, TorchCTS and Hypothesis",
        "(and a backend that behaves the same) draws the same cases and hits no missing kernel. Other seeds,",
        "--max-examples, levels or dtypes draw other cases and may still reach one. Items that failed for",
        "other reasons are left in: they are findings. Remove a skip_ops entry once its kernel exists.",
    ]
    if facts["op_patterns"]:
        lines.append("Only the ops named above were probed: the guarantee holds for a run with the same --ops.")
    return tuple(wrapped for line in lines for wrapped in _wrap(line))


def _wrap(line: str, width: int = HEADER_WIDTH) -> list[str]:
    """A header line cut at `width`, its continuation lines indented two more spaces."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def parse_text(text: str, output: Path) -> Any:
    """The Manifest a rendered text defines (as if it were the file `output`); DraftError when it does not validate."""
    namespace: dict[str, object] = {}
    exec(compile(text, str(output), "exec"), namespace)  # our own template's text, not a user's file
    try:
        manifest, _ = parse_manifest(namespace["manifest"], output.resolve())
    except ManifestError as exc:
        raise DraftError(exc.render()) from None
    return manifest
