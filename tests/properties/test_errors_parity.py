"""The `errors` property: the device must reject an OpInfo error input as CPU does (type, and message where stable)."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.properties.suites.errors import parity_problem, stable_regex, type_conforms
from torchcts.testing.faulty.suite_bugs.errors import BUGS

BUG = {bug.name: bug for bug in BUGS}["index_error_as_runtime_error"]


def test_the_device_must_raise_cpus_type_or_a_refinement_of_torchs_generic_error():
    assert type_conforms(IndexError("x"), IndexError("y"))
    assert not type_conforms(IndexError("x"), RuntimeError("x"))  # the seeded bug's class
    assert not type_conforms(ValueError("x"), TypeError("x"))
    assert type_conforms(RuntimeError("x"), IndexError("x"))  # CUDA's narrow_copy: IndexError where CPU's is generic
    assert not type_conforms(RuntimeError("x"), AssertionError("x"))  # meta's Python asserts are not torch errors
    assert not type_conforms(RuntimeError("x"), NotImplementedError("x"))
    linalg_error = torch.linalg.LinAlgError("singular")
    assert type_conforms(linalg_error, torch.linalg.LinAlgError("other"))
    assert not type_conforms(linalg_error, RuntimeError("singular"))


def test_a_regex_is_stable_when_it_matches_cpu_and_names_no_device_or_kernel_internals():
    assert stable_regex(r"Dimension out of range", "Dimension out of range (expected to be in range of [-1, 0])")
    assert not stable_regex(r"Dimension out of range", "something else")  # does not describe CPU's message
    assert not stable_regex(r"Expected all tensors to be on the same device", "Expected all tensors to be on "
                            "the same device, but found cpu and meta")
    assert not stable_regex(r"CUDA Tensors cannot have more than 25 dimensions", "CUDA Tensors cannot have more")
    assert not stable_regex(r"Expected dim < static_cast<int64_t>\(n\) to be true, but got false",
                            "Expected dim < static_cast<int64_t>(n) to be true, but got false")
    assert not stable_regex("", "anything") and not stable_regex("([", "([")  # empty, or not a regex
    assert stable_regex(r"pad should be at most half of effective kernel size", "pad should be at most half of "
                        "effective kernel size")  # "kernel size" is the op's parameter, not a device kernel


def test_parity_problem_names_the_type_or_the_message_that_differs():
    assert parity_problem(IndexError("index 5 is out of range"), IndexError("index 5 is out of range"),
                          r"out of range") is None
    assert "raised RuntimeError where CPU raises IndexError" in parity_problem(
        IndexError("index 5 is out of range"), RuntimeError("index 5 is out of range"), r"out of range")
    assert "does not match the OpInfo's error regex" in parity_problem(
        RuntimeError("weight must be 2-D"), RuntimeError("bad weight"), r"must be 2-D")
    assert parity_problem(RuntimeError("on cpu: bad"), RuntimeError("bad"), r"on cpu") is None  # not stable: type only


def test_errors_pass_on_cpu_and_on_the_clean_faulty_device(run_suite):
    assert run_suite("errors", "diagonal", "float32")["outcome"] is Outcome.PASSED
    assert run_suite("errors", "diagonal", "float32", device="faulty")["outcome"] is Outcome.PASSED


def test_the_seeded_wrong_error_type_is_detected_and_replays(run_suite, tmp_path, replay_case):
    record = run_suite("errors", "diagonal", "float32", device="faulty", bugs=(BUG.name,), corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED
    assert "raised RuntimeError where CPU raises IndexError" in record["error"]
    replayed = replay_case(record["counterexample"]["path"], tmp_path, bugs=(BUG.name,))
    assert replayed["outcome"] is Outcome.FAILED


def test_the_seeded_bug_fires_only_where_cpu_raises_index_error():
    diagonal = torch.ops.aten.diagonal.default
    x = torch.zeros(2, 3)
    assert not BUG.fires(diagonal, (x, 0, 0, 1), {})  # a valid call: CPU's kernel does not raise
    assert BUG.fires(diagonal, (x, 0, 0, 5), {})  # dim2 out of range: CPU raises IndexError
    with pytest.raises(RuntimeError, match="Dimension out of range"):
        BUG.perturb(diagonal, (x, 0, 0, 5), {}, None)
    assert BUG.kind == "wrong-error" and BUG.suite == "errors"
