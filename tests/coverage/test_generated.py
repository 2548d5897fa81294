"""Generated coverage: schema-drawn arguments (`strategies/schema_args.py`), the packaged list of generated
overloads and its freshness (`torchcts.coverage.generated`), and `torchcts coverage materialize`."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis.errors import InvalidArgument

from torchcts.cli.main import cli
from torchcts.coverage import generated, generated_compute
from torchcts.coverage.generated import GENERATED, generated_overloads, packaged_metadata
from torchcts.strategies.schema_args import mutated_arguments, schema_arguments, unsupported

aten = torch.ops.aten


@settings(max_examples=25)
@given(schema_arguments(aten.add.Tensor._schema, torch.float32, dtypes=(torch.int64,)))
def test_add_tensor_draws_two_tensors_and_maybe_alpha(drawn):
    assert len(drawn.args) >= 1 and isinstance(drawn.args[0], torch.Tensor)
    other = drawn.args[1] if len(drawn.args) > 1 else drawn.kwargs["other"]
    assert isinstance(other, torch.Tensor) and other.dtype in (torch.float32, torch.int64)
    assert set(drawn.kwargs) <= {"other", "alpha"} and drawn.mutated == () and drawn.device_slots == ()


@settings(max_examples=25)
@given(schema_arguments(aten.index_put_.default._schema, torch.float32))
def test_index_put_draws_optional_index_lists_and_writes_self(drawn):
    self_, indices = drawn.args[0], drawn.args[1]
    assert isinstance(self_, torch.Tensor) and drawn.mutated == (0,)
    assert isinstance(indices, list) and indices
    assert all(i is None or (i.dtype == torch.int64 and (i.numel() == 0 or int(i.min()) >= 0)) for i in indices)
    assert mutated_arguments(aten.index_put_.default._schema) == ("self",)


@settings(max_examples=15)
@given(schema_arguments(aten._foreach_add.List._schema, torch.float32))
def test_foreach_add_list_draws_tensor_lists(drawn):
    first = drawn.args[0]
    assert isinstance(first, list) and 1 <= len(first) <= 3 and all(isinstance(t, torch.Tensor) for t in first)


@settings(max_examples=15)
@given(schema_arguments(aten.add.out._schema, torch.float32))
def test_out_tensors_are_empty_and_mutated(drawn):
    assert drawn.mutated == ("out",) and drawn.kwargs["out"].numel() == 0


@settings(max_examples=10)
@given(schema_arguments(aten.ones.default._schema, torch.float32))
def test_device_arguments_are_slots_the_program_fills(drawn):
    assert drawn.device_slots == ("device",) and drawn.kwargs["device"] is None


def test_arguments_no_strategy_draws_give_a_reason_and_are_refused_up_front():
    assert unsupported(aten.set_.source_Storage._schema) == "cannot generate: argument `source` of type Storage"
    assert unsupported(aten._assert_async.msg._schema).startswith("cannot generate: argument `assert_msg` of type str")
    with pytest.raises(InvalidArgument, match="set_.source_Storage: cannot generate: argument `source`"):
        schema_arguments(aten.set_.source_Storage._schema, torch.float32)
    assert unsupported(aten.add.Tensor._schema) is None


def test_every_target_is_generated_or_carries_a_reason():
    found = generated_overloads()
    assert found and all(status == GENERATED or status.startswith("cannot generate: ") for status in found.values())
    assert found.get("aten.set_.source_Storage", "").endswith("of type Storage")
    assert sum(status == GENERATED for status in found.values()) >= 300


def test_the_packaged_list_is_fresh_for_the_installed_torch():
    """Recomputes the target set (relevant, no OpInfo reach by name) and the reasons known without running
    a kernel: they must equal the packaged list's (refresh: python -m torchcts.coverage.generated_compute --refresh)."""
    assert packaged_metadata()["torch"] == torch.__version__
    recomputed = generated_compute.targets()
    packaged = generated._packaged()[1]
    assert set(recomputed) == set(packaged), sorted(set(recomputed) ^ set(packaged))[:10]
    for name, status in recomputed.items():
        if status != GENERATED:  # a static reason; a generatable one may still be refused by its probe
            assert packaged[name] == status, name


def test_a_probe_refuses_an_overload_cpu_never_accepts():
    assert generated_compute.probe("aten.detach_.default", tries=5).startswith(
        "cannot generate: CPU's kernel rejected all 5")
    assert generated_compute.probe("aten.lift_fresh_copy.default", tries=5) is None


def test_materialize_writes_deterministic_cases_that_replay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    args = ["coverage", "materialize", "--ops", r"^aten\.(lift_fresh_copy\.default|hardshrink_backward\.grad_input)$",
            "--per-overload", "2"]
    first = runner.invoke(cli, [*args, "--output", "one"])
    assert first.exit_code == 0, first.output
    assert "wrote 4 cases of 2 overloads" in first.output
    second = runner.invoke(cli, [*args, "--output", "two"])
    assert second.exit_code == 0, second.output
    files = sorted(p.name for p in (tmp_path / "one").glob("*.json"))
    assert len(files) == 4 and files == sorted(p.name for p in (tmp_path / "two").glob("*.json"))
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
        case = json.loads((tmp_path / "one" / name).read_text())
        assert (case["property"], case["variant"], case["status"]) == ("dispatch", "scenario", "fixed")
    replay = runner.invoke(cli, ["replay", "one", "--device", "cpu", "--results-dir", "results"])
    assert replay.exit_code == 0, replay.output
    assert "4 cases, 0 still failing, 0 regressions, 0 unreadable" in replay.output, replay.output


def test_materialize_refuses_bad_options_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    bad = runner.invoke(cli, ["coverage", "materialize", "--ops", "("])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "--ops: not a regular expression" in bad.output
    none = runner.invoke(cli, ["coverage", "materialize", "--ops", "^no_such_overload$"])
    assert none.exit_code == 2 and "matches no generated overload" in none.output
