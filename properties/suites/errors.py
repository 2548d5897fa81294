"""Error parity: where CPU raises for an OpInfo error input, the backend raises the same error.

The rule:

- **Type.** The device's exception must be an instance of the type CPU raised (CPU's
  `IndexError` needs an `IndexError`; CPU's `torch.linalg.LinAlgError` needs one). One refinement
  is allowed: where CPU raises torch's generic error (`RuntimeError`, C++ `c10::Error`), the
  device may raise one of torch's specific errors, which derive from it in C++ (`IndexError`,
  `ValueError`, `TypeError`): CUDA raises `IndexError` for `narrow_copy`'s out-of-range dimension
  where CPU's kernel raises `RuntimeError`, and the OpInfo accepts both. A `NotImplementedError`
  (Python makes it a RuntimeError) counts only where CPU's is one: "not implemented for 'Half'"
  says the device cannot run the op, not that it checked the input.
- **Message.** Where the OpInfo's error regex is stable across backends, the device's message
  (of an eager device kernel: not `meta`'s Python registrations, not `torch.compile`'s tracing,
  which check arguments in their own order and words) must match it too (`re.search`, as `assertRaisesRegex`). A regex is stable when it matches
  CPU's message and names no device or backend (`cpu`, `cuda`, `device`, `meta`, ...) and no C++
  internals (`static_cast`, "to be true, but got false"): those are one kernel's wording.
- **Through torch.compile** the device's exception is compared by its cause
  (`torchcts.engine.error_cause`): an op's refusal that dynamo wraps (`TorchRuntimeError` around
  the `ValueError` a Python reference raised on fake tensors) is that refusal, and the failure names
  the wrappers. A compile failure (a backend's own exception while compiling, a graph break under
  fullgraph) is no refusal: it never conforms, though its type is a RuntimeError.
- A missing kernel (the dispatcher's NotImplementedError) is not a rejection: outcome `error`
  naming the kernel. A target that cannot run the case by design (meta and data-dependent
  outputs) makes the case `runtime_unavailable`.

A target that sees no values (`meta`) cannot reject an input for its data (an index out of
range, a negative weight); where CPU accepts the same input with other values, the case is
`runtime_unavailable` there, not a finding. A rejection that metadata alone decides stays one.
"""

from __future__ import annotations

import re

from torchcts.engine import missing_kernels
from torchcts.engine.error_cause import ErrorCause, find_cause
from torchcts.engine.context import CpuRejects, MissingKernelError
from torchcts.engine.targets import CaseUnavailable
from torchcts.plan.registry import OpInfoItems, register_property

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("the device raises where CPU raises, with CPU's exception type, and OpInfo's message where its regex is "
          "stable")

# words that tie an error message to one backend: such a regex says nothing about another device
_DEVICE_WORDS = re.compile(r"\b(cpu|cuda|gpu|device|devices|backend|mps|xpu|hip|rocm|meta|mkldnn|cudnn|onednn|"
                           r"triton|jiterator)\b", re.IGNORECASE)
# C++ internals of one kernel's check (TORCH_CHECK's condition text, source file names)
_KERNEL_INTERNALS = re.compile(r"static_cast|to be true, but got false|INTERNAL ASSERT|\.cpp\b|\.cu\b|\.mm\b",
                               re.IGNORECASE)
# torch's specific errors: C++ subclasses of c10::Error, which Python sees as RuntimeError
REFINEMENTS_OF_RUNTIME_ERROR = (IndexError, ValueError, TypeError)


def names_no_backend(regex: str) -> bool:
    """Whether an OpInfo error regex is non-empty and names no device, backend or C++ internals (an exported
    script checks the rest of `stable_regex`, that it matches CPU's message, where it runs)."""
    return bool(regex) and not _DEVICE_WORDS.search(regex) and not _KERNEL_INTERNALS.search(regex)


def stable_regex(regex: str, cpu_message: str) -> bool:
    """Whether an OpInfo error regex holds on any backend: it matches CPU's message and names no device,
    backend or C++ internals (then a conforming device's message matches it too)."""
    if not names_no_backend(regex):
        return False
    try:
        return re.search(regex, cpu_message) is not None
    except re.error:
        return False


