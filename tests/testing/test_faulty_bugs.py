"""Every seeded bug fires on an input that meets its condition and stays silent on one that does not."""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys

import pytest
import torch

from torchcts.strategies import place, same_bits
from torchcts.testing import faulty

INF, NAN = math.inf, math.nan
CHANNELS_LAST = torch.channels_last

# bug -> (op under test, inputs that trigger it, inputs that do not)
CASES = {
    "noncontiguous_add": (torch.add, lambda: (torch.arange(12.0).reshape(3, 4).t(), torch.ones(4, 3)),
                          lambda: (torch.arange(12.0).reshape(4, 3), torch.ones(4, 3))),
    "storage_offset_ignored": (torch.abs, lambda: (torch.arange(-5.0, 5.0)[2:],), lambda: (torch.arange(-5.0, 5.0),)),
    "expanded_mul": (torch.mul, lambda: (torch.tensor([[1.0, 2.0, 3.0]]).expand(4, 3), torch.full((4, 3), 2.0)),
                     lambda: (torch.tensor([[1.0, 2.0, 3.0]]).repeat(4, 1), torch.full((4, 3), 2.0))),
    "tile_sum": (torch.sum, lambda: (torch.arange(1025.0),), lambda: (torch.arange(1024.0),)),
    "bfloat16_mul": (torch.mul, lambda: (torch.tensor([1.5, 3.25], dtype=torch.bfloat16),
                                         torch.tensor([1.1, 2.3], dtype=torch.bfloat16)),
                     lambda: (torch.tensor([1.5, 3.25]), torch.tensor([1.1, 2.3]))),
    "nan_ignored_max": (torch.max, lambda: (torch.tensor([1.0, NAN, 3.0]),), lambda: (torch.tensor([1.0, 2.0, 3.0]),)),
    "negative_zero_reciprocal": (torch.reciprocal, lambda: (torch.tensor([-0.0, 2.0]),),
                                 lambda: (torch.tensor([0.0, 2.0]),)),
    "inf_minus_inf": (torch.sub, lambda: (torch.tensor([INF, 1.0]), torch.tensor([INF, 1.0])),
                      lambda: (torch.tensor([INF, 1.0]), torch.tensor([1.0, 1.0]))),
    "empty_mean": (torch.mean, lambda: (torch.empty(0),), lambda: (torch.tensor([1.0, 2.0]),)),
    "integer_overflow_saturates": (torch.add, lambda: (torch.tensor([2**31 - 1], dtype=torch.int32),
                                                       torch.tensor([1], dtype=torch.int32)),
                                   lambda: (torch.tensor([5], dtype=torch.int32), torch.tensor([1], dtype=torch.int32))),
    "promotion_to_float64": (torch.add, lambda: (torch.tensor([1.5]), torch.tensor([2])),
                             lambda: (torch.tensor([1.5]), torch.tensor([2.0]))),
    "channels_last_output_strides": (torch.relu, lambda: (torch.randn(1, 3, 2, 2).contiguous(memory_format=CHANNELS_LAST),),
                                     lambda: (torch.randn(1, 3, 2, 2),)),
    "unstable_sort": (lambda x: torch.sort(x, stable=True), lambda: (torch.tensor([2.0, 1.0, 2.0, 1.0]),),
                      lambda: (torch.tensor([4.0, 3.0, 2.0, 1.0]),)),
    "argmax_last_tie": (torch.argmax, lambda: (torch.tensor([1.0, 3.0, 3.0]),), lambda: (torch.tensor([1.0, 3.0, 2.0]),)),
    "long_cumsum_half_accumulator": (lambda x: torch.cumsum(x, 0), lambda: (torch.arange(5000.0) / 7,),
                                     lambda: (torch.arange(4096.0) / 7,)),
    "matmul_tile_edge": (torch.mm, lambda: (torch.ones(2, 33), torch.ones(33, 2)),
                         lambda: (torch.ones(2, 32), torch.ones(32, 2))),
    "float64_sum_in_float32": (torch.sum, lambda: (torch.arange(10, dtype=torch.float64) / 7,),
                               lambda: (torch.arange(10.0) / 7,)),
    "float32_matmul_half_accumulator": (torch.mm, lambda: (torch.arange(6.0).reshape(2, 3) / 7, torch.ones(3, 2) / 3),
                                        lambda: (torch.arange(6.0, dtype=torch.float64).reshape(2, 3) / 7,
                                                 torch.ones(3, 2, dtype=torch.float64) / 3)),
}


