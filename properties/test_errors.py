"""Error parity: where CPU raises for an OpInfo error input, the backend raises too.

A target that sees no values (`meta`) cannot reject an input for its data (an index out of
range, a negative weight); where CPU accepts the same input with other values, the case is
`runtime_unavailable` there, not a finding. A rejection that metadata alone decides stays one.
"""

from torchcts.engine import missing_kernels
from torchcts.engine.context import CpuRejects, MissingKernelError
from torchcts.engine.targets import CaseUnavailable
from torchcts.plan.registry import OpInfoItems, register_property


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
        except CpuRejects:
            pass  # the oracle raises, as the error input says it should: the device must too
        else:
            raise CpuRejects("CPU accepts this error input")
        try:
            result = cts.device_call(sample)
        except Exception as exc:  # noqa: BLE001 - any exception is the backend refusing the input...
            kernel = missing_kernels.find(exc, cts.target.device_type)
            if kernel is None:
                return
            why = cts.target.unavailable(exc)  # meta: no kernel for an op whose output size depends on data
            if why:
                raise CaseUnavailable(why) from exc
            # ...except a missing kernel: the device cannot run the op at all, so the refusal proves nothing
            raise MissingKernelError(f"{cts.target.describe()} has no kernel for this error input where CPU "
                                     f"raised as the OpInfo says: {kernel.describe()}", kernel) from exc
        if not cts.target.compares_values and cts.rejected_for_values(sample):
            raise CaseUnavailable(f"{cts.device} sees no values; CPU rejects this input for its values "
                                  f"({error_input.error_type.__name__}: {error_input.error_regex!r})")
        raise AssertionError(f"{cts.device} accepted an input CPU rejects ({error_input.error_type.__name__}: "
                             f"{error_input.error_regex!r}); it returned {type(result).__name__}")

    cts.run_each(error_inputs, check)
