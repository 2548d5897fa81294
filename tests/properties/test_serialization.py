"""The serialization suite (`torchcts.properties.suites.serialization`): saved device tensors load back with their
values, strides, offsets and storage sharing; the faulty device's save keeps storages; the seeded save bugs are
caught."""

from __future__ import annotations

import io

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.serialization import SCENARIOS, save_and_load
from torchcts.testing.faulty.bug_model import SAVE_STEP
from torchcts.testing.faulty.suite_bugs.serialization import BUGS

BUG = {bug.name: bug for bug in BUGS}


def test_the_suite_is_registered_with_the_serialization_capability():
    registry.load()
    spec = registry.get("serialization")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("serialization", 3, set(SCENARIOS))


def test_the_program_sees_sharing_survive_a_round_trip():
    base = torch.arange(10.0)
    view, transposed, view_strides, view_offset, t_strides, t_offset, loaded_base, same_device = save_and_load(
        base, "views", 2, 3, 2, [1, 2, 3], True)
    assert view.tolist() == [2.0, 5.0] and transposed.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert (view_strides, view_offset, t_strides, t_offset, same_device) == ((3,), 2, (1, 3), 1, True)
    assert loaded_base.tolist() == [0.0, 1.0, 5.0, 3.0, 4.0, 2.0, 6.0, 7.0, 8.0, 9.0]  # the flip reached the base


def test_faulty_tensors_save_their_storage_and_load_on_either_device():
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    base = torch.arange(6.0, device="faulty")
    buffer = io.BytesIO()
    torch.save([base, base[2:]], buffer)
    for map_location, device in ((None, "faulty"), ("cpu", "cpu"), ("faulty", "faulty")):
        buffer.seek(0)
        loaded_base, loaded_view = torch.load(buffer, weights_only=True, map_location=map_location)
        assert (loaded_base.device.type, loaded_view.device.type, loaded_view.storage_offset()) == (device, device, 2)
        loaded_view.fill_(-1)
        assert loaded_base.cpu().tolist() == [0.0, 1.0, -1.0, -1.0, -1.0, -1.0]


@pytest.mark.parametrize("scenario", ["views", "state_dict", "to_cpu"])
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_suite, scenario):
    assert run_suite("serialization", scenario, max_examples=6)["outcome"] is Outcome.PASSED
    assert run_suite("serialization", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(BUG))
def test_each_seeded_bug_is_detected(run_suite, tmp_path, bug):
    record = run_suite("serialization", "views", device="faulty", bugs=(bug,), max_examples=15, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_fire_only_on_views_of_a_larger_storage():
    whole, offset_view, prefix = torch.arange(4.0), torch.arange(4.0)[1:], torch.arange(4.0)[:2]
    drops, copies = BUG["save_drops_storage_offset"], BUG["save_copies_each_view"]
    assert drops.ops == copies.ops == (SAVE_STEP,)
    assert drops.fires(SAVE_STEP, (offset_view,), {}) and not drops.fires(SAVE_STEP, (prefix,), {})
    assert copies.fires(SAVE_STEP, (prefix,), {}) and not copies.fires(SAVE_STEP, (whole,), {})
    assert drops.perturb(SAVE_STEP, (offset_view,), {}, offset_view).tolist() == [0.0, 1.0, 2.0]