def type_conforms(cpu_error: BaseException, device_error: BaseException) -> bool:
    """Whether the device's exception is of CPU's type, or one of torch's specific errors where CPU
    raised its generic RuntimeError."""
    if isinstance(device_error, NotImplementedError) and not isinstance(cpu_error, NotImplementedError):
        return False  # "not implemented" is no rejection, though Python makes NotImplementedError a RuntimeError
    if isinstance(device_error, type(cpu_error)):
        return True
    return type(cpu_error) is RuntimeError and isinstance(device_error, REFINEMENTS_OF_RUNTIME_ERROR)


def parity_problem(cpu_error: BaseException, device_error: BaseException, regex: str,
                   cause: ErrorCause | None = None) -> str | None:
    """What differs between the device's rejection and CPU's (None: the device conforms). Under torch.compile,
    `cause` is the device's exception behind the compiler's wrappers (`find_cause(device_error)`): it is compared."""
    if cause is not None and cause.compile_failure:
        return (f"torch.compile failed ({_shown(cause.error)}) where CPU rejects the input with "
                f"{type(cpu_error).__name__}: a compile failure is not the op's refusal")
    if cause is not None:
        device_error = cause.error
    if not type_conforms(cpu_error, device_error):
        shown = cause.type_name() if cause is not None else type(device_error).__name__
        return (f"it raised {shown} where CPU raises {type(cpu_error).__name__}"
                + (" (or one of torch's specific errors: IndexError, ValueError, TypeError)"
                   if type(cpu_error) is RuntimeError else ""))
    if stable_regex(regex, str(cpu_error)) and re.search(regex, str(device_error)) is None:
        return f"its message does not match the OpInfo's error regex {regex!r}, which CPU's does"
    return None


def _shown(error: BaseException, type_name: str | None = None) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    return f"{type_name or type(error).__name__}: {line[:200]}"


def _has_error_inputs(op) -> bool:
    return op.error_inputs_func is not None


# a fixed list of cases (draws=False); it compares acceptance, not values (compares_values=False)
@register_property("errors", capability="inference", level=2, items=OpInfoItems(applies=_has_error_inputs),
                   compares_values=False, draws=False)
def test_errors(cts):
    error_inputs = cts.error_inputs()

    def check(error_input):
        sample = error_input.sample_input
        try:
            cts.on_cpu(sample)
        except CpuRejects as rejected:  # the oracle raises, as the error input says it should: the device must too
            cpu_error = rejected.__cause__ if rejected.__cause__ is not None else rejected
        else:
            raise CpuRejects("CPU accepts this error input")
        try:
            result = cts.device_call(sample)
        except Exception as exc:  # noqa: BLE001 - the device's rejection: compared with CPU's below
            kernel = missing_kernels.find(exc, cts.target.device_type)
            why = cts.target.unavailable(exc)  # meta: an output size or a result that depends on data
            if why:
                raise CaseUnavailable(why) from exc
            if kernel is not None:  # the device cannot run the op at all: the refusal proves nothing
                raise MissingKernelError(f"{cts.target.describe()} has no kernel for this error input where CPU "
                                         f"raised as the OpInfo says: {kernel.describe()}", kernel) from exc
            # meta's Python registrations and torch.compile's tracing check arguments in their own order and words:
            # the message rule holds device kernels to ATen's checks, the type rule holds everywhere
            compiled = cts.target.compile_backend is not None
            kernels = cts.target.device_type != "meta" and not compiled
            cause = find_cause(exc) if compiled else None  # an op's refusal that torch.compile wrapped is that refusal
            problem = parity_problem(cpu_error, exc, error_input.error_regex if kernels else "", cause)
            if problem is None:
                return
            shown = _shown(exc) if cause is None or not cause.wrapped else _shown(cause.error, cause.type_name())
            raise AssertionError(f"{cts.target.describe()} rejects an input CPU rejects, but differently: {problem}; "
                                 f"{cts.device}: {shown}; CPU: {_shown(cpu_error)}") from exc
        if not cts.target.compares_values and cts.rejected_for_values(sample):
            raise CaseUnavailable(f"{cts.device} sees no values; CPU rejects this input for its values "
                                  f"({error_input.error_type.__name__}: {error_input.error_regex!r})")
        raise AssertionError(f"{cts.target.describe()} accepted an input CPU rejects ({_shown(cpu_error)}; OpInfo: "
                             f"{error_input.error_type.__name__}: {error_input.error_regex!r}); "
                             f"it returned {type(result).__name__}")

    cts.run_each(error_inputs, check)
