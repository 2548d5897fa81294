"""One probe's result, the steps that produce it, and the one-line problem a console shows for it.

A probe is a handful of steps on the device (allocate, copy, one op, ...). `Steps.run(name, fn)`
runs one step and turns whatever it raises into `StepFailed` naming the step; `Steps.same(...)`
compares a device result with the CPU's and fails the step when they differ. The probe's runner
turns a `StepFailed` into a `failed` result; a probe never raises into the run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts.backend_exits import ProcessEndRequested, describe, is_backend_exit
from torchcts.disk import writing

OK, FAILED, NO_PROBE = "ok", "failed", "no_probe"
STATUSES = (OK, FAILED, NO_PROBE)
KINDS = ("dtype", "capability")
ERROR_LINE_CHARS = 300
_CAUSE_MARKERS = ("WeightsUnpickler error: ",)  # torch.load(weights_only=True): the cause after two paragraphs
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours some torch errors carry


@attrs.frozen
class ProbeResult:
    """What one probe found: `status` ok, failed (at `step`, with `error`) or no_probe (`error` says why)."""

    kind: str  # dtype | capability
    name: str  # a dtype name (bfloat16) or a capability name (training)
    status: str
    step: str | None = None
    error: str | None = None
    duration_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "status": self.status, "step": self.step,
                "error": self.error, "duration_s": round(self.duration_s, 4)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ProbeResult":
        return cls(kind=data["kind"], name=data["name"], status=data["status"], step=data.get("step"),
                   error=data.get("error"), duration_s=float(data.get("duration_s") or 0.0))

    def problem(self) -> str | None:
        """The console's line for a failed probe ("bfloat16: copy to device fails: NotImplementedError: ..."),
        None for the others."""
        if self.status != FAILED:
            return None
        return f"{self.name}: {self.step or 'probe'} fails: {self.error or 'no error message'}"


class StepFailed(Exception):
    """A probe step raised or produced the wrong value: `step` and the one-line `error`."""

    def __init__(self, step: str, error: str):
        super().__init__(f"{step}: {error}")
        self.step, self.error = step, error


class NoProbe(Exception):
    """The probe cannot say anything here (e.g. it needs two devices and there is one): `no_probe` with the reason."""


class Steps:
    """Runs a probe's steps. In a forked child each step's name is first written to the file `announce`,
    so when a step takes the process down the parent can say which step it was."""

    def __init__(self, announce: Path | None = None):
        self.announce = announce

    def run(self, step: str, fn: Callable[[], Any]) -> Any:
        if self.announce is not None:
            with writing(self.announce):  # a full disk is no failed step: WriteError ends the probes
                self.announce.write_text(step, encoding="utf-8")
        try:
            return fn()
        except (StepFailed, NoProbe):
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the backend raises is the finding
            raise StepFailed(step, error_line(exc)) from None
        except BaseException as exc:  # sys.exit, os._exit, a signal to itself (`backend_exits`): the step's finding
            if not is_backend_exit(exc):
                raise  # the user's Ctrl-C or SIGTERM
            raise StepFailed(step, backend_exit_line(exc)) from None

    def expect(self, step: str, condition: bool, problem: str) -> None:
        """Fail `step` with `problem` unless `condition` holds."""
        if not condition:
            raise StepFailed(step, problem)

    def same(self, step: str, got: Any, expected: Any) -> None:
        """Fail `step` unless device tensor `got`, copied to the CPU, has exactly `expected`'s dtype, shape and bits."""
        got = self.run(step, lambda: got.cpu() if hasattr(got, "cpu") else got)
        problem = difference(got, expected)
        if problem is not None:
            raise StepFailed(step, problem)


def difference(got: Any, expected: Any) -> str | None:
    """How CPU tensor `got` differs from `expected` (dtype, shape, then bits: -0.0 and NaN payloads count), or None."""
    import torch

    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return None if got == expected else f"got {got!r}, expected {expected!r}"
    if got.dtype != expected.dtype:
        return f"got dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"got shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if _bits(got).equal(_bits(expected)):
        return None
    return f"values differ: got {_shown(got)}, expected {_shown(expected)}"


def _bits(tensor: Any) -> Any:
    """The tensor's bytes as a uint8 tensor (equal bits, not equal values: NaN == NaN, -0.0 != 0.0)."""
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat.to(torch.uint8)


def _shown(tensor: Any) -> str:
    import torch

    try:
        values = tensor.to(torch.complex128 if tensor.is_complex() else torch.float64).reshape(-1)[:8].tolist()
    except Exception:  # noqa: BLE001 - a dtype without conversions: show the bits
        values = _bits(tensor)[:16].tolist()
    return str(values)[:120]


def backend_exit_line(exc: BaseException) -> str:
    """A probe's line for code that left by a back door, naming where: "crashed: os._exit(3) called in m.f (...)"
    (as a probe whose process died reads), or "SystemExit(4) raised in m.f (...)"."""
    line = describe(exc)
    line = f"crashed: {line} (intercepted)" if isinstance(exc, ProcessEndRequested) else line
    line = "".join(char if char.isprintable() else "?" for char in line)
    return line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS - 3] + "..."


def error_line(exc: BaseException) -> str:
    """`Type: first line of the message`, without the dispatcher's explanation and backend listing."""
    text = _ANSI.sub("", str(exc)).strip()
    line = text.splitlines()[0].strip() if text else ""
    cut = line.find(" This could be because")  # the dispatcher's missing-kernel paragraph
    if cut > 0:
        line = line[:cut]
    for marker in _CAUSE_MARKERS:  # errors whose first line is advice and whose cause comes later
        at = text.find(marker)
        if at >= 0:
            cause = text[at + len(marker):].splitlines()[0]
            line = f"{line.split('.')[0]}: {cause.split('. ')[0]}"
    line = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    line = "".join(char if char.isprintable() else "?" for char in line)  # no escape reaches a terminal
    return line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS - 3] + "..."
