"""Running path-shapes cases: inputs, the CPU-oracle comparison, accounting, waivers, run folders."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.pathshapes import corpus as ps
from torchcts.pathshapes.inputs import build_arguments, draw_seed
from torchcts.pathshapes.runner import RunSettings, Selection, not_run_reason, run_backward, run_case
from torchcts.results.files import read_records
from tests import warm_programs


def _records(folder: Path, prop: str = "path_shapes") -> dict[str, dict]:
    """The records of one property's items, by case id."""
    return {r["variant"]: r for r in read_records(folder) if r["property"] == prop}


def _run_folder(results: Path) -> Path:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    return folder


def test_draws_are_deterministic_per_case_and_draw(tmp_path, kit):
    case = ps.load_corpus(kit.write_corpus(tmp_path, kit.good_family())).cases[0]
    first = build_arguments(case, "cpu", torch.Generator().manual_seed(draw_seed(case.id, 0)))[0]
    again = build_arguments(case, "cpu", torch.Generator().manual_seed(draw_seed(case.id, 0)))[0]
    other = build_arguments(case, "cpu", torch.Generator().manual_seed(draw_seed(case.id, 1)))[0]
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])
    assert draw_seed("a", 0) != draw_seed("b", 0)


def test_layouts_are_built_as_specified(tmp_path, kit):
    cases = {c.id: c for c in ps.load_corpus(kit.write_corpus(tmp_path, kit.good_family())).cases}
    conv_args, _ = build_arguments(cases["toy.depthwise.channels_last"], "cpu", torch.Generator().manual_seed(0))
    assert conv_args[0].is_contiguous(memory_format=torch.channels_last) and not conv_args[0].is_contiguous()
    mm_args, _ = build_arguments(cases["toy.matmul.transposed"], "cpu", torch.Generator().manual_seed(0))
    assert mm_args[1].shape == (40, 24) and mm_args[1].stride() == (1, 40)
    meta_args, _ = build_arguments(cases["toy.matmul.transposed"], "meta", None)
    assert meta_args[1].device.type == "meta" and meta_args[1].stride() == (1, 40)


def test_every_case_of_a_valid_family_passes_against_cpu(tmp_path, kit):
    for case in ps.load_corpus(kit.write_corpus(tmp_path, kit.good_family())).cases:
        record = run_case(case, "cpu")
        assert record["outcome"] == "passed" and record["examples"] == case.budget, record


def test_every_case_of_a_valid_family_has_matching_gradients_on_cpu(tmp_path, kit):
    for case in ps.load_corpus(kit.write_corpus(tmp_path, kit.good_family())).cases:
        record = run_backward(case, "cpu")
        assert record["outcome"] == "passed" and record["examples"] == case.budget, record


def test_batch_norm_running_statistics_stay_constants_in_backward():
    case = next(c for c in ps.load_corpus().cases if c.id == "speech_audio.conformer.batch_norm")
    assert run_backward(case, "cpu")["outcome"] == "passed"  # requires_grad on running_mean: CPU refuses


def test_a_case_without_floating_operands_has_no_backward_item(tmp_path, kit):
    from torchcts.pathshapes.runner import properties_of

    ints = kit.tensor(4, dtype="int64", values="index", high=10)
    body = kit.family("ints", kit.case("ints.add", args=[ints, ints]),
                      kit.case("ints.embedding", "embedding", [kit.tensor(4, dtype="int64", values="index", high=10),
                                                               kit.tensor(10, 4)]))
    cases = {c.id: c for c in ps.load_corpus(kit.write_corpus(tmp_path, body)).cases}
    assert properties_of(cases["ints.add"]) == ("path_shapes",)
    assert properties_of(cases["ints.embedding"]) == ("path_shapes", "path_shapes_backward")


def test_a_cpu_oracle_rejection_is_cpu_contract(tmp_path, kit):
    body = kit.family("toy", kit.case("toy.embedding", "embedding",
                                      [kit.tensor(4, dtype="int64", values="index", high=20), kit.tensor(10, 4)]))
    case = ps.load_corpus(kit.write_corpus(tmp_path, body)).cases[0]  # meta does not check index bounds
    record = run_case(case, "cpu")
    assert record["outcome"] == "cpu_contract" and "IndexError" in record["error_line"]


