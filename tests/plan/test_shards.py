"""`--shard K/N`: membership by a hash of the item id, the option's parsing, and the plan's accounting."""

from __future__ import annotations

import collections
import hashlib

import pytest
import torch
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import Selection, SelectionError, build_plan
from torchcts.plan.catalog import all_ops, op_id
from torchcts.plan.selection import check_shard
from torchcts.core.shards import ShardError, parse_shard, shard_of, shard_reason
from torchcts.plugin.launch import RunOptions, pytest_arguments


def test_an_items_shard_is_a_pure_function_of_its_id_and_the_count():
    item = "forward::add::function::float32"
    assert shard_of(item, 3) == shard_of(item, 3)  # the same on every call, in every process (no hash())
    assert shard_of(item, 3) == int(hashlib.sha256(item.encode()).hexdigest()[:16], 16) % 3 + 1
    assert shard_of(item, 1) == 1
    assert {shard_of(f"p::op{i}::function::float32", 7) for i in range(200)} == set(range(1, 8))


def test_shards_are_roughly_balanced():
    ids = [f"{p}::op{i}::function::{d}" for p in ("forward", "inplace") for i in range(1500)
           for d in ("float32", "int64")]
    for count in (2, 3, 8):
        sizes = collections.Counter(shard_of(i, count) for i in ids)
        assert set(sizes) == set(range(1, count + 1))
        assert max(sizes.values()) < 1.15 * len(ids) / count, sizes


def test_adding_items_never_moves_an_item_to_another_shard():
    before = [f"forward::op{i}::function::float32" for i in range(300)]
    after = before[:150] + [f"forward::new{i}::function::float32" for i in range(100)] + before[150:]
    assert {i: shard_of(i, 4) for i in before} == {i: shard_of(i, 4) for i in after if i in before}


@pytest.mark.parametrize("text", ["2/3", " 2 / 3 ", "1/1", "1000/1000"])
def test_shard_values_that_parse(text):
    index, count = parse_shard(text)
    assert 1 <= index <= count


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "1/1001", "-1/3", "a/b", "1/3/5", "", "1.5/3", None, 3])
def test_bad_shard_values_are_one_line_naming_the_option_and_the_form(text):
    with pytest.raises(ShardError) as info:
        parse_shard(text)
    message = str(info.value)
    assert message.startswith("--shard ") and "K/N" in message and "1 <= K <= N <= 1000" in message
    assert "\n" not in message
    if isinstance(text, str):
        with pytest.raises(SelectionError, match="^--shard "):
            check_shard(text)


def test_selection_checks_its_shard_when_made():
    assert Selection(shard=(2, 3)).shard == (2, 3)
    for bad in ((0, 3), (4, 3), (1, 1001), (True, 3), ("1", "3"), (1, 2, 3)):
        with pytest.raises(SelectionError, match="--shard"):
            Selection(shard=bad)


def test_run_takes_shard_and_refuses_a_bad_one_in_one_line():
    result = CliRunner().invoke(cli, ["run", "--validation", "--shard", "4/3"])
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        "--shard '4/3' is not K/N with integers 1 <= K <= N <= 1000 (e.g. 2/3)"]
    assert "--shard K/N" in CliRunner().invoke(cli, ["run", "--help"]).output
    args = pytest_arguments(RunOptions(device="cpu", manifest=None, shard="2/3"))
    assert args[args.index("--shard") + 1] == "2/3"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    path = tmp_path_factory.mktemp("shards") / "manifest.py"
    path.write_text(render_template("complete", device_name="faulty"))
    return load_manifest(path)[0]


def _outcomes(plan):
    result = {item.id: ("run", "") for item in plan.items}
    result.update({a.item.id: (str(a.outcome), a.reason) for a in plan.accounting})
    return result


def test_the_shards_split_the_items_that_run_and_account_alike_for_the_rest(manifest):
    ops = [op for op in all_ops() if op_id(op) in ("abs", "add", "mul", "sin", "cos", "nn.functional.relu")]
    selection = {"level": 2, "dtypes": (torch.float32, torch.int64)}
    whole = _outcomes(build_plan(manifest, Selection(**selection), ops))
    shards = [_outcomes(build_plan(manifest, Selection(**selection, shard=(k, 3)), ops)) for k in (1, 2, 3)]
    running = {item for item, (outcome, _) in whole.items() if outcome == "run"}
    assert len(running) > 10
    for k, shard in enumerate(shards, start=1):
        assert shard.keys() == whole.keys()  # every shard accounts for every item
        ran = {item for item, (outcome, _) in shard.items() if outcome == "run"}
        assert ran == {item for item in running if shard_of(item, 3) == k}
        for item, verdict in shard.items():
            if item in running and item not in ran:
                assert verdict == ("deselected", f"--shard {k}/3: shard {shard_of(item, 3)} runs it")
                assert verdict[1] == shard_reason(item, (k, 3))
            elif item not in running:
                assert verdict == whole[item]  # the same reason in every shard: decided before --shard
    assert set().union(*({i for i, (o, _) in s.items() if o == "run"} for s in shards)) == running
