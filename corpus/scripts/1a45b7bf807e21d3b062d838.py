"""Reproduce TorchCTS corpus case 1a45b7bf807e21d3 with torch alone.

Property errors of index_add (function, float32), found on meta with torch 2.13.0+cpu.
OpInfo error input
Observed: AssertionError: meta accepted an input CPU rejects (RuntimeError: 'source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = \\\\[3, 2\\\\] source.shape = \\\\[2\\\\]'); it returned Tensor

Run: python this_script.py [DEVICE]   (default meta).
Exit status: 1 REPRODUCED (the failure reproduces; a device that raises where CPU does not
is one), 0 not reproduced (the device agrees with CPU), 2 could not run (the backend module
does not import, the device is not available, or CPU itself cannot run the case).
"""
import base64
import importlib
import re
import sys

import torch

DEVICE = sys.argv[1] if len(sys.argv) > 1 else 'meta'
BACKEND_IMPORT = None
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
    FN = torch.index_add
    ORACLE_FN = FN
except Exception as exc:
    could_not_run(f"this torch cannot set up the op: {one_line(exc)}")


def storage(dtype, elements, data):
    raw = bytearray(base64.b64decode(data))
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).clone() if raw else torch.empty(0, dtype=dtype)


STORAGES = [
    storage(torch.float32, 6, 'AACAPwAAAEAAAIBAAACgQAAA4EAAAABB'),
    storage(torch.int64, 2, 'AAAAAAAAAAACAAAAAAAAAA=='),
    storage(torch.float32, 2, 'AAAAQAAAgEA='),
]


def inputs(device):
    """The case's exact tensors (sizes, strides, storage offset, storage bytes) on `device`."""
    s = [t.to(device, copy=True) for t in STORAGES]  # fresh copies: a run that writes its inputs changes no other run
    input = s[0].as_strided([3, 2], [2, 1], 0)
    args = [0, s[1].as_strided([2], [1], 0), s[2].as_strided([2], [1], 0)]
    kwargs = {}
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


ERROR_REGEX = 'source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = \\[3, 2\\] source.shape = \\[2\\]'  # the OpInfo's error regex where it names no device or kernel ('': none)


def rejection_problem(cpu_error, exc):
    """How the device's rejection differs from CPU's, as TorchCTS's errors property checks it, or None."""
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