@pytest.fixture(autouse=True)
def no_bugs_afterwards():
    yield
    faulty.disable_bugs()


def agrees_with_cpu(op, make_inputs) -> bool:
    """Same dtype, shape, strides and bits on faulty as on CPU, for inputs placed exactly."""
    inputs = make_inputs()
    expected = op(*inputs)
    actual = op(*place(inputs, "faulty").value)
    pairs = zip(expected, actual) if isinstance(expected, tuple) else [(expected, actual)]
    for want, got in pairs:
        assert got.device.type == "faulty"
        if (got.dtype, got.shape, got.stride()) != (want.dtype, want.shape, want.stride()):
            return False
        if not same_bits(got.cpu(), want):
            return False
    return True


def test_the_table_has_every_bug_and_enough_of_them():
    from torchcts.testing.faulty.bugs import CORE_BUGS

    wrong_result = {bug.name for bug in CORE_BUGS if bug.kind == "wrong-result"}
    assert wrong_result == set(CASES)  # the suites' bugs are tested with their suites (tests/properties/)
    assert len(wrong_result) >= 15
    assert {bug.kind for bug in faulty.BUGS.values()} == {"wrong-result", "crash", "hang", "missing-kernel", "wrong-error"}
    for bug in faulty.BUGS.values():
        assert bug.ops and bug.condition and bug.description


@pytest.mark.parametrize("name", sorted(CASES))
def test_bug_fires_only_under_its_condition(name):
    op, triggering, plain = CASES[name]
    assert agrees_with_cpu(op, triggering), "with no bug on, faulty must agree with CPU"
    faulty.enable_bugs(name)
    assert faulty.active_bugs() == (name,)
    assert not agrees_with_cpu(op, triggering), f"{name} did not change the result"
    assert agrees_with_cpu(op, plain), f"{name} fired without its condition"


def test_all_switches_on_every_bug_but_crash_and_hang():
    faulty.enable_bugs("all")
    from torchcts.testing.faulty.suite_bugs import SUITE_BUGS

    suites = {bug.name for bug in SUITE_BUGS if bug.in_all}
    assert set(faulty.active_bugs()) == set(CASES) | {"missing_kernel"} | suites  # tests/engine/test_missing_kernels.py
    faulty.disable_bugs("tile_sum")
    assert "tile_sum" not in faulty.active_bugs()


def test_unknown_bug_names_are_refused():
    with pytest.raises(ValueError, match="unknown faulty bug 'tile_summ'"):
        faulty.enable_bugs("tile_summ")


def run_python(code: str, bugs: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=bugs)  # a plain python process asks for the device
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_bugs_switch_on_from_the_environment_in_a_fresh_process():
    code = "import torch; print(torch.arange(1025.0, device='faulty').sum().item())"
    assert run_python(code, "").stdout.split() == [str(float(sum(range(1025))))]
    assert run_python(code, "tile_sum").stdout.split() == [str(float(sum(range(1024))))]


@pytest.mark.slow
def test_crash_bug_aborts_the_process_only_under_its_condition():
    code = "import torch; x = torch.ones({n}, device='faulty'); print(torch.hypot(x, x).cpu().sum().item())"
    assert run_python(code.format(n=3), "crash_hypot").returncode == 0
    assert run_python(code.format(n=3), "all").returncode == 0
    crashed = run_python(code.format(n=4), "crash_hypot")
    assert crashed.returncode == -signal.SIGABRT


@pytest.mark.slow
def test_hang_bug_sleeps_past_any_timeout_only_under_its_condition():
    """Timed from the call, not from the start: a slow torch import proves nothing about the op."""
    code = ("import torch; x = torch.ones({n}, device='faulty'); print('calling', flush=True); "
            "print(torch.logaddexp(x, x).cpu().sum().item())")
    assert run_python(code.format(n=2), "hang_logaddexp").returncode == 0
    hung = subprocess.Popen([sys.executable, "-c", code.format(n=4)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS="hang_logaddexp"))
    try:
        assert select.select([hung.stdout], [], [], 600)[0] and hung.stdout.readline() == "calling\n"
        with pytest.raises(subprocess.TimeoutExpired):
            hung.wait(timeout=5)  # the op sleeps for an hour: still running, however slow the machine
    finally:
        hung.kill()
        hung.wait()


def test_docs_list_every_bug():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "faulty-backend.md").read_text()
    assert [name for name in faulty.BUGS if f"| `{name}` |" not in doc] == []
