"""A `cpu_contract` record says what CPU rejected: the first rejection's type and first line, the argument it names
where torch or Python names one, and how many other errors the cases met; real torch ops on CPU."""

from __future__ import annotations

import attrs
import pytest
import torch
from hypothesis import strategies as st

from torchcts.engine.cpu_rejection import MAX_DISTINCT, MAX_LINE_CHARS, Rejections, first_line, rejected_argument
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    path = tmp_path_factory.mktemp("cpu_rejection") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    manifest, _ = load_manifest(path)
    return EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=10, versions=versions())


def oracle_only(call):
    """A scenario check drawing integers whose oracle runs `call(n)` on CPU (the device side is never reached)."""
    def test_probe(cts):
        cts.run(st.integers(1, 6), lambda case: cts.on_cpu_call(lambda c, n, target: call(n), case))

    return test_probe


def torch_error(call) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the message torch gives, as the oracle wraps it
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("torch accepted the call")


def test_empty_strided_with_out_names_the_argument(settings, scenario):
    item = scenario("cpu_rejection_empty_strided_out",
                    oracle_only(lambda n: torch.empty_strided((n, 3), (3, 1), out=torch.empty(3 * n))))
    record = run_item(item, settings)
    assert record["outcome"] is Outcome.CPU_CONTRACT
    assert record["reason"] == (f"cpu_contract: the CPU oracle rejected all {record['examples']} cases; "
                                "the first: TypeError: empty_strided() got an unexpected keyword argument 'out' "
                                "(argument `out`)")


def test_randn_of_an_integer_dtype_says_which_kernel_refused(settings, scenario):
    item = scenario("cpu_rejection_randn_long", oracle_only(lambda n: torch.randn(n, dtype=torch.int64)))
    record = run_item(item, settings)
    assert record["outcome"] is Outcome.CPU_CONTRACT
    assert record["reason"] == (f"cpu_contract: the CPU oracle rejected all {record['examples']} cases; "
                                "the first: NotImplementedError: \"normal_kernel_cpu\" not implemented for 'Long'")


def test_errors_that_differ_between_cases_are_counted(settings, scenario):
    # strides of 1 dimension for sizes of n dimensions: "dimensionality of sizes (n) must match ... (1)", n = 2..6
    item = scenario("cpu_rejection_empty_strided_dims",
                    oracle_only(lambda n: torch.empty_strided((1,) * (n + 1), (1,))))
    record = run_item(item, attrs.evolve(settings, max_examples=30))
    assert record["outcome"] is Outcome.CPU_CONTRACT
    reason = record["reason"]
    assert "; the first: RuntimeError: dimensionality of sizes (" in reason and "argument" not in reason
    others = int(reason.rsplit("; ", 1)[1].split()[0])
    assert 1 <= others <= 5 and reason.endswith("among the cases")


def test_a_rejection_in_a_forked_case_child_keeps_its_line(settings, scenario):
    from torchcts.isolation.policy import CaseIsolation

    @attrs.frozen
    class EveryCaseForked:
        def reason(self, item):
            return None

        def case_isolation(self, item):
            return CaseIsolation(60.0, "every case forked (test)", rule="test#0", fork=True)

    item = scenario("cpu_rejection_forked", oracle_only(lambda n: torch.randn((n, "x"))))
    record = run_item(item, attrs.evolve(settings, max_examples=2, isolation=EveryCaseForked()))
    assert record["outcome"] is Outcome.CPU_CONTRACT and "isolated_cases" in record
    assert "; the first: TypeError: randn(): argument 'size' failed to unpack" in record["reason"]
    assert record["reason"].endswith("(argument `size`)")


@pytest.mark.parametrize("call, argument", [
    (lambda: torch.empty_strided((2, 3), (3, 1), out=torch.empty(6)), "out"),
    (lambda: torch.randn((2, "a")), "size"),
    (lambda: torch.nn.functional.embedding(torch.ones(2), torch.ones(2, 2)), "indices"),  # argument #1 'indices'
    (lambda: torch.randn(-1), None),
    (lambda: torch.randn(2, generator=3), None),  # "invalid combination of arguments": no one argument at fault
])
def test_the_argument_is_named_where_torch_names_one(call, argument):
    assert rejected_argument(torch_error(call)) == argument


def test_hostile_messages_are_bounded():
    rejections = Rejections()
    rejections.add("\n\n  RuntimeError: " + "x" * 10**6 + "\nsecond line")
    assert len(rejections.first) == MAX_LINE_CHARS and "second" not in rejections.first
    for i in range(5 * MAX_DISTINCT):
        rejections.add(f"RuntimeError: case {i}")
    assert len(rejections.distinct) == MAX_DISTINCT
    assert rejections.describe().endswith(f"; {MAX_DISTINCT - 1}+ other errors among the cases")
    assert rejected_argument("unexpected keyword argument '" + "a" * 500 + "'") is None  # no 500-char name
    assert rejected_argument("argument 'size" * 10**5) is None
    assert first_line("") == "" and Rejections().describe() == ""


def test_control_characters_in_a_rejection_are_written_as_escapes(settings, scenario):
    # linalg.norm prints the order it refuses as given: a terminal escape (clear screen) in a record and scorecard
    item = scenario("cpu_rejection_escape",
                    oracle_only(lambda n: torch.linalg.norm(torch.ones(2, 2), ord=f"\x1b[2J\x07fro{n}")))
    record = run_item(item, attrs.evolve(settings, max_examples=5))
    assert record["outcome"] is Outcome.CPU_CONTRACT
    reason = record["reason"]
    assert "\x1b" not in reason and "\x07" not in reason and reason.isprintable(), repr(reason)
    assert "Order \\x1b[2J\\x07fro" in reason, reason


def test_other_errors_are_counted_by_cause_not_by_volatile_parts():
    rejections = Rejections()
    for address in range(20):  # one cause at twenty addresses
        rejections.add(f"RuntimeError: cannot pickle <Storage object at 0x{0x7f00aa + address:x}>")
    assert rejections.describe() == "the first: RuntimeError: cannot pickle <Storage object at 0x7f00aa>"
    rejections.add("RuntimeError: expected dim 2")
    rejections.add("RuntimeError: expected dim 3")  # another number, another cause
    assert rejections.describe().endswith("; 2 other errors among the cases")