@pytest.fixture
def limited_manifest(write_manifest):
    return write_manifest('''
manifest = dict(BASE, semantic_level=4, skip_ops={"matmul": "not yet"},
                resource_limits={"max_device_memory_mb": 5, "max_tensor_size_mb": 1.5})
''')


def _accounting_family(kit):
    return kit.family(
        "acct",
        kit.case("acct.small_ok", args=[kit.tensor(256, 512), kit.tensor(256, 512)], tier="small"),  # 1.5 MiB
        kit.case("acct.too_much_memory", args=[kit.tensor(512, 1024), kit.tensor(512, 1024)], tier="small"),
        kit.case("acct.tensor_too_big", args=[kit.tensor(512, 1024), kit.tensor(1)], tier="small"),
        kit.case("acct.level6", level=6),
        kit.case("acct.bf16", args=[kit.tensor(4, 8, dtype="bfloat16"), kit.tensor(4, 8, dtype="bfloat16")]),
        kit.case("acct.skipped", "matmul", [kit.tensor(4, 8), kit.tensor(8, 4)]),
    )


def test_manifest_limits_levels_dtypes_and_skips_are_accounted(tmp_path, kit, limited_manifest, write_manifest):
    from torchcts.manifest import load_manifest

    manifest, _ = load_manifest(limited_manifest)
    cases = {c.id: c for c in ps.load_corpus(kit.write_corpus(tmp_path / "c", _accounting_family(kit))).cases}
    settings = RunSettings(device="cpu", manifest=manifest)
    reasons = {name: not_run_reason(case, settings) for name, case in cases.items()}
    assert reasons["acct.small_ok"] is None
    assert reasons["acct.too_much_memory"][0] == "runtime_unavailable"
    assert "resource_limits.max_device_memory_mb 5" in reasons["acct.too_much_memory"][1]
    assert "resource_limits.max_tensor_size_mb 1.5" in reasons["acct.tensor_too_big"][1]
    assert reasons["acct.level6"] == ("level_filtered", "case level 6 is above the manifest's semantic_level 4")
    assert reasons["acct.bf16"][0] == "dtype_not_listed"
    assert reasons["acct.skipped"][0] == "op_excluded" and "not yet" in reasons["acct.skipped"][1]
    backward = {name: not_run_reason(case, settings, "path_shapes_backward") for name, case in cases.items()}
    assert backward["acct.small_ok"] == ("capability_not_declared", "gradients need the training capability")
    assert backward["acct.level6"][0] == "level_filtered"  # the level comes first, as for every item
    trained, _ = load_manifest(write_manifest('''
manifest = dict(BASE, semantic_level=3, capabilities={**BASE["capabilities"], "training": True})
''', name="trained.py"))
    low = RunSettings(device="cpu", manifest=trained)
    assert not_run_reason(cases["acct.small_ok"], low) is None
    assert not_run_reason(cases["acct.small_ok"], low, "path_shapes_backward") == (
        "level_filtered", "backward items are level 4 (the case 2), above the manifest's semantic_level 3")
    narrowed = RunSettings(device="cpu", manifest=manifest, selection=Selection(levels=(5,)))
    assert not_run_reason(cases["acct.small_ok"], narrowed) == ("deselected", "not selected by --level 5")
    deeper = RunSettings(device="cpu", manifest=manifest, level=8)  # --level: the run's depth, above the manifest's
    assert not_run_reason(cases["acct.level6"], deeper) is None
    shallower = RunSettings(device="cpu", manifest=manifest, level=1)
    assert not_run_reason(cases["acct.small_ok"], shallower) == (
        "level_filtered", "case level 2 is above --level 1 (the run's depth; the manifest's semantic_level is 4)")


