"""Reproduce TorchCTS corpus case 3ed8600af3ca2c07 with torch and openvino.torch alone.

Scenario subnormal_casts of property ieee754 (float32), found on cpu under torch.compile(openvino) with torch 2.13.0+cpu.
subnormal_casts (scenario, float32) sample 0: source torch.float64: around the torch.float32 subnormals; values: torch.float32 subnormals
Observed: AssertionError: cpu under torch.compile(openvino, static shapes) differs from CPU: output 0 of subnormal_casts(tensor([[inf]], dtype=torch.float64), torch.float32, tensor([[1.401298464324817e-45]], dtype=torch.float32)): out[0, 0] = 3.4028234663852886e+38, expected inf (1 of 1 elements differ)
Leg: backend (the layer of torch.compile that first showed it: dynamo, aot, backend, backend-dynamic-only)

The scenario is the suite's program below, run on CPU and on the device; the device must give CPU's
result: tensors in dtype, shape, strides (of dimensions longer than 1) and values bit for bit (-0.0 is not 0.0,
NaN where CPU has NaN), other values exactly.
Run: python this_script.py [DEVICE]   (default cpu). It first imports openvino.torch,
the module the manifest's backend_import named to register the device.
Exit status: 1 REPRODUCED (the failure reproduces; a device that raises where CPU does not
is one), 0 not reproduced (the device agrees with CPU), 2 could not run (the backend module
does not import, the device is not available, or CPU itself cannot run the case).
"""
import base64
import importlib
import sys

import torch

DEVICE = sys.argv[1] if len(sys.argv) > 1 else 'cpu'
BACKEND_IMPORT = 'openvino.torch'
ITEM_DTYPE = torch.float32
EXACT = True  # the suite compares bit for bit (True) or within the tolerances below (False)
# (rtol, atol) by dtype, the tolerance TorchCTS applied; the item's dtype's wherever it has one
TOLERANCES = {
    torch.float16: (0.001, 1e-05),
    torch.bfloat16: (0.016, 1e-05),
    torch.float32: (1.3e-06, 1e-05),
    torch.float64: (9.313225746154785e-10, 9.313225746154785e-10),
    torch.complex32: (0.001, 1e-05),
    torch.complex64: (1.3e-06, 1e-05),
    torch.complex128: (9.313225746154785e-10, 9.313225746154785e-10),
    torch.float8_e4m3fn: (0.125, 0.015625),
    torch.float8_e5m2: (0.25, 6.103515625e-05),
    torch.float8_e4m3fnuz: (0.125, 0.0078125),
    torch.float8_e5m2fnuz: (0.125, 3.0517578125e-05),
    torch.float8_e8m0fnu: (1.0, 5.877471754111438e-39),
}



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



def subnormal_casts(source, target_dtype, values):
    """A cast into the target's subnormal range (rounding half to even), and the dtype's subnormals widened."""
    return source.to(target_dtype), values.to(source.dtype), values.to(target_dtype)


PROGRAM = subnormal_casts
DEVICE_PROGRAM = torch.compile(PROGRAM, backend='openvino', dynamic=False)
REFERENCE_PROGRAM = torch.compile(PROGRAM, backend='eager', dynamic=False)  # CPU's program under dynamo alone


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


def first_line(exc):
    return (str(exc).strip().splitlines() or [""])[0]


def cpus_own_refusal(exc, expected):
    """Why the case cannot be compared (TorchCTS: runtime_unavailable), or None: the compiled program cannot record a
    refusal, it ends at it; where CPU's program under dynamo alone raises the same refusal (type, first line) and
    CPU's result records a refusal of its type, the device refused as CPU does."""
    cause = cause_of(exc)
    if is_compiler_error(cause):
        return None
    try:
        run("cpu", REFERENCE_PROGRAM)
        return None
    except Exception as raised:
        reference = cause_of(raised)
    if is_compiler_error(reference) or type(reference) is not type(cause) or first_line(reference) != first_line(cause):
        return None
    names = [klass.__name__ for klass in type(cause).__mro__ if klass not in (BaseException, Exception, object)]
    specific = isinstance(cause, (IndexError, ValueError, TypeError))  # refinements of CPU's RuntimeError
    for leaf in torch.utils._pytree.tree_leaves(expected):
        recorded = leaf.rsplit(" ", 1)[-1] if isinstance(leaf, str) and leaf else None
        if recorded in names or (recorded == "RuntimeError" and specific):
            return (f"under torch.compile the program ends at its first refusal ({one_line(cause)}), which CPU under "
                    f"dynamo alone raises too and CPU's result records ({leaf}): the results cannot be compared")
    return None


def storage(dtype, elements, data):
    raw = bytearray(base64.b64decode(data))
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).clone() if raw else torch.empty(0, dtype=dtype)


STORAGES = [
    storage(torch.float64, 1, 'AAAAAAAA8H8='),
    storage(torch.float32, 1, 'AQAAAA=='),
]


