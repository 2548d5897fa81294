"""Reproduce TorchCTS corpus case 6120145619b34949 with torch and openvino.torch alone.

Property errors of amax (function, float32), found on cpu under torch.compile(openvino) with torch 2.13.0+cpu.
OpInfo error input
Observed: AssertionError: cpu under torch.compile(openvino, static shapes) rejects an input CPU rejects, but differently: it raised RuntimeError (wrapped in TorchRuntimeError, Unsupported by torch.compile) where CPU raises IndexError; cpu: RuntimeError (wrapped in TorchRuntimeError, Unsupported by torch.compi
Leg: dynamo (the layer of torch.compile that first showed it: dynamo, aot, backend, backend-dynamic-only)

Run: python this_script.py [DEVICE]   (default cpu). It first imports openvino.torch,
the module the manifest's backend_import named to register the device.
Exit status: 1 REPRODUCED (the failure reproduces; a device that raises where CPU does not
is one), 0 not reproduced (the device agrees with CPU), 2 could not run (the backend module
does not import, the device is not available, or CPU itself cannot run the case).
"""
import base64
import importlib
import re
import sys

import torch

DEVICE = sys.argv[1] if len(sys.argv) > 1 else 'cpu'
BACKEND_IMPORT = 'openvino.torch'
RTOL, ATOL = 1.3e-06, 7.62939453125e-06  # the tolerance TorchCTS applied (dtype default, OpInfo overrides)


def one_line(exc):
    """An exception as one short line: its type, then the start of its message."""
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def could_not_run(why):
    """Exit 2: the check cannot run here, which says nothing either way about the failure."""
    print(f"could not run on {DEVICE}: {why}")
    sys.exit(2)


def check_device():
    """Exit 2 unless DEVICE can hold a tensor (a device type torch does not know, no such device)."""
    try:
        torch.empty(1, device=DEVICE)
    except Exception as exc:
        could_not_run(f"the device is not available: {one_line(exc)}")


if BACKEND_IMPORT is not None:  # the module that registers the device, as the manifest's backend_import did
    try:
        importlib.import_module(BACKEND_IMPORT)
    except Exception as exc:
        could_not_run(f"importing the backend module {BACKEND_IMPORT} failed: {one_line(exc)}")

try:
    ORACLE_FN = torch.amax
    FN = torch.compile(ORACLE_FN, backend='openvino', dynamic=False)
except Exception as exc:
    could_not_run(f"this torch cannot set up the op: {one_line(exc)}")


def storage(dtype, elements, data):
    raw = bytearray(base64.b64decode(data))
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).clone() if raw else torch.empty(0, dtype=dtype)


STORAGES = [
    storage(torch.float32, 0, ''),
]


def inputs(device):
    """The case's exact tensors (sizes, strides, storage offset, storage bytes) on `device`."""
    s = [t.to(device, copy=True) for t in STORAGES]  # fresh copies: a run that writes its inputs changes no other run
    input = s[0].as_strided([5, 0, 5], [5, 5, 1], 0)
    args = []
    kwargs = {'dim': 1}
    return input, args, kwargs


def run(device, plain=False, oracle=False):
    """The op as the property ran it (`plain`: every input made contiguous first; `oracle`: CPU's reference, the
    eager op, where the device runs it compiled)."""
    fn = ORACLE_FN if oracle else FN
    input, args, kwargs = inputs(device)
    return fn(input, *args, **kwargs)


def same(actual, expected, what):
    """A message when the results differ (dtype, shape, values within RTOL/ATOL), else None."""
    actual = [t for t in (actual if isinstance(actual, (list, tuple)) else [actual])]
    expected = [t for t in (expected if isinstance(expected, (list, tuple)) else [expected])]
    if len(actual) != len(expected):
        return f"{what}: {len(actual)} results, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if not isinstance(e, torch.Tensor):
            if a != e:
                return f"{what} {i}: {a!r}, expected {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{what} {i}: {type(a).__name__} where a tensor is expected"
        if a.dtype != e.dtype or a.shape != e.shape:
            return f"{what} {i}: {a.dtype} {tuple(a.shape)}, expected {e.dtype} {tuple(e.shape)}"
        if False and a.numel() > 1 and any(x != y for x, y, n in zip(a.stride(), e.stride(), e.shape) if n > 1):
            return f"{what} {i}: strides {a.stride()}, expected {e.stride()}"
        if a.device.type == "meta" or e.device.type == "meta":
            continue
        try:
            torch.testing.assert_close(a.detach().cpu(), e.detach().cpu(), rtol=RTOL, atol=ATOL, equal_nan=True,
                                       check_stride=False)
        except AssertionError as exc:
            return f"{what} {i}: {exc}"
    return None


ERROR_REGEX = ''  # the OpInfo's error regex where it names no device or kernel ('': none)


