"""The stress suite (`torchcts.properties.suites.stress`): large tensors sized from the manifest's limits, long op
sequences and loops match CPU on the clean faulty device and on CPU, and each seeded bug (a capped launch grid, a
wrapping command queue) is caught and fires only under its condition."""

from __future__ import annotations

import attrs
import pytest
import torch

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest.model import ResourceLimits
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.stress import SCENARIOS, stress, tensor_budget_bytes
from torchcts.testing.faulty.bug_model import SYNCHRONIZE_STEP
from torchcts.testing.faulty.suite_bugs.stress import BUGS
from tests.properties.conftest import complete_manifest, item_for

BUG = {bug.name: bug for bug in BUGS}
MIB = 2**20


@pytest.fixture(scope="module")
def run_stress(tmp_path_factory):
    """Run one stress item at `level` with `max_tensor_size_mb` (small by default: tests stay fast)."""
    root = tmp_path_factory.mktemp("stress")

    def run(scenario, device="faulty", bugs=(), max_examples=3, level=7, tensor_mb=2, shrink=False):
        from torchcts.testing import faulty

        faulty.disable_bugs()
        if bugs:
            faulty.enable_bugs(*bugs)
        manifest = complete_manifest(root, device)
        manifest = attrs.evolve(manifest, resource_limits=attrs.evolve(manifest.resource_limits,
                                                                       max_tensor_size_mb=tensor_mb))
        settings = EngineSettings(target=Target(device), manifest=manifest, level=level, max_examples=max_examples,
                                  versions=versions(), shrink=shrink)
        try:
            return run_item(item_for("stress", scenario, "float32"), settings)
        finally:
            faulty.disable_bugs()

    return run


def test_the_suite_is_registered_at_level_7_with_the_device_api_capability():
    registry.load()
    spec = registry.get("stress")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("device_api", 7, SCENARIOS)


def test_the_tensor_budget_follows_the_manifests_limits():
    assert tensor_budget_bytes(ResourceLimits(), 7) == 64 * MIB
    assert tensor_budget_bytes(ResourceLimits(), 8) == 256 * MIB
    assert tensor_budget_bytes(ResourceLimits(max_tensor_size_mb=8), 8) == 8 * MIB
    assert tensor_budget_bytes(ResourceLimits(max_device_memory_mb=100), 7) == 20 * MIB  # / DEVICE_PEAK
    assert tensor_budget_bytes(ResourceLimits(max_tensor_size_mb=64, max_system_memory_mb=240), 7) == 10 * MIB
    # a replay: the smallest level's default, unless the manifest sets the tensor size
    assert tensor_budget_bytes(ResourceLimits(), 8, replay=True) == 64 * MIB
    assert tensor_budget_bytes(ResourceLimits(max_tensor_size_mb=256), 8, replay=True) == 256 * MIB


@pytest.mark.slow
def test_the_memory_limits_divide_by_the_programs_measured_peak():
    """DEVICE_PEAK covers the program's own peak (measured 4.0x its tensor): a device limit of DEVICE_PEAK times
    the tensor budget holds it. Measured in a fresh process on CPU with one thread and a 64 MiB tensor: its peak
    resident size (VmHWM, reset through /proc/self/clear_refs) over its resident size just before, both in that
    process. Not ru_maxrss: a child's starts at its parent's size (a grown pytest worker's), so under xdist the
    difference read 0."""
    import os
    import subprocess
    import sys

    from torchcts.properties.suites.stress import DEVICE_PEAK

    assert tensor_budget_bytes(ResourceLimits(max_device_memory_mb=DEVICE_PEAK * 64), 7) == 64 * MIB
    script = ("import gc, torch\n"
              "from torchcts.properties.suites.stress import stress\n"
              "def status(field):\n"
              "    with open('/proc/self/status') as stream:\n"
              "        return next(int(l.split()[1]) * 1024 for l in stream if l.startswith(field + ':'))\n"
              "torch.set_num_threads(1)\n"
              "stress(torch.zeros(1), 'large_tensor', 4096, [0], 0, 1)\n"
              "gc.collect()\n"
              "with open('/proc/self/clear_refs', 'w') as stream:\n"
              "    stream.write('5')\n"
              "before = status('VmRSS')\n"
              f"out = stress(torch.zeros(1), 'large_tensor', {64 * MIB}, [0], 0, 1)\n"
              "print(status('VmHWM') - before)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.split()[-1])
    assert 64 * MIB <= peak <= DEVICE_PEAK * 64 * MIB, peak / (64 * MIB)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_stress, scenario):
    assert run_stress(scenario, device="cpu")["outcome"] is Outcome.PASSED
    assert run_stress(scenario)["outcome"] is Outcome.PASSED


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_each_seeded_bug_is_detected(run_stress):
    record = run_stress("large_tensor", bugs=("large_grid_tail_skipped",), max_examples=2, tensor_mb=40)
    assert record["outcome"] is Outcome.FAILED and "8388608" in str(record), record  # the first element past 2**23
    record = run_stress("long_loop", bugs=("queue_wrap_drops_op",), max_examples=6)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_grid_bug_needs_more_than_2_23_elements():
    grid = BUG["large_grid_tail_skipped"]
    add = torch.ops.aten.add.Tensor
    big, edge = torch.empty(2**23 + 1), torch.empty(2**23)
    assert grid.fires(add, (big, big), {}) and not grid.fires(add, (edge, edge), {})
    assert not grid.fires(add, (big, torch.empty(1)), {})  # a broadcast scalar-like operand: another kernel