def test_cli_run_accounts_every_case_in_the_run_folder(tmp_path, kit, limited_manifest):
    corpus_dir = kit.write_corpus(tmp_path / "c", _accounting_family(kit))
    result = CliRunner().invoke(cli, ["path-shapes", "run", "--validation", "--manifest", str(limited_manifest),
                                      "--corpus", str(corpus_dir), "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    folder = _run_folder(tmp_path / "r")
    records = _records(folder)
    assert {k: r["outcome"] for k, r in records.items()} == {
        "acct.small_ok": "passed", "acct.too_much_memory": "runtime_unavailable",
        "acct.tensor_too_big": "runtime_unavailable", "acct.level6": "level_filtered",
        "acct.bf16": "dtype_not_listed", "acct.skipped": "op_excluded"}
    assert records["acct.small_ok"]["path_shape"]["tier"] == "small"
    assert records["acct.small_ok"]["item"] == "path_shapes::add::acct.small_ok::float32"
    summary = json.loads((folder / "run.json").read_text())
    assert summary["complete"] and summary["counts"]["runtime_unavailable"] == 2
    assert summary["environment"]["validation"] is True and summary["environment"]["suite"] == "path-shapes"
    assert summary["environment"]["claims"]["level"]["source"] == "manifest"  # no --level: the file's depth
    assert summary["environment"]["effective_manifest_hash"] == summary["environment"]["manifest_hash"]
    report = CliRunner().invoke(cli, ["report", "--from", str(folder)])
    assert report.exit_code == 0, report.output
    assert (folder / "report" / "scorecard.md").is_file()


def test_cli_run_validation_passes_a_family_of_the_shipped_corpus(tmp_path):
    result = CliRunner().invoke(cli, ["path-shapes", "run", "--validation", "--family", "recommendation",
                                      "--tier", "tiny", "--results-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    records = read_records(_run_folder(tmp_path))
    executed = [r for r in records if r["outcome"] != "deselected"]
    from torchcts.pathshapes.runner import properties_of

    assert len(records) == sum(len(properties_of(c)) for c in ps.load_corpus().cases)  # every item has a record
    assert executed and all(r["outcome"] == "passed" for r in executed)
    assert {r["property"] for r in executed} == {"path_shapes", "path_shapes_backward"}
    assert all(r["path_shape"]["family"] == "recommendation" for r in executed)


def test_cli_run_refuses_bad_input(tmp_path, kit):
    runner = CliRunner()
    assert runner.invoke(cli, ["path-shapes", "run"]).exit_code == 2
    unknown = runner.invoke(cli, ["path-shapes", "run", "--validation", "--family", "nope"])
    assert unknown.exit_code == 2 and "--family nope: not a family" in unknown.output
    kit.write_corpus(tmp_path, kit.with_case(kit.good_family(), 0, op="eval"))
    bad = runner.invoke(cli, ["path-shapes", "run", "--validation", "--corpus", str(tmp_path)])
    assert bad.exit_code == 2 and "toy.json: case 'toy.add' (entry 0): field 'op'" in bad.output


def test_summary_and_list_filters(tmp_path, kit):
    waiver = {"targets": ["faulty"], "reason": "tracked in BUG-1", "expires": "2026-03-01"}
    kit.write_corpus(tmp_path, kit.with_case(kit.good_family(), 2, waivers=[waiver]))
    runner = CliRunner()
    summary = runner.invoke(cli, ["path-shapes", "summary", "--corpus", str(tmp_path), "--today", "2026-06-01"])
    assert summary.exit_code == 0, summary.output
    assert "3 cases, 1 families, 6 value draws" in summary.output and "by level: 2 2, 5 1" in summary.output
    assert "toy.matmul.transposed [faulty] EXPIRED 2026-03-01: tracked in BUG-1" in summary.output
    listed = runner.invoke(cli, ["path-shapes", "list", "--corpus", str(tmp_path), "--level", "5"])
    assert listed.exit_code == 0 and listed.stdout.splitlines()[0].startswith("toy.depthwise.channels_last  conv2d")
    assert len(listed.stdout.splitlines()) == 1 and "1x8x10x10/cl" in listed.stdout
    shipped = runner.invoke(cli, ["path-shapes", "list", "--family", "llm_decoder_blocks", "--tier", "large"])
    assert shipped.exit_code == 0 and all(" large(" in line for line in shipped.stdout.splitlines())


def _faulty_run(tmp_path: Path, corpus_dir: Path, *args: str, bugs: str = "grouped_conv_channels_last"
                ) -> subprocess.CompletedProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TORCHCTS_FAULTY": "1", "TORCHCTS_FAULTY_BUGS": bugs}
    return warm_programs.run([sys.executable, "-m", "torchcts", "path-shapes", "run", "--device", "faulty", "--corpus",
                           str(corpus_dir), "--results-dir", str(tmp_path / "r"), *args],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)


@pytest.mark.slow
def test_a_seeded_bug_fails_its_case_and_a_waiver_only_marks_it_known(tmp_path, kit):
    plain = _faulty_run(tmp_path, kit.write_corpus(tmp_path / "plain", kit.good_family()))
    assert plain.returncode == 1, plain.stdout + plain.stderr
    records = _records(_run_folder(tmp_path / "r"))
    assert records["toy.depthwise.channels_last"]["outcome"] == "failed"
    assert records["toy.add"]["outcome"] == "passed" and records["toy.matmul.transposed"]["outcome"] == "passed"
    assert "FAILED path_shapes::conv2d::toy.depthwise.channels_last::float32" in plain.stdout

    today = datetime.date.today()
    waiver = {"targets": ["faulty"], "reason": "BUG-7: grouped conv ignores channels_last",
              "expires": (today + datetime.timedelta(days=30)).isoformat()}
    waived_dir = kit.write_corpus(tmp_path / "waived", kit.with_case(kit.good_family(), 1, waivers=[waiver]))
    waived = _faulty_run(tmp_path / "w", waived_dir)
    assert waived.returncode == 0, waived.stdout + waived.stderr
    record = _records(_run_folder(tmp_path / "w" / "r"))["toy.depthwise.channels_last"]
    assert record["outcome"] == "failed" and record["waiver"]["reason"].startswith("BUG-7")
    assert "waived problems 1, unwaived 0" in waived.stdout

    expired = _faulty_run(tmp_path / "e", waived_dir, "--today", (today + datetime.timedelta(days=31)).isoformat())
    assert expired.returncode == 1
    assert "waiver expired" in expired.stderr and "unwaived 1" in expired.stdout
    assert _records(_run_folder(tmp_path / "e" / "r"))["toy.depthwise.channels_last"]["waiver"] is None


@pytest.mark.slow
def test_a_gradient_bug_fails_the_backward_item_only(tmp_path, kit):
    """embedding_backward_overwrites_repeats: a repeated index keeps one row's gradient; the forward is right."""
    lookup = kit.case("toy.embedding", "embedding", [kit.tensor(64, dtype="int64", values="index", high=10),
                                                      kit.tensor(10, 4)])
    run = _faulty_run(tmp_path, kit.write_corpus(tmp_path / "c", kit.family("toy", lookup)),
                      bugs="embedding_backward_overwrites_repeats")
    assert run.returncode == 1, run.stdout + run.stderr
    folder = _run_folder(tmp_path / "r")
    assert _records(folder)["toy.embedding"]["outcome"] == "passed"
    backward = _records(folder, "path_shapes_backward")["toy.embedding"]
    assert backward["outcome"] == "failed" and backward["error_line"].startswith("gradient: "), backward
    assert backward["item"] == "path_shapes_backward::embedding::toy.embedding::float32" and backward["level"] == 4


def test_a_compile_target_runs_each_case_compiled_and_records_how(tmp_path, kit):
    import torchcts.testing.compile_backends as backends  # registers the in-test backends
    from torchcts.engine.compile_target import CompileSpec

    case = ps.load_corpus(kit.write_corpus(tmp_path, kit.family("toy", kit.case("toy.add")))).cases[0]
    assert run_case(case, "cpu", compile=CompileSpec("aot_eager", "static"))["outcome"] == "passed"
    wrong = run_case(case, "cpu", compile=CompileSpec(backends.WRONG_ADD, "static"))
    assert wrong["outcome"] == "failed" and wrong["examples"] == 1  # the backend's add is one more
    assert run_backward(case, "cpu", compile=CompileSpec(backends.WRONG_ADD, "static"))["outcome"] == "passed"
