"""Reading and validating path-shapes files: the shipped corpus, and every kind of bad entry."""

from __future__ import annotations

import datetime
import json

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.pathshapes import corpus as ps
from torchcts.pathshapes.ops import OPS


def test_shipped_corpus_is_valid_and_large_enough():
    cases, problems = ps.read_folder(ps.default_folder())
    assert problems == []
    assert len(cases) >= 150
    assert len({c.family for c in cases}) >= 8
    assert {c.tier for c in cases} >= {"tiny", "small", "medium"}
    assert all(c.needed_bytes <= ps.TIERS[c.tier] for c in cases)
    assert ps.expired_waivers(cases, datetime.date(2026, 1, 1)) == []
    gqa = [c for c in cases if c.op == "scaled_dot_product_attention" and dict(c.kwargs).get("enable_gqa")]
    assert gqa and all(c.args[0].shape[1] > c.args[1].shape[1] for c in gqa)  # n_kv_heads < n_heads


def test_a_valid_family_loads_with_bytes_computed_on_meta(tmp_path, kit):
    loaded = ps.load_corpus(kit.write_corpus(tmp_path, kit.good_family()))
    add = next(c for c in loaded.cases if c.id == "toy.add")
    assert add.needed_bytes == 3 * 4 * 8 * 4 and add.largest_bytes == 4 * 8 * 4
    assert loaded.families == ("toy",)


def _problems(tmp_path, kit, body):
    kit.write_corpus(tmp_path, body)
    return ps.read_folder(tmp_path)[1]


BAD_CASES = [
    ({"op": "os.system"}, "field 'op'"),
    ({"op": 3}, "field 'op'"),
    ({"args": [{"shape": [4, -1], "dtype": "float32"}, {"shape": [4, 8], "dtype": "float32"}]}, "args[0].shape"),
    ({"args": [{"shape": [4, 8.5], "dtype": "float32"}]}, "args[0].shape"),
    ({"args": [{"shape": [4, 8], "dtype": "float32"}, {"shape": [5, 8], "dtype": "float32"}]},
     "rejects these operands"),
    ({"args": [{"shape": [4, 8], "dtype": "complex999"}]}, "args[0].dtype"),
    ({"args": [{"shape": [4, 8], "dtype": "float32", "layout": "channels_last"}]}, "args[0].layout"),
    ({"args": [{"shape": [4], "dtype": "int64"}]}, "args[0].high"),
    ({"args": [{"shape": [4], "dtype": "float32", "values": "index", "high": 3}]}, "args[0].values"),
    ({"args": [{"shape": [4], "dtype": "float32", "code": "print(1)"}]}, "unknown tensor key"),
    ({"args": [1, 2]}, "at least one tensor operand"),
    ({"args": "x"}, "field 'args'"),
    ({"kwargs": {"not an identifier": 1}}, "field 'kwargs'"),
    ({"kwargs": {"alpha": "x" * 40}}, "kwargs.alpha"),
    ({"tier": "huge"}, "field 'tier'"),
    ({"args": [{"shape": [1024, 1024], "dtype": "float32"}, {"shape": [1024, 1024], "dtype": "float32"}]},
     "field 'tier': 'tiny', but its operands and results hold 12582912 bytes: tier 'small'"),
    ({"tier": "small"}, "field 'tier': 'small'"),  # larger than the 384 bytes need: the tier says what it needs
    ({"level": 0}, "field 'level'"),
    ({"level": 9}, "field 'level'"),
    ({"level": True}, "field 'level'"),
    ({"budget": "3"}, "field 'budget'"),
    ({"budget": 0}, "field 'budget'"),
    ({"id": "Bad Id"}, "field 'id'"),
    ({"surprise": 1}, "unknown field"),
    ({"waivers": [{"targets": ["cuda"], "reason": "known", "expires": "2027-13-01"}]}, "waivers[0].expires"),
    ({"waivers": [{"targets": [], "reason": "known", "expires": "2027-01-01"}]}, "waivers[0].targets"),
    ({"waivers": [{"targets": ["cuda"], "reason": " ", "expires": "2027-01-01"}]}, "waivers[0].reason"),
    ({"waivers": [{"targets": ["cuda"], "expires": "2027-01-01"}]}, "field 'waivers[0]'"),
]


@pytest.mark.parametrize(("changes", "expected"), BAD_CASES)
def test_bad_entries_are_reported_with_file_entry_and_field(tmp_path, kit, changes, expected):
    body = kit.with_case(kit.good_family(), 0, **changes)
    problems = _problems(tmp_path, kit, body)
    assert len(problems) == 1, problems
    assert problems[0].startswith("toy.json: case ") and "(entry 0): " in problems[0]
    assert expected in problems[0]


