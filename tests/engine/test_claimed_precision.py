"""A dtype claim proves that dtype's precision: default tolerances are capped at ULPs of the claimed dtype, and a
backend computing in a narrower dtype (the faulty device's seeded bugs) fails where assert_close's defaults pass it."""

from __future__ import annotations

import math

import pytest
import torch

from torchcts.engine import oracle, precision
from torchcts.plan.catalog import find_op
from torchcts.strategies import place
from torchcts.testing import faulty

EPS64 = torch.finfo(torch.float64).eps
EPS32 = torch.finfo(torch.float32).eps


@pytest.fixture(autouse=True)
def no_bugs_afterwards():
    yield
    faulty.disable_bugs()


def test_defaults_are_capped_at_ulps_of_the_claimed_dtype():
    assert oracle.tolerance(torch.float64, find_op("sin")) == oracle.Tolerance(64 * EPS64, 64 * EPS64, "default")
    assert oracle.tolerance(torch.complex128, find_op("sin")).rtol == 64 * EPS64
    # linalg and scenarios depend on a condition number: 2^22 ULPs, still 64 times below one float32 rounding
    assert oracle.tolerance(torch.float64, find_op("linalg.inv")).rtol == 2**22 * EPS64
    assert oracle.tolerance(torch.float64).rtol == 2**22 * EPS64 < 2.0**-24 / 64 * 1.01
    # path-shapes cases and gradients name their category without an op
    assert oracle.tolerance(torch.float64, None, None, "cpu", ("backward", "matmul")).rtol == 64 * EPS64
    # the narrower dtypes keep assert_close's few-ULP rtol; float32's absolute 1e-5 (84 ULPs) becomes 64 ULPs
    assert oracle.tolerance(torch.float32, find_op("sin")) == oracle.Tolerance(1.3e-6, 64 * EPS32, "default")
    assert oracle.tolerance(torch.float16, find_op("sin")) == oracle.Tolerance(1e-3, 1e-5, "default")
    assert oracle.tolerance(torch.bfloat16, find_op("sin")) == oracle.Tolerance(1.6e-2, 1e-5, "default")


def test_accumulation_floor_admits_another_summation_order_but_not_a_narrower_dtype():
    terms = torch.tensor([1e17, 1.0, -1e17], dtype=torch.float64)
    want = terms.sum()  # one order: 1e17 + 1 rounds back to 1e17, so 0 (or 1 in another order)
    other_order = (terms[0] + terms[2]) + terms[1]
    assert want.item() != other_order.item()
    tol = oracle.tolerance(torch.float64, find_op("sum")).widened(oracle.accumulation_widening(terms, want))
    assert not oracle.compare(other_order, want, oracle.normwise_floor(tol, want)).ok  # the result's scale alone
    floored = oracle.normwise_floor(tol, want, terms, "reduction")
    assert "accumulation" in floored.source and oracle.compare(other_order, want, floored).ok
    # the same floor, in float64, is 2^29 times too tight for a float32 sum of 4,096 terms
    values = torch.linspace(-9, 9.5, 4096, dtype=torch.float64)
    want = values.sum()
    tol = oracle.tolerance(torch.float64, find_op("sum")).widened(oracle.accumulation_widening(values, want))
    got = values.float().sum().double()
    assert not oracle.compare(got, want, oracle.normwise_floor(tol, want, values, "reduction")).ok


def test_accumulation_floor_of_products_multiplies_the_operands_scales():
    a, b = torch.full((2, 8), 3.0), torch.full((8, 2), 5.0)
    n = oracle.terms_per_output([a, b], a @ b)  # (16 + 16) / 4 elements in per element out
    assert precision.accumulation_floor([a, b], a @ b, "matmul", n) == pytest.approx(math.sqrt(8) * EPS32 * 8 * 15)
    assert precision.accumulation_floor([a, b], a @ b, "reduction", n) == pytest.approx(math.sqrt(8) * EPS32 * 8 * 5)
    assert precision.accumulation_floor(torch.ones(3), torch.ones(3), "elementwise", 1.0) == 0.0


def _samples(name, dtype):
    op = find_op(name)
    return op, [s for s in op.sample_inputs("cpu", dtype) if s.input.numel()]


def _device_result(op, sample):
    args = place((sample.input, list(sample.args), dict(sample.kwargs)), "faulty").value
    return op(args[0], *args[1], **args[2])


def _assert_close_rule(dtype, inputs, expected):
    """What TorchCTS accepted before the cap: assert_close's defaults, widened for accumulation, norm-wise floored."""
    rtol, atol = {torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-6, 1e-5)}[dtype]
    widened = oracle.Tolerance(rtol, atol, "assert_close").widened(oracle.accumulation_widening(inputs, expected))
    return oracle.normwise_floor(widened, expected)


