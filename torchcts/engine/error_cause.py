"""The cause of an exception a compiled call raised: the op's own refusal behind torch.compile's wrappers.

Under `torch.compile` an op's refusal of its input (CPU's `ValueError`, `IndexError`, `RuntimeError`)
may reach the caller wrapped by the compiler. What torch 2.13 does (measured with backends eager,
aot_eager and inductor on CPU):

- An op that raises while dynamo runs it on fake tensors (its meta function, Python reference or
  decomposition: `torch.cat([])`, `x.reshape(4)` of 3 elements, `mean` of an int tensor) is raised as
  `TorchRuntimeError` ("RuntimeError when making fake tensor call"), raised `from None` while handling
  an `Unsupported` graph break of type "RuntimeError when making fake tensor call" (or "TypeError
  when making fake tensor call"), whose `__cause__` is the op's exception.
- An `IndexError` from a dimension check (`narrow(5, ...)`) and any error raised when the compiled
  graph runs (an index out of range under aot_eager) reach the caller unwrapped.
- A backend's exception while compiling is `BackendCompilerFailed` (inductor: `InductorError`) with
  the exception as `inner_exception`; an exception dynamo did not expect is `InternalTorchDynamoError`,
  raised `from None` while handling it (`__context__`).

What counts as the op's refusal (then `ErrorCause.error` is it, and `wrappers` names what it passed):

- through `TorchRuntimeError` to its `Unsupported` (its `__cause__`, else its suppressed `__context__`);
- through an `Unsupported` only when its graph-break type says an op raised on fake tensors
  (`OP_RAISED_BREAKS`): any other graph break (fullgraph, a data-dependent op, an unsupported
  operator) is the compiler declining the program, not the op refusing the input;
- through `BackendCompilerFailed`/`InductorError` (`inner_exception`) and `InternalTorchDynamoError`
  (`__context__`) only when the inner exception was raised by torch's op code (a meta function, a
  reference, a decomposition, a C++ kernel called through `torch.ops`) which torch's own tracer
  (FX's proxy tracing, AOTAutograd, dynamo) called on the graph: walking its traceback outwards from
  where it was raised, past op code and dispatch (fake tensors, modes), the first other frame is a
  tracer's. A backend's own code that raises (or calls an op that raises), a lowering, inductor's
  own `torch._check`, a C++ compile error: the compile failed, which is no refusal.

Whatever remains is the cause. It is a compile failure (`compile_failure`) when it is still one of
the compiler's exceptions (dynamo's, inductor's, the fake tensor machinery's): it never stands for
a CPU error, whatever base class it has (`TorchRuntimeError` and `CppCompileError` are RuntimeErrors).
The walk is bounded (`MAX_DEPTH` wrappers) and stops at an exception already seen.
"""

from __future__ import annotations

import collections
import os
import types
from typing import Any

import attrs

MAX_DEPTH = 8
# graph-break types of dynamo's fake-tensor call that mean "the op raised" (torch/_dynamo/utils.py get_fake_value)
OP_RAISED_BREAKS = frozenset({"RuntimeError when making fake tensor call", "TypeError when making fake tensor call"})
# modules whose exceptions are the compiler's own, never an op's refusal
_COMPILER_MODULES = ("torch._dynamo", "torch._inductor", "torch._functorch", "torch._subclasses", "torch.fx",
                     "torch._export", "torch.export")
# torch's op code (relative to torch's package folder): where an op checks its input
_OP_CODE = ("_refs" + os.sep, "_decomp" + os.sep, "_prims" + os.sep, "_prims_common" + os.sep,
            "_meta_registrations.py", "_ops.py", "__init__.py", "functional.py", "nn" + os.sep + "functional.py",
            "_tensor.py", "_subclasses" + os.sep + "fake_impls.py")
# torch's dispatch between an op's call and its code: fake tensors, modes, the wrappers that keep dynamo out of refs
_DISPATCH = ("_subclasses" + os.sep, "utils" + os.sep + "_python_dispatch.py", "utils" + os.sep + "_stats.py",
             "_compile.py", "_dynamo" + os.sep + "eval_frame.py", "_library" + os.sep)
# torch's tracers that run a graph's ops (FX's proxy tracing and interpreter, AOTAutograd, dynamo)
_TRACERS = ("fx" + os.sep, "_functorch" + os.sep, "_dynamo" + os.sep)