def inputs(device):
    """The case's exact tensors (sizes, strides, storage offset, storage bytes) on `device`."""
    s = [t.to(device, copy=True) for t in STORAGES]  # fresh copies: a run that writes its inputs changes no other run
    input = s[0].as_strided([1, 1], [1, 1], 0)
    args = [torch.float32, s[1].as_strided([1, 1], [1, 1], 0)]
    kwargs = {}
    return input, args, kwargs


def run(device, program):
    """The scenario's program on the case placed on `device`."""
    input, args, kwargs = inputs(device)
    return program(input, *args, **kwargs)


def tolerance(dtype):
    return TOLERANCES.get(ITEM_DTYPE) or TOLERANCES.get(dtype) or (0.0, 0.0)


def first_bit_difference(a, e):
    """The first element (in logical order) whose bits differ, as a message, or None; NaN matches any NaN."""
    a, e = (x.detach().cpu().resolve_conj().resolve_neg() for x in (a, e))
    if e.is_complex():
        a, e = torch.view_as_real(a), torch.view_as_real(e)
    if e.is_floating_point():
        a, e = a.double(), e.double()  # exact for every floating dtype
        nan = e.isnan()
        bad = (a.isnan() != nan) | (~nan & ((a != e) | (a.signbit() != e.signbit())))
    else:
        bad = a != e
    if not bool(bad.any()):
        return None
    index = tuple(int(i) for i in bad.nonzero()[0])
    return f"{list(index)} = {a[index].item()!r}, CPU gives {e[index].item()!r} (bit for bit)"


def differs(a, e, where):
    """A message when one result leaf differs from CPU's, else None."""
    if not isinstance(e, torch.Tensor):
        if isinstance(a, torch.Tensor):
            return f"{where}: a tensor where CPU gives {e!r}"
        if EXACT:
            return None if type(a) is type(e) and repr(a) == repr(e) else f"{where}: {a!r}, CPU gives {e!r}"
        if isinstance(e, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
            rtol, atol = tolerance(torch.float64)
            if e != e:
                return None if a != a else f"{where}: {a!r}, CPU gives {e!r}"
            return None if a == e or abs(a - e) <= atol + rtol * abs(e) else f"{where}: {a!r}, CPU gives {e!r}"
        return None if a == e else f"{where}: {a!r}, CPU gives {e!r}"
    if not isinstance(a, torch.Tensor):
        return f"{where}: {type(a).__name__} {a!r} where CPU gives a tensor"
    if a.dtype != e.dtype or a.shape != e.shape or a.layout != e.layout:
        return f"{where}: {a.dtype} {tuple(a.shape)} {a.layout}, CPU gives {e.dtype} {tuple(e.shape)} {e.layout}"
    if e.layout == torch.strided and e.numel() > 1 and any(x != y for x, y, n in zip(a.stride(), e.stride(), e.shape) if n > 1):
        return f"{where}: strides {a.stride()}, CPU gives {e.stride()}"
    if a.device.type == "meta" or e.device.type == "meta" or e.layout != torch.strided:
        return None
    if EXACT:
        problem = first_bit_difference(a, e)
        return f"{where}: {problem}" if problem else None
    rtol, atol = tolerance(e.dtype)
    try:
        torch.testing.assert_close(a.detach().cpu(), e.detach().cpu(), rtol=rtol, atol=atol, equal_nan=True,
                                   check_stride=False)
    except AssertionError as exc:
        return f"{where}: {exc}"
    return None


def same(actual, expected):
    """A message when the device's result differs from CPU's (structure, then each leaf), else None."""
    actual_leaves, actual_spec = torch.utils._pytree.tree_flatten(actual)
    expected_leaves, expected_spec = torch.utils._pytree.tree_flatten(expected)
    if actual_spec != expected_spec:
        return f"result structure {actual_spec} differs from CPU's {expected_spec}"
    for i, (a, e) in enumerate(zip(actual_leaves, expected_leaves)):
        problem = differs(a, e, f"output {i}" if len(expected_leaves) > 1 else "output")
        if problem:
            return problem
    return None


if __name__ == "__main__":
    check_device()
    try:
        expected = run("cpu", PROGRAM)
    except Exception as exc:
        could_not_run(f"CPU itself raises on this case: {one_line(exc)}")
    try:
        problem = same(run(DEVICE, DEVICE_PROGRAM), expected)
    except Exception as exc:
        why = cpus_own_refusal(exc, expected)
        if why:
            could_not_run(why)
        print(f"REPRODUCED on {DEVICE}: it raises where CPU does not: {one_line(exc)}")
        sys.exit(1)
    if problem:
        print(f"REPRODUCED on {DEVICE}: {problem}")
        sys.exit(1)
    print(f"not reproduced on {DEVICE}: results agree")
    sys.exit(0)
