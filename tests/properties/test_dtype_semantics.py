"""The dtype-semantics suite: promotion, in-place casting, reductions with dtype=, comparisons and casts vs CPU."""

from __future__ import annotations

import pytest
import torch

from torchcts.cases.files import load_case
from torchcts.core.outcomes import Outcome
from torchcts.properties.dtype_programs import cast, inplace_promotion, scalar_promotion
from torchcts.testing.faulty.suite_bugs.dtype_semantics import BUGS

SCENARIOS = ("binary_promotion", "scalar_promotion", "inplace_promotion", "reduction_dtype", "comparison_promotion",
             "cast")
BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_passes_on_cpu_and_on_the_clean_faulty_device(run_suite, scenario):
    for dtype in ("int32", "float16", "bool"):
        assert run_suite("dtype_semantics", scenario, dtype, max_examples=5)["outcome"] is Outcome.PASSED
    assert run_suite("dtype_semantics", scenario, "int64", device="faulty", max_examples=5)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug, scenario, dtype", [
    ("float_scalar_promotes_to_double", "scalar_promotion", "int32"),
    ("reduction_dtype_ignored", "reduction_dtype", "int8"),
    ("mixed_comparison_truncates", "comparison_promotion", "float32"),
    ("wide_int_scalar_truncated", "scalar_promotion", "float64"),
    ("promotion_to_float64", "binary_promotion", "float32"),  # the core bug, caught here too
])
def test_every_seeded_bug_is_detected(run_suite, bug, scenario, dtype):
    record = run_suite("dtype_semantics", scenario, dtype, device="faulty", bugs=(bug,), max_examples=10,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record.get("error")


def test_a_failure_shrinks_to_a_small_case_that_replays(run_suite, tmp_path, replay_case):
    record = run_suite("dtype_semantics", "scalar_promotion", "int32", device="faulty",
                       bugs=("float_scalar_promotes_to_double",), max_examples=10, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED
    assert "dtype torch.float64, CPU gives torch.float32" in record["error"]
    path = record["counterexample"]["path"]
    stored = load_case(path)
    assert stored.property == "dtype_semantics" and stored.op == "scalar_promotion"
    assert record["counterexample"]["elements"] <= 2  # one element of input
    assert replay_case(path, tmp_path, bugs=("float_scalar_promotes_to_double",))["outcome"] is Outcome.FAILED
    assert replay_case(path, tmp_path, bugs=())["outcome"] is Outcome.PASSED


def test_the_seeded_bugs_stay_silent_without_their_condition():
    ints, floats = torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1.5, 2.5])
    scalar_bug, reduction_bug = BUG["float_scalar_promotes_to_double"], BUG["reduction_dtype_ignored"]
    comparison_bug, wide_bug = BUG["mixed_comparison_truncates"], BUG["wide_int_scalar_truncated"]
    assert scalar_bug.fires(aten.add.Tensor, (ints, 2.5), {})
    assert not scalar_bug.fires(aten.add.Tensor, (ints, 2), {})
    assert not scalar_bug.fires(aten.add.Tensor, (floats, 2.5), {})
    assert reduction_bug.fires(aten.sum.default, (ints,), {"dtype": torch.int64})
    assert not reduction_bug.fires(aten.sum.default, (ints,), {}) and not reduction_bug.fires(
        aten.sum.default, (ints,), {"dtype": torch.int32})
    assert comparison_bug.fires(aten.eq.Scalar, (ints, 2.5), {})
    assert comparison_bug.fires(aten.lt.Tensor, (floats, ints), {})
    assert not comparison_bug.fires(aten.eq.Scalar, (ints, 2), {}) and not comparison_bug.fires(
        aten.eq.Tensor, (floats, floats), {})
    assert wide_bug.fires(aten.add.Tensor, (ints.long(), 2**31), {})
    assert not wide_bug.fires(aten.add.Tensor, (ints.long(), 2**31 - 1), {}) and not wide_bug.fires(
        aten.add.Tensor, (ints.long(), True), {})


def test_the_programs_state_cpus_rules():
    ints = torch.tensor([2, 3], dtype=torch.int32)
    results = scalar_promotion(ints, 2.5, False)
    assert results["add"].dtype == torch.get_default_dtype() and results["eq"].tolist() == [False, False]
    assert scalar_promotion(torch.tensor([1], dtype=torch.int8), 1000, False)["add"].dtype == torch.int8
    raised, untouched = inplace_promotion(ints, 1.5)["add_"]
    assert raised == "raises RuntimeError" and untouched.tolist() == [2, 3]  # int += float raises, input intact
    undefined = cast(torch.tensor([1.5, float("nan"), 1e10, -1.0]), torch.uint8)
    assert undefined["to"].tolist() == [1, 0, 0, 0] and int(undefined["undefined"]) == 3  # masked, counted


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_under_torch_compile_a_refusal_cpus_program_records_is_no_error(run_suite, backend):
    # bool - bool raises on CPU, which the program records; compiled, the refusal ends the program (dynamo raises it
    # while tracing, wrapped in TorchRuntimeError): the case cannot be compared, and is no error of the device
    record = run_suite("dtype_semantics", "binary_promotion", "bool", max_examples=4, compile_backend=backend)
    assert record["outcome"] in (Outcome.PASSED, Outcome.RUNTIME_UNAVAILABLE), record.get("error")
    assert record["outcome"] is Outcome.PASSED or "ends at its first refusal" in record["reason"]


