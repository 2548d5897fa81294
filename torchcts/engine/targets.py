"""What is under test: a device, optionally behind `torch.compile`, and what its results can show.

- Eager devices (cpu for validation, cuda, the faulty device, out-of-tree ones) compare values.
- `meta` computes metadata only: values are never compared, and a case whose output shape
  depends on data (`nonzero`, `unique`, `unique_consecutive`, `.item()`) or whose result is data
  (`equal` returns a Python bool) cannot run there by design. Such a case is
  `runtime_unavailable`, not a finding; a missing Meta kernel for a claimed op is a finding
  (outcome `error`), like any unsupported operation on a claimed dtype.
- `--compile BACKEND` runs each op through `torch.compile` with the target's `CompileSpec`
  (`torchcts.engine.compile_target`: the backend, its settings and the shape mode) on the device and
  compares with eager CPU. One compiled function per (op, variant, spec) is kept for the process, so
  a new shape or dtype is a recompile of that function, not a new compile from scratch; the
  recompile limit is raised so that dynamo never falls back to eager silently. In the static shape
  mode every recompile is specialised to its shapes, so no case depends on the ones before it.
"""

from __future__ import annotations

import re
import types
from typing import Any

import attrs
import torch

from torchcts.engine.compile_target import CompileSpec
from torchcts.plan.catalog import op_id
from torchcts.strategies import call_variant

ORACLE_DEVICE = "cpu"
# Messages of errors that mean "this case cannot run on meta by design" (outputs sized by data).
_META_DATA_DEPENDENT = re.compile(
    r"item\(\) cannot be called on meta|cannot be called on meta tensors|data.dependent|correct data-independent|"
    r"Cannot copy out of meta tensor|meta tensors? (do|does) not have data|tolist\(\) .*meta|"
    r"aten::(nonzero|unique|masked_select|_unique2?|bincount|repeat_interleave)\b.*Meta|"
    r"aten::(equal|unique_consecutive|unique_dim)\b.*(Meta|meta)|repeat_interleave a meta tensor", re.IGNORECASE)


class CaseUnavailable(Exception):
    """The target cannot run this case by design (outcome `runtime_unavailable` for the case)."""


def _compile_spec(value: CompileSpec | str | None) -> CompileSpec | None:
    """A bare backend name is that backend with default settings (automatic shapes)."""
    return CompileSpec(value) if isinstance(value, str) else value


@attrs.frozen
class Target:
    device: str
    compile: CompileSpec | None = attrs.field(default=None, converter=_compile_spec)

    @property
    def compile_backend(self) -> str | None:
        """The compile backend's name (None: eager)."""
        return self.compile.backend if self.compile is not None else None

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    @property
    def compares_values(self) -> bool:
        return self.device_type != "meta"

    def describe(self) -> str:
        return self.device + (f" under {self.compile.describe()}" if self.compile is not None else "")

    def call(self, op: Any, variant: str, sample: Any) -> Any:
        """Run the op's variant on a sample already placed on the device."""
        if self.compile is None:
            return call_variant(op, variant, sample)
        return _compiled(op, variant, self.compile)(sample.input, *sample.args, **sample.kwargs)

    def unavailable(self, exc: BaseException) -> str | None:
        """Why the target cannot run a case by design, or None when the exception is a finding."""
        if self.device_type == "meta" and _META_DATA_DEPENDENT.search(f"{type(exc).__name__}: {exc}"):
            return f"meta cannot compute a data-dependent result ({str(exc).splitlines()[0][:120] if str(exc) else ''})"
        return None


ORACLE = Target(ORACLE_DEVICE)  # eager CPU: what every target is compared with


_compiled_functions: dict[tuple[str, str, CompileSpec], Any] = {}


def compiled_program(program: Any, spec: CompileSpec | str) -> Any:
    """A scenario program (`torchcts.engine.programs`) under torch.compile with `spec`, compiled once per process."""
    spec = _compile_spec(spec)
    key = (f"{program.__module__}.{program.__qualname__}", "program", spec)
    if key not in _compiled_functions:
        _compiled_functions[key] = spec.compile(program)
    return _compiled_functions[key]


def compiled_callable(fn: Any, spec: CompileSpec) -> Any:
    """Any function (a path-shapes op) under torch.compile with `spec`, compiled once per process per function."""
    key = (fn, "callable", spec)
    if key not in _compiled_functions:
        _compiled_functions[key] = spec.compile(fn)
    return _compiled_functions[key]


def reset_compiled() -> None:
    """Forget every compiled function of this process and dynamo's caches: the next call compiles from scratch."""
    import torch._dynamo

    _compiled_functions.clear()
    torch._dynamo.reset()


def _compiled(op: Any, variant: str, spec: CompileSpec):
    key = (op_id(op), variant, spec)
    if key not in _compiled_functions:
        _compiled_functions[key] = _compile(op, variant, spec)
    return _compiled_functions[key]


def _compile(op: Any, variant: str, spec: CompileSpec):
    def run(input, *args, **kwargs):
        return call_variant(op, variant, types.SimpleNamespace(input=input, args=args, kwargs=kwargs))

    return spec.compile(run)