def test_other_cases_of_a_file_still_load_beside_a_bad_one(tmp_path, kit):
    kit.write_corpus(tmp_path, kit.with_case(kit.good_family(), 0, op="nope"))
    cases, problems = ps.read_folder(tmp_path)
    assert [c.id for c in cases] == ["toy.depthwise.channels_last", "toy.matmul.transposed"] and len(problems) == 1


def test_duplicate_ids_and_families_across_files(tmp_path, kit):
    kit.write_corpus(tmp_path, kit.good_family())
    other = kit.family("other", kit.case("toy.add"))
    (tmp_path / "other.json").write_text(json.dumps(other))
    again = kit.family("toy", kit.case("toy.fresh"))
    (tmp_path / "zz.json").write_text(json.dumps(again))
    problems = ps.read_folder(tmp_path)[1]
    assert any("toy.json: case 'toy.add': field 'id': already used in other.json" in p for p in problems)
    assert any(p.startswith("zz.json: field 'family'") for p in problems)


@pytest.mark.parametrize(("content", "expected"), [
    (b"{not json", "not valid JSON"),
    (b'{"schema_version": 1, "family": "toy", "cases": [{"id": "a", "budget": NaN}]}', "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[]", "top level must be an object"),
    (b'{"schema_version": 2, "family": "toy", "cases": []}', "field 'schema_version'"),
    (b'{"schema_version": 1, "family": "toy", "cases": []}', "field 'cases'"),
    (b'{"schema_version": 1, "family": "Toy!", "cases": [{}]}', "field 'family'"),
    (b'{"schema_version": 1, "family": "toy", "cases": [{}], "run": "x"}', "unknown field"),
    (b"{}" + b" " * ps.MAX_FILE_BYTES, "larger than"),
])
def test_unreadable_files_are_named(tmp_path, content, expected):
    (tmp_path / "bad.json").write_bytes(content)
    problems = ps.read_folder(tmp_path)[1]
    assert len(problems) == 1 and problems[0].startswith("bad.json: ") and expected in problems[0]


def test_deeply_nested_json_is_a_problem_not_a_crash(tmp_path):
    (tmp_path / "deep.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)  # past the size bound too
    assert ps.read_folder(tmp_path)[1][0].startswith("deep.json: ")
    (tmp_path / "deep.json").write_bytes(b'{"schema_version": 1, "family": "toy", "cases": ['
                                         + b"[" * 100_000 + b"]" * 100_000 + b"]}")
    assert ps.read_folder(tmp_path)[1][0].startswith("deep.json: ")


def test_empty_or_missing_folder(tmp_path):
    assert "holds no *.json" in ps.read_folder(tmp_path)[1][0]
    assert "not a folder" in ps.read_folder(tmp_path / "missing")[1][0]


def test_every_allowed_op_is_used_by_the_shipped_corpus():
    used = {c.op for c in ps.load_corpus().cases}
    assert used == set(OPS)


def test_cli_validate_exits_2_naming_file_entry_and_field(tmp_path, kit):
    body = kit.with_case(kit.good_family(), 1, level=12)
    kit.write_corpus(tmp_path, body)
    result = CliRunner().invoke(cli, ["path-shapes", "validate", "--corpus", str(tmp_path)])
    assert result.exit_code == 2
    assert "toy.json: case 'toy.depthwise.channels_last' (entry 1): field 'level': 12" in result.output


def test_cli_validate_rejects_expired_waivers(tmp_path, kit):
    waiver = {"targets": ["faulty"], "reason": "tracked in BUG-1", "expires": "2026-03-01"}
    kit.write_corpus(tmp_path, kit.with_case(kit.good_family(), 2, waivers=[waiver]))
    runner = CliRunner()
    late = runner.invoke(cli, ["path-shapes", "validate", "--corpus", str(tmp_path), "--today", "2026-03-02"])
    assert late.exit_code == 2
    assert "toy.json: case 'toy.matmul.transposed': field 'waivers[0].expires': 2026-03-01 is before 2026-03-02" \
        in late.output
    early = runner.invoke(cli, ["path-shapes", "validate", "--corpus", str(tmp_path), "--today", "2026-03-01"])
    assert early.exit_code == 0, early.output
    assert "3 cases in 1 families" in early.output
    bad_date = runner.invoke(cli, ["path-shapes", "validate", "--corpus", str(tmp_path), "--today", "tomorrow"])
    assert bad_date.exit_code == 2 and "YYYY-MM-DD" in bad_date.output