def _compiled_cause(program, backend, *args):
    """The cause (behind torch.compile's wrappers) of what `program` compiled with `backend` raises on `args`."""
    import torch._dynamo

    from torchcts.engine.error_cause import find_cause

    torch._dynamo.reset()
    try:
        torch.compile(program, backend=backend)(*args)
    except Exception as error:  # noqa: BLE001
        return find_cause(error)
    raise AssertionError("the compiled program returned")


def _refuses_at_run(gm, example_inputs):
    """A backend whose graphs raise a RuntimeError when they run: a refusal no eager CPU kernel gives."""
    def compiled(*args):
        raise RuntimeError("this backend's graphs raise when they run")
    return compiled


def test_under_torch_compile_only_cpus_own_refusal_stands_for_its_entry():
    from torchcts.properties.dtype_programs import binary_promotion
    from torchcts.properties.suites.dtype_semantics import _refused_as_cpu

    bools = torch.tensor([True, False])
    expected = binary_promotion(bools, bools, False)
    assert expected["sub"] == "raises RuntimeError" and expected["add"].dtype == torch.bool
    reference = _compiled_cause(binary_promotion, "eager", bools, bools, False)  # CPU, dynamo alone: sub refuses
    device = _compiled_cause(binary_promotion, "aot_eager", bools, bools, False)
    assert _refused_as_cpu(expected, device, reference) == "sub: raises RuntimeError"
    # a RuntimeError that is not sub's refusal (the graph raises it when it runs): CPU records a RuntimeError, and
    # lacks kernels for div_floor and pow, but this is neither (before: both excused it)
    other = _compiled_cause(lambda x: x + 1, _refuses_at_run, bools)
    assert isinstance(other.error, RuntimeError) and _refused_as_cpu(expected, other, reference) is None
    assert _refused_as_cpu(expected, device, None) is None  # CPU under dynamo returned: no refusal of CPU's


def test_under_torch_compile_a_missing_kernel_excuses_only_a_not_implemented_error_naming_its_op():
    from torchcts.engine.error_cause import find_cause
    from torchcts.properties.dtype_programs import binary_promotion
    from torchcts.properties.suites.dtype_semantics import _refused_as_cpu

    def cause_of(call):
        try:
            call()
        except Exception as error:  # noqa: BLE001
            return find_cause(error)
        raise AssertionError("it returned")

    bools = torch.tensor([True, False])
    expected = binary_promotion(bools, bools, False)
    assert expected["div_floor"] == "unsupported NotImplementedError"
    assert expected["pow"] == "raises NotImplementedError"
    floor = cause_of(lambda: torch.div(bools, bools, rounding_mode="floor"))  # "div_floor_cpu" not implemented
    assert _refused_as_cpu(expected, floor, None).startswith("div_floor, which CPU has no kernel for")
    assert _refused_as_cpu(expected, cause_of(lambda: torch.pow(bools, bools)), None).startswith("pow, which")
    # the dispatcher's message for add (uint16 has no add kernel on CPU): add is an op CPU runs for bool
    unsigned = torch.tensor([1, 2], dtype=torch.uint16)
    add = cause_of(lambda: torch.add(unsigned, unsigned))
    assert isinstance(add.error, NotImplementedError) and _refused_as_cpu(expected, add, None) is None
    # a lacking kernel excuses no other error type, and no NotImplementedError of another wording
    wrong_type = RuntimeError('"div_floor_cpu" not implemented for \'Bool\'')
    assert _refused_as_cpu(expected, find_cause(wrong_type), None) is None
    assert _refused_as_cpu(expected, find_cause(NotImplementedError("div_floor is not supported")), None) is None


def test_a_stored_other_must_broadcast_to_the_inputs_shape():
    """An input (9, 1) and an other (1, 9), each within the operand bound, would give an 81-element result: a stored
    tensor other broadcasts to the input's shape, as `broadcastable_shapes` draws it; a scalar other is free."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.properties.suites.dtype_semantics import PARAMS

    column, row = torch.zeros(9, 1), torch.zeros(1, 9)
    for scenario, args in (("binary_promotion", (row, False)), ("inplace_promotion", (row,)),
                           ("comparison_promotion", (row, False))):
        problem = PARAMS[scenario].problem(SampleInput(column, args=args))
        assert problem is not None and "broadcasts to the input's shape" in problem[1], (scenario, problem)
    assert PARAMS["binary_promotion"].problem(SampleInput(torch.zeros(3, 3), args=(torch.zeros(3), False))) is None
    assert PARAMS["inplace_promotion"].problem(SampleInput(column, args=(2,))) is None