def _oracle_rule(op, dtype, inputs, expected):
    """What the forward property uses now (`CaseContext.assert_matches`)."""
    tol = oracle.tolerance(dtype, op).widened(oracle.accumulation_widening(inputs, expected))
    return oracle.normwise_floor(tol, expected, inputs, oracle.category(op.name))


def test_a_float64_sum_computed_in_float32_passed_assert_close_defaults_and_now_fails():
    op, samples = _samples("sum", torch.float64)
    faulty.enable_bugs("float64_sum_in_float32")
    old, new = [], []
    for sample in samples:
        inputs = [sample.input, list(sample.args), dict(sample.kwargs)]
        expected = op(sample.input, *sample.args, **sample.kwargs)
        actual = _device_result(op, sample)
        old.append(oracle.compare(actual, expected, _assert_close_rule(torch.float64, inputs, expected)).ok)
        new.append(oracle.compare(actual, expected, _oracle_rule(op, torch.float64, inputs, expected)).ok)
    assert len(samples) >= 10 and all(old)  # every OpInfo sample passed: the bug was invisible
    assert not any(new)  # the claimed-precision bound rejects every one of them
    faulty.disable_bugs()
    for sample in samples:  # and a correct float64 device passes the bound
        inputs = [sample.input, list(sample.args), dict(sample.kwargs)]
        expected = op(sample.input, *sample.args, **sample.kwargs)
        tol = _oracle_rule(op, torch.float64, inputs, expected)
        assert oracle.compare(_device_result(op, sample), expected, tol).ok


def test_a_float32_matmul_accumulating_in_float16_fails():
    """float16's relative error (2^-11) is about 4,000 ULPs of float32: assert_close's few-ULP float32 rtol caught it
    already on the OpInfo samples (their values are far above its absolute floor); the bound keeps catching it."""
    op, samples = _samples("mm", torch.float32)
    faulty.enable_bugs("float32_matmul_half_accumulator")
    for sample in samples:
        inputs = [sample.input, list(sample.args), dict(sample.kwargs)]
        expected = op(sample.input, *sample.args, **sample.kwargs)
        actual = _device_result(op, sample)
        assert not oracle.compare(actual, expected, _oracle_rule(op, torch.float32, inputs, expected)).ok
        assert not oracle.compare(actual, expected, _assert_close_rule(torch.float32, inputs, expected)).ok


def _dot_in_reverse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b with each output's k products summed one by one from the last: another order than CPU's."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
    for k in reversed(range(a.shape[1])):
        out += a[:, k:k + 1] * b[k:k + 1, :]
    return out


def test_a_square_matmul_summed_in_another_order_passes_and_one_in_float32_fails():
    # the floor counts the contraction k (64), not elements in over elements out (2 for a square product)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.empty(64, 64, dtype=torch.float64).uniform_(-9, 9, generator=generator) for _ in range(2))
    assert precision.contraction([a, b], "matmul") == 64 and precision.contraction([a, b.T.contiguous()], "matmul") == 64
    expected = a @ b
    tol = oracle.normwise_floor(oracle.tolerance(torch.float64, find_op("mm")), expected, [a, [b], {}], "matmul")
    assert oracle.compare(_dot_in_reverse(a, b), expected, tol).ok
    assert not oracle.compare((a.float() @ b.float()).double(), expected, tol).ok


def test_a_convolution_floor_counts_its_window():
    weight = torch.ones(8, 3, 3, 3, dtype=torch.float64)
    # a bound: the larger of the weight's channel sizes (a transposed convolution's weight holds its input
    # channels first) times the 3x3 window, never elements in over elements out (0.46 here)
    assert precision.contraction([torch.ones(1, 3, 32, 32, dtype=torch.float64), weight], "conv") == 8 * 9


def test_a_float64_elementwise_op_that_sums_gets_the_accumulation_floor():
    # scatter_add's category is "elementwise", yet each output sums many inputs: another order must not fail it
    generator = torch.Generator().manual_seed(1)
    src = torch.empty(4000, dtype=torch.float64).uniform_(-9, 9, generator=generator)
    index = torch.zeros(4000, dtype=torch.int64)
    expected = torch.zeros(1, dtype=torch.float64).scatter_add(0, index, src)
    reordered = torch.zeros(1, dtype=torch.float64).scatter_add(0, index.flip(0), src.flip(0))
    in_float32 = torch.zeros(1, dtype=torch.float32).scatter_add(0, index, src.float()).double()
    tol = oracle.tolerance(torch.float64, find_op("scatter_add"))
    assert oracle.category("scatter_add") == "elementwise" and precision.capped_default(tol)
    floored = oracle.accumulation_floor(tol, expected, [torch.zeros(1, dtype=torch.float64), [0, index, src], {}])
    assert floored.atol > tol.atol and oracle.compare(reordered, expected, floored).ok
    assert not oracle.compare(in_float32, expected, floored).ok
    assert not precision.capped_default(oracle.tolerance(torch.float32, find_op("scatter_add")))  # float32 as before