@attrs.frozen
class ErrorCause:
    """An exception's cause behind torch.compile's wrappers: `error` (the exception itself when it passed
    none), the wrappers' type names, outermost first, and whether it is the compiler's own failure."""

    error: BaseException
    wrappers: tuple[str, ...] = ()
    compile_failure: bool = False

    @property
    def wrapped(self) -> bool:
        return bool(self.wrappers)

    def type_name(self) -> str:
        """The cause's type, and the wrappers it came through: "ValueError (wrapped in TorchRuntimeError,
        Unsupported by torch.compile)"."""
        name = type(self.error).__name__
        return f"{name} (wrapped in {', '.join(self.wrappers)} by torch.compile)" if self.wrappers else name


def find_cause(exc: BaseException, max_depth: int = MAX_DEPTH) -> ErrorCause:
    """The op's refusal behind the compiler's wrappers of `exc` (see the module's rules), bounded and cycle-safe."""
    current, wrappers, seen = exc, [], {id(exc)}
    for _ in range(max_depth):
        inner = _unwrapped(current)
        if inner is None or id(inner) in seen:
            break
        wrappers.append(type(current).__name__)
        seen.add(id(inner))
        current = inner
    return ErrorCause(current, tuple(wrappers), is_compiler_error(current))


def is_compiler_error(exc: BaseException) -> bool:
    """Whether an exception is one of the compiler's own (dynamo, inductor, AOTAutograd, FX, fake tensors)."""
    module = type(exc).__module__ or ""
    return any(module == name or module.startswith(name + ".") for name in _COMPILER_MODULES)


def _unwrapped(exc: BaseException) -> BaseException | None:
    """The exception a known compile wrapper stands for, or None (not a wrapper, or not of an op's refusal)."""
    dynamo_exc = _dynamo_exceptions()
    if dynamo_exc is None:
        return None
    if isinstance(exc, dynamo_exc.TorchRuntimeError):
        inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        return inner if isinstance(inner, dynamo_exc.Unsupported) else None
    if isinstance(exc, dynamo_exc.Unsupported):
        return exc.__cause__ if getattr(exc, "gb_type", None) in OP_RAISED_BREAKS else None
    if isinstance(exc, dynamo_exc.BackendCompilerFailed):  # InductorError is one
        inner = getattr(exc, "inner_exception", None)
        return inner if isinstance(inner, BaseException) and raised_by_traced_op(inner) else None
    if isinstance(exc, dynamo_exc.InternalTorchDynamoError):
        inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        return inner if inner is not None and raised_by_traced_op(inner) else None
    return None


def raised_by_traced_op(exc: BaseException) -> bool:
    """Whether `exc` was raised by torch's op code that one of torch's tracers called: its innermost frame is op
    code, and walking outwards past op code and dispatch, the first other frame is a tracer's. Another frame
    there (a backend's own code, inductor's lowering calling `torch._check`) means the op was not the graph's."""
    frames = _frames_innermost_first(exc.__traceback__)
    first = _torch_relative(frames[0]) if frames else None
    if first is None or not first.startswith(_OP_CODE):
        return False
    for filename in frames[1:]:
        relative = _torch_relative(filename)
        if relative is None:
            return False
        if relative.startswith(_OP_CODE) or relative.startswith(_DISPATCH):
            continue
        return relative.startswith(_TRACERS)
    return False


def _frames_innermost_first(tb: types.TracebackType | None, keep: int = 1000) -> list[str]:
    """The files of a traceback's frames, innermost first (the innermost `keep` of them)."""
    frames: collections.deque[str] = collections.deque(maxlen=keep)
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return list(reversed(frames))


def _torch_relative(filename: str) -> str | None:
    """A file's path within torch's package, or None when it is not torch's."""
    root = _torch_root()
    path = os.path.abspath(filename)
    return path[len(root):] if path.startswith(root) else None


def _torch_root() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _dynamo_exceptions() -> Any:
    try:
        import torch._dynamo.exc as dynamo_exc
    except ImportError:  # a torch without dynamo raises no compile wrapper
        return None
    return dynamo_exc


def rules_as_literals() -> dict[str, str]:
    """This module's rules as Python literals (paths '/'-separated) for an exported script, which applies them with
    torch alone (`torchcts/cases/script_templates/compile_cause.py.jinja`): one source for both."""
    def paths(prefixes: tuple[str, ...]) -> str:
        return ascii(tuple(prefix.replace(os.sep, "/") for prefix in prefixes))

    return {"max_depth": ascii(MAX_DEPTH), "compiler_modules": ascii(_COMPILER_MODULES),
            "op_raised_breaks": ascii(tuple(sorted(OP_RAISED_BREAKS))), "op_code": paths(_OP_CODE),
            "dispatch": paths(_DISPATCH), "tracers": paths(_TRACERS)}
