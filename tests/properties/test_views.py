"""The views suite (`torchcts.properties.suites.views`): passes on CPU and clean faulty, catches its seeded bugs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from torchcts.cases.files import load_case
from torchcts.core.outcomes import Outcome
from torchcts.properties.exact_check import assert_same_bits
from torchcts.properties.suites.views import PROGRAMS, overlap_rules, view_chain_write
from torchcts.properties.view_steps import FAMILIES, apply_steps, draw_view_chain
from torchcts.testing.faulty.suite_bugs.views import BUGS

BUG = {bug.name: bug for bug in BUGS}
PERMUTE = torch.ops.aten.permute.default
AS_STRIDED = torch.ops.aten.as_strided.default
EXPAND = torch.ops.aten.expand.default
CLONE = torch.ops.aten.clone.default


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_clean_faulty(run_suite, scenario):
    for dtype in ("float32", "bool"):
        assert run_suite("views", scenario, dtype, max_examples=6)["outcome"] is Outcome.PASSED, (scenario, dtype)
    faulty = run_suite("views", scenario, "int16", device="faulty", max_examples=6)
    # faulty's tensors are Python wrappers: their storages have no data pointer to compare
    expected = Outcome.RUNTIME_UNAVAILABLE if scenario == "storage_shared" else Outcome.PASSED
    assert faulty["outcome"] is expected, faulty


@pytest.mark.parametrize("scenario", ["storage_shared", "contiguous_clone"])
def test_meta_shows_the_metadata_but_no_data_pointers(run_suite, scenario):
    """On meta the programs' plain values (strides, `_is_view()`) are compared; storages there have bytes but
    no address, so storage sharing is unavailable rather than "always shared"."""
    record = run_suite("views", scenario, "float32", device="meta", max_examples=10)
    expected = Outcome.RUNTIME_UNAVAILABLE if scenario == "storage_shared" else Outcome.PASSED
    assert record["outcome"] is expected, record


@pytest.mark.parametrize("bug, scenario", [("permute_copies", "transpose_views"),
                                           ("as_strided_relative_offset", "strided_views"),
                                           ("expand_materializes", "expand_views"),
                                           ("contiguous_keeps_channels_last", "contiguous_clone")])
def test_each_seeded_bug_is_detected(run_suite, bug, scenario):
    record = run_suite("views", scenario, "float32", device="faulty", bugs=(bug,), max_examples=30, shrink=False)
    assert record["outcome"] in (Outcome.FAILED, Outcome.ERROR), record


def test_the_bugs_stay_silent_without_their_condition():
    cube, plain = torch.zeros(2, 3, 4), torch.zeros(3, 4)
    assert BUG["permute_copies"].fires(PERMUTE, (cube, [2, 0, 1]), {})
    assert not BUG["permute_copies"].fires(PERMUTE, (plain, [1, 0]), {})
    assert not BUG["permute_copies"].fires(PERMUTE, (cube, [0, 1, 2]), {})
    offset = torch.zeros(10)[2:]
    assert BUG["as_strided_relative_offset"].fires(AS_STRIDED, (offset, [2], [1], 0), {})
    assert not BUG["as_strided_relative_offset"].fires(AS_STRIDED, (torch.zeros(10), [2], [1], 3), {})
    assert not BUG["as_strided_relative_offset"].fires(AS_STRIDED, (offset, [2], [1]), {})
    assert BUG["expand_materializes"].fires(EXPAND, (torch.zeros(3), [2, 3]), {})
    assert not BUG["expand_materializes"].fires(EXPAND, (torch.zeros(3, 1), [3, 4]), {})
    assert not BUG["expand_materializes"].fires(EXPAND, (torch.zeros(3), [1, 3]), {})
    channels_last = torch.zeros(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert BUG["contiguous_keeps_channels_last"].fires(CLONE, (channels_last,), {"memory_format": torch.contiguous_format})
    assert not BUG["contiguous_keeps_channels_last"].fires(CLONE, (channels_last,), {})
    assert not BUG["contiguous_keeps_channels_last"].fires(CLONE, (torch.zeros(2, 3, 4, 5),),
                                                           {"memory_format": torch.contiguous_format})


def test_a_materialised_broadcast_is_stored_small(run_suite, tmp_path):
    record = run_suite("views", "expand_views", "float32", device="faulty", bugs=("expand_materializes",),
                       max_examples=20, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED
    sample = load_case(record["counterexample"]["path"]).sample()
    assert sample.input.numel() <= 2, sample.input.shape  # one small tensor broadcast along a new leading dim
    assert "expand" in str(sample.args) or "broadcast_to" in str(sample.args)


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(st.data())
def test_drawn_view_chains_are_valid_views_of_their_input(data):
    shape = data.draw(st.sampled_from([(24,), (4, 6), (2, 3, 4), (1, 2, 3, 4), (), (0, 3)]))
    t = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    family = data.draw(st.sampled_from(sorted(FAMILIES)))
    steps = draw_view_chain(data.draw, t, (family,))
    view = apply_steps(t, steps)  # no step raises where the chain stands
    assert isinstance(view, torch.Tensor)


def test_the_chain_program_writes_through_the_view_into_the_base():
    base = torch.zeros(2, 3)
    seen, before, view, after, sibling, storage = view_chain_write(base, ((("transpose", (0, 1), None)),), "distinct",
                                                                   ((("select", (0, 1), None)),))
    assert seen == ((3, 2), (1, 3), 0, True, True)
    assert after.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 1.0]] and sibling.tolist() == [2.0, 4.0, 1.0]
    assert storage.tolist() == [1.0, 3.0, 5.0, 2.0, 4.0, 1.0] and before.abs().sum() == 0


def test_the_overlap_program_reports_cpu_refusals_by_type():
    error, work = overlap_rules(torch.arange(4.0).reshape(2, 2), "expand_add_")
    assert error == "RuntimeError" and work.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert overlap_rules(torch.arange(4.0).reshape(2, 2), "self_copy_")[0] == ""


def test_exact_comparison_names_the_first_differing_element():
    assert_same_bits((torch.tensor([float("nan"), 1.0]),), (torch.tensor([float("nan"), 1.0]),), "p")
    with pytest.raises(AssertionError, match=r"\[1, 0\] = 0.0, CPU gives -0.0"):
        assert_same_bits(torch.tensor([[1.0], [0.0]]), torch.tensor([[1.0], [-0.0]]), "p")



def test_under_torch_compile_a_refusal_the_program_cannot_record_is_found_in_cpus_result():
    # copy_ into an expanded view: CPU's program records RuntimeError; compiled, copy_'s meta refuses while dynamo
    # traces (wrapped in TorchRuntimeError), outside the program's try: the program_check makes such a case
    # unavailable, as the refusal CPU's result records
    import torch._dynamo

    from torchcts.engine.error_cause import find_cause
    from torchcts.engine.programs import recorded_refusal

    expected = overlap_rules(torch.ones(3, 3), "expand_copy_")
    assert expected[0] == "RuntimeError"
    torch._dynamo.reset()
    with pytest.raises(RuntimeError) as caught:
        torch.compile(overlap_rules, backend="aot_eager")(torch.ones(3, 3), "expand_copy_")
    cause = find_cause(caught.value)
    assert cause.wrappers == ("TorchRuntimeError", "Unsupported") and not cause.compile_failure
    assert recorded_refusal(expected, cause.error) == "RuntimeError"
    assert recorded_refusal(overlap_rules(torch.ones(3, 3), "self_copy_"), cause.error) is None  # CPU accepts
    assert recorded_refusal(expected, AssertionError("x")) is None  # another type is no recorded refusal


def test_under_torch_compile_overlap_rules_copy_is_not_compared_where_both_refuse(run_suite, monkeypatch):
    # only expand_copy_ drawn: CPU records RuntimeError, the compiled program raises it (wrapped): not comparable
    import torchcts.properties.suites.views as views

    monkeypatch.setattr(views, "OVERLAP_KINDS", ("expand_copy_",))
    record = run_suite("views", "overlap_rules", "float32", max_examples=4, compile_backend="aot_eager")
    assert record["outcome"] is Outcome.PASSED, record.get("error")  # before: an error (raised where CPU did not)
    assert record["unavailable_cases"] >= 1  # the cases whose expanded view overlaps; a 1-column one passes


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_under_torch_compile_an_overlap_cpu_refuses_and_the_compiled_program_accepts_fails(run_suite):
    # float32 add_ into an expanded view: aot_eager's functionalized graph does not refuse where CPU does
    accepted = run_suite("views", "overlap_rules", "float32", max_examples=4, compile_backend="aot_eager")
    assert accepted["outcome"] is Outcome.FAILED and "CPU gives 'RuntimeError'" in accepted["error"]
