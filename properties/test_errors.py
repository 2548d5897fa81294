"""Error parity: where CPU raises for an OpInfo error input, the backend raises too."""

from torchcts.harness import CpuRejects


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
        except Exception:  # noqa: BLE001 - any exception is the backend refusing the input
            return
        raise AssertionError(f"{cts.device} accepted an input CPU rejects ({error_input.error_type.__name__}: "
                             f"{error_input.error_regex!r}); it returned {type(result).__name__}")

    cts.run_each(error_inputs, check)
