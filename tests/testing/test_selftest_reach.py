"""The selftest's pruning: the clean run notes where each seeded bug would fire without changing a result, every
registered bug is watched on each of its overloads, and a bug's run selects the items that would fire it (or, for
a bug counting across calls, every item of the ops that reached it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from torchcts.strategies import place, same_bits
from torchcts.testing import faulty
from torchcts.testing.faulty import bug_model, would_fire
from torchcts.testing.faulty.bugs import BUGS, CORE_BUGS
from torchcts.testing.selftest_reach import (
    BugReach, bug_reach, fired_bugs, group_reaches, reached_items, selected_items,
)



def _core_cases() -> dict:
    """The core bugs' triggering and plain inputs, as tests/testing/test_faulty_bugs.py tests them."""
    spec = importlib.util.spec_from_file_location("faulty_bug_cases", Path(__file__).with_name("test_faulty_bugs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


CASES = _core_cases()


@pytest.fixture
def watching():
    faulty.disable_bugs()
    would_fire.watch(BUGS.values())
    faulty.start_trace()
    yield
    faulty.take_trace()
    would_fire.watch(())
    faulty.disable_bugs()


def noted(op, make_inputs) -> set[str]:
    """The bugs the trace says would fire on `op` of these inputs; the result must be CPU's, bit for bit."""
    inputs = make_inputs()
    faulty.take_trace()
    expected, actual = op(*inputs), op(*place(inputs, "faulty").value)
    pairs = zip(expected, actual) if isinstance(expected, tuple) else [(expected, actual)]
    for want, got in pairs:
        assert same_bits(got.cpu(), want), "watching must not change a result"
    return would_fire.bugs_noted(faulty.take_trace())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_clean_run_notes_where_each_core_bug_would_fire_and_changes_nothing(watching, name):
    op, triggering, plain = CASES[name]
    assert name in noted(op, triggering)
    assert name not in noted(op, plain)


def test_a_bug_that_is_on_is_noted_fired_not_would_fire(watching):
    faulty.enable_bugs("tile_sum")
    faulty.take_trace()
    torch.arange(1025.0, device="faulty").sum().item()
    trace = faulty.take_trace()
    assert "bug:tile_sum" in trace and "would:tile_sum" not in trace


def test_nothing_is_noted_unless_watching():
    faulty.start_trace()
    torch.arange(1025.0, device="faulty").sum().item()
    assert not would_fire.bugs_noted(faulty.take_trace())


def test_every_registered_bug_is_watched_on_each_of_its_overloads_and_those_are_traced(watching):
    steps = {getattr(bug_model, name) for name in dir(bug_model) if name.endswith("_STEP")}
    for bug in BUGS.values():
        if not bug.in_all:
            assert all(bug not in would_fire.watched_on(op) for op in bug.ops), bug.name  # crash, hang: never
            continue
        for op in bug.ops:
            assert bug in would_fire.watched_on(op), (bug.name, op)
            if op not in steps:  # an overload: its name as the device trace writes it (str of the OpOverload)
                namespace, name, overload = op.split(".")
                assert str(getattr(getattr(getattr(torch.ops, namespace), name), overload)) == op, (bug.name, op)
    assert {bug.name for bug in CORE_BUGS} <= set(BUGS)


def record(item: str, outcome: str, trace: tuple[str, ...] | None) -> dict:
    prop, op, _, dtype = item.split("::")
    found = {"item": item, "property": prop, "op": op, "dtype": dtype, "outcome": outcome}
    if trace is not None:
        found["device_ops"] = list(trace)
    return found


CLEAN = [
    record("forward::sum::function::float32", "passed", ("aten.sum.default", "would:tile_sum")),
    record("forward::sum::function::float64", "passed", ("aten.sum.default",)),
    record("layout::sum::function::float32", "passed", ("aten.sum.default",)),
    record("forward::nansum::function::float32", "passed", ("aten.sum.default", "would:tile_sum")),
    record("forward::mean::function::float32", "failed", ("aten.sum.default", "would:tile_sum")),  # fails clean
    record("forward::abs::function::float32", "passed", ("aten.abs.default",)),
    record("forward::abs::function::int8", "deselected", None),
    record("layout::nansum::function::float32", "runtime_unavailable", ("aten.sum.default", "would:tile_sum")),
]


def test_a_precise_bug_reruns_only_the_items_that_would_fire_it_that_do_not_fail_clean():
    reach = bug_reach(CLEAN, BUGS["tile_sum"], ("forward", "layout"))
    assert reach.reached_ops == ("mean", "nansum", "sum")
    assert reach.firing_items == ("forward::nansum::function::float32", "forward::sum::function::float32",
                                  "layout::nansum::function::float32")  # runtime_unavailable clean: may error
    assert (reach.properties, reach.ops) == (("forward", "layout"), ("nansum", "sum"))
    assert reach.ops_pattern() == "^(nansum|sum)$"
    assert selected_items(CLEAN, reach) == ["forward::sum::function::float32", "forward::sum::function::float64",
                                            "layout::sum::function::float32", "forward::nansum::function::float32",
                                            "layout::nansum::function::float32"]
    assert len(reached_items(CLEAN, reach)) == 6  # before pruning: every item of a reached op


def test_a_precise_bug_no_item_would_fire_is_not_rerun():
    reach = bug_reach(CLEAN, BUGS["float64_sum_in_float32"], ("forward", "layout"))
    assert reach.reached_ops == ("mean", "nansum", "sum") and not reach.firing_items and not reach.runs


def test_a_bug_counting_across_calls_reruns_every_item_of_the_ops_that_reached_it():
    bug = BUGS["queue_wrap_drops_op"]
    assert not bug.precise
    clean = [record("stress::tanh_queue::function::float32", "passed", ("aten.tanh.default",)),
             record("stress::sync_loop::function::float32", "passed", ("faulty.synchronize",)),
             record("stress::big_add::function::float32", "passed", ("aten.add.Tensor",))]
    reach = bug_reach(clean, bug, ("stress", "streams"))
    assert (reach.properties, reach.ops) == (("streams", "stress"), ("sync_loop", "tanh_queue"))
    assert not bug_reach(clean[2:], bug, ("stress",)).runs


def reach(bug: str, items: tuple[str, ...]) -> BugReach:
    return BugReach(bug, tuple(sorted({i.split("::")[1] for i in items})), items,
                    tuple(sorted({i.split("::")[0] for i in items})), tuple(sorted({i.split("::")[1] for i in items})))


def test_bugs_that_share_no_firing_item_share_a_run_and_each_item_has_one_owner():
    clean = [record(f"{prop}::{op}::function::float32", "passed", ()) for prop in ("forward", "layout")
             for op in ("add", "mul", "sum")]
    a = reach("a", ("forward::add::function::float32",))
    b = reach("b", ("forward::mul::function::float32", "layout::mul::function::float32"))
    c = reach("c", ("forward::add::function::float32", "layout::sum::function::float32"))  # shares an item with a
    groups = group_reaches([a, b, c], clean)
    assert [group.names for group in groups] == [("b", "c"), ("a",)]  # most firing items first
    assert groups[0].owners == {"forward::mul::function::float32": "b", "layout::mul::function::float32": "b",
                                "forward::add::function::float32": "c", "layout::sum::function::float32": "c"}
    assert groups[0].ops_pattern() == "^(add|mul|sum)$" and groups[0].properties == ("forward", "layout")


def test_a_bug_that_would_add_too_many_items_to_a_group_runs_apart():
    clean = [record(f"forward::op{n}::function::float32", "passed", ()) for n in range(40)]
    clean += [record(f"layout::op{n}::function::float32", "passed", ()) for n in range(40)]
    wide = reach("wide", tuple(f"forward::op{n}::function::float32" for n in range(30)))
    other = reach("other", ("layout::op39::function::float32",))  # layout x 31 ops: 30 items no bug fires
    assert [group.names for group in group_reaches([wide, other], clean)] == [("wide",), ("other",)]
    assert fired_bugs(["aten.add.Tensor", "bug:a", "would:b"]) == {"a"}