# The cause of an exception a compiled call raised, as TorchCTS finds it (torchcts.engine.error_cause): an op's
# refusal reaches the caller wrapped by torch.compile; what remains a compiler exception is a compile failure.
MAX_DEPTH = 8
COMPILER_MODULES = ('torch._dynamo', 'torch._inductor', 'torch._functorch', 'torch._subclasses', 'torch.fx', 'torch._export', 'torch.export')
OP_RAISED_BREAKS = ('RuntimeError when making fake tensor call', 'TypeError when making fake tensor call')
OP_CODE = ('_refs/', '_decomp/', '_prims/', '_prims_common/', '_meta_registrations.py', '_ops.py', '__init__.py', 'functional.py', 'nn/functional.py', '_tensor.py', '_subclasses/fake_impls.py')  # where torch's ops check their inputs (paths within torch's folder)
DISPATCH = ('_subclasses/', 'utils/_python_dispatch.py', 'utils/_stats.py', '_compile.py', '_dynamo/eval_frame.py', '_library/')  # between an op's call and its code: fake tensors, modes
TRACERS = ('fx/', '_functorch/', '_dynamo/')  # torch's tracers, which run a graph's ops
TORCH_ROOT = torch.__file__.replace("\\", "/").rsplit("/", 1)[0] + "/"


def is_a(exc, module, name):
    """Whether `exc` is an instance of torch's class `module.name` (by its classes, importing nothing)."""
    return any(klass.__module__ == module and klass.__name__ == name for klass in type(exc).__mro__)


def is_compiler_error(exc):
    """Whether an exception is one of the compiler's own (dynamo, inductor, AOTAutograd, FX, fake tensors)."""
    module = type(exc).__module__ or ""
    return any(module == name or module.startswith(name + ".") for name in COMPILER_MODULES)


def torch_relative(filename):
    path = filename.replace("\\", "/")
    return path[len(TORCH_ROOT):] if path.startswith(TORCH_ROOT) else None


def raised_by_traced_op(exc):
    """Whether torch's op code raised `exc` and, past op code and dispatch, the next frame out is a tracer's."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    frames = frames[::-1][:1000]
    first = torch_relative(frames[0]) if frames else None
    if first is None or not first.startswith(OP_CODE):
        return False
    for filename in frames[1:]:
        relative = torch_relative(filename)
        if relative is None:
            return False
        if not (relative.startswith(OP_CODE) or relative.startswith(DISPATCH)):
            return relative.startswith(TRACERS)
    return False


def unwrapped(exc):
    """The exception a compile wrapper stands for where it is an op's refusal, else None."""
    if is_a(exc, "torch._dynamo.exc", "TorchRuntimeError"):
        inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        return inner if inner is not None and is_a(inner, "torch._dynamo.exc", "Unsupported") else None
    if is_a(exc, "torch._dynamo.exc", "Unsupported"):
        return exc.__cause__ if getattr(exc, "gb_type", None) in OP_RAISED_BREAKS else None
    if is_a(exc, "torch._dynamo.exc", "BackendCompilerFailed"):  # inductor's InductorError is one
        inner = getattr(exc, "inner_exception", None)
        return inner if isinstance(inner, BaseException) and raised_by_traced_op(inner) else None
    if is_a(exc, "torch._dynamo.exc", "InternalTorchDynamoError"):
        inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        return inner if inner is not None and raised_by_traced_op(inner) else None
    return None


def cause_of(exc):
    """The op's refusal behind torch.compile's wrappers of `exc` (at most MAX_DEPTH of them), or `exc` itself."""
    seen = [exc]
    for i in range(MAX_DEPTH):
        inner = unwrapped(exc)
        if inner is None or any(inner is s for s in seen):
            break
        seen.append(inner)
        exc = inner
    return exc


def rejection_problem(cpu_error, exc):
    """How the device's rejection differs from CPU's, as TorchCTS's errors property checks it, or None."""
    exc = cause_of(exc)  # the op's refusal behind torch.compile's wrappers is what is compared
    if is_compiler_error(exc):
        return f"torch.compile failed ({one_line(exc)}): a compile failure is not the op's refusal"
    if isinstance(exc, NotImplementedError) and not isinstance(cpu_error, NotImplementedError):
        return f"it raises {type(exc).__name__} (not implemented) where CPU raises {type(cpu_error).__name__}"
    specific = type(cpu_error) is RuntimeError and isinstance(exc, (IndexError, ValueError, TypeError))
    if not isinstance(exc, type(cpu_error)) and not specific:
        return f"it raises {type(exc).__name__} where CPU raises {type(cpu_error).__name__}"
    try:  # the message rule holds a device's kernels to ATen's checks (not meta's Python registrations)
        compared = ERROR_REGEX and torch.device(DEVICE).type != "meta" and re.search(ERROR_REGEX, str(cpu_error))
        if compared and re.search(ERROR_REGEX, str(exc)) is None:
            return f"its message does not match the OpInfo's error regex {ERROR_REGEX!r}, which CPU's does"
    except re.error:
        pass
    return None


if __name__ == "__main__":
    check_device()
    try:
        run('cpu', oracle=True)
    except Exception as exc:
        cpu_error = exc
    else:
        could_not_run('CPU accepts this error input; the case needs CPU to reject it')
    try:
        run(DEVICE)
    except Exception as exc:
        problem = rejection_problem(cpu_error, exc)
        if problem:
            print(f'REPRODUCED on {DEVICE}: it rejects the input differently: {problem} ({one_line(exc)}; CPU: {one_line(cpu_error)})')
            sys.exit(1)
        print(f'not reproduced on {DEVICE}: it rejects the input as CPU does ({one_line(exc)})')
        sys.exit(0)
    print(f'REPRODUCED on {DEVICE}: it accepts an input CPU rejects ({one_line(cpu_error)})')
    sys.exit(1)