def test_the_queue_bug_drops_only_the_256th_queued_tanh_and_synchronize_drains_it():
    from torchcts.testing import faulty

    faulty.enable_bugs("queue_wrap_drops_op")
    try:
        x = torch.full((64,), 0.5, device="faulty")
        torch.faulty.synchronize()
        outputs = [torch.tanh(x) for _ in range(256)]
        assert [i for i, o in enumerate(outputs) if o.cpu()[0].item() == 0.5] == [255]
        torch.faulty.synchronize()
        for _ in range(255):
            torch.tanh(x)
            torch.tanh(torch.full((63,), 0.5, device="faulty"))  # fewer than 64 elements: not counted
        torch.faulty.synchronize()
        assert torch.tanh(x).cpu()[0].item() != 0.5  # the count restarted at synchronize
    finally:
        faulty.disable_bugs()
    assert BUG["queue_wrap_drops_op"].ops == ("aten.tanh.default", SYNCHRONIZE_STEP)


def test_the_program_is_the_same_on_cpu_whatever_the_synchronization():
    x = torch.zeros(1)
    every_op = stress(x, "op_sequence", 100, [0, 2, 4], 300, 1)
    rarely = stress(x, "op_sequence", 100, [0, 2, 4], 300, 512)
    assert torch.equal(every_op, rarely) and every_op.abs().max() <= 1


def test_a_stored_case_past_the_runs_budget_is_not_run(tmp_path):
    """A corpus case comes from another team: one asking for a 1 TiB tensor or a billion steps is outside the
    declared bounds (the case reader refuses it); an 8 GiB tensor is within them but past this run's budget."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.engine.run import build_context, property_check
    from torchcts.engine.outcome import NotRun
    from torchcts.properties.suites.stress import PARAMS
    from torchcts.strategies import Case

    for args, field in ((("large_tensor", 2**40, [0], 0, 1), "inputs.args[1] (size)"),
                        (("long_loop", 16, [0], 10**9, 1), "inputs.args[3] (length)")):
        assert PARAMS[args[0]].problem(SampleInput(torch.zeros(1), args=args))[0] == field
    settings = EngineSettings(target=Target("cpu"), manifest=complete_manifest(tmp_path, "cpu"), level=7,
                              max_examples=1, versions=versions())
    args = ("large_tensor", 2**33, [0], 0, 1)
    assert PARAMS["large_tensor"].problem(SampleInput(torch.zeros(1), args=args)) is None
    context = build_context(item_for("stress", "large_tensor", "float32"), settings)
    context.replay = [Case("large_tensor", "scenario", torch.float32, SampleInput(torch.zeros(1), args=args), 0)]
    with pytest.raises(NotRun, match="past this run's budget"):
        property_check("stress")(context)


def test_a_replay_at_level_8_takes_the_smallest_levels_budget_unless_the_manifest_sets_one(tmp_path):
    """A stored 128 MiB case (within level 8's default 256 MiB) is not run by a replay with no tensor size set
    (a 256 MiB case cost 5.5 GB on replay); a manifest setting max_tensor_size_mb opts in (a budget of 1 MiB
    refuses a 2 MiB case the same way, cheap to run here)."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.engine.outcome import NotRun
    from torchcts.engine.run import build_context, property_check
    from torchcts.strategies import Case

    def replayed(size, manifest):
        settings = EngineSettings(target=Target("cpu"), manifest=manifest, level=8, max_examples=1,
                                  versions=versions())
        context = build_context(item_for("stress", "large_tensor", "float32"), settings)
        args = ("large_tensor", size, [0], 0, 1)
        context.replay = [Case("large_tensor", "scenario", torch.float32, SampleInput(torch.zeros(1), args=args), 0)]
        property_check("stress")(context)

    manifest = complete_manifest(tmp_path, "cpu")
    with pytest.raises(NotRun, match=f"past this run's budget for one \\({64 * MIB} bytes"):
        replayed(128 * MIB, manifest)
    opted = attrs.evolve(manifest, resource_limits=attrs.evolve(manifest.resource_limits, max_tensor_size_mb=2))
    replayed(2 * MIB, opted)  # runs and passes: within the budget the manifest sets
    with pytest.raises(NotRun, match=f"past this run's budget for one \\({2 * MIB} bytes"):
        replayed(4 * MIB, opted)
