"""`path-shapes run` never allocates what the user did not opt into: tiers past the host's memory are left out
unless named with --tier, and an item whose estimated peak does not fit is refused before it allocates."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.pathshapes import corpus as ps
from torchcts.pathshapes.memory import MemoryBudget, available_host_bytes, peak_bytes, tier_peak_bytes
from torchcts.results.files import read_records

REPO = Path(__file__).resolve().parents[2]
# A child runs the CLI in-process and prints its own peak RSS (KiB on Linux) as its last stderr line.
PEAK_SCRIPT = textwrap.dedent("""
    import resource, sys
    from torchcts.cli.main import cli
    code = 0
    try:
        cli(sys.argv[1:], prog_name="torchcts")
    except SystemExit as exc:
        code = exc.code
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
    sys.exit(code)
""")
ADDRESS_SPACE = 3 << 30  # the child's RLIMIT_AS: a regression fails to allocate instead of swapping the machine


def _records(folder: Path) -> dict[tuple[str, str], dict]:
    return {(r["variant"], r["property"]): r for r in read_records(folder)}


def _run_folder(results: Path) -> Path:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    return folder


def _limited_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run_child(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """`torchcts ARGS` in a child under RLIMIT_AS; (the process, its peak RSS in MiB)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, *args], capture_output=True, text=True, cwd=REPO,
                          env=env, preexec_fn=_limited_child, timeout=600)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("maxrss_kib"), done.stderr[-2000:]
    return done, int(last.split()[1]) // 1024


def _hostile_large(kit, folder: Path) -> Path:
    """A family `validate` accepts: one `add` of two 1.3 GiB float32 operands (4 GiB with its result)."""
    return kit.write_corpus(folder, kit.family(
        "hostile", kit.case("hostile.four_gib_add", args=[kit.tensor(340, 1024, 1024), kit.tensor(340, 1024, 1024)],
                            tier="large", level=1, budget=3),
        kit.case("hostile.tiny_add", level=1)))


def test_a_large_tier_case_validate_accepts_is_left_out_by_default_before_anything_is_allocated(tmp_path, kit):
    corpus_dir = _hostile_large(kit, tmp_path / "c")
    (case, _) = sorted(ps.load_corpus(corpus_dir).cases, key=lambda c: -c.needed_bytes)
    assert case.tier == "large" and case.needed_bytes > 4_000_000_000  # validate's limits accept it
    host, _ = available_host_bytes()
    if host is not None and tier_peak_bytes("large") <= host:
        pytest.skip(f"this machine has {host >> 30} GiB available: the large tier is within its memory")
    done, peak_mib = _run_child("path-shapes", "run", "--validation", "--corpus", str(corpus_dir),
                                "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-3000:]  # the tiny case ran and passed
    assert peak_mib < 1500, f"{peak_mib} MiB at peak: the large case was allocated"
    assert "left out: tier large" in done.stderr and "include it with --tier large" in done.stderr
    assert "(1 cases, 2 items recorded runtime_unavailable)" in done.stderr
    folder = _run_folder(tmp_path / "r")
    records = _records(folder)
    for prop in ("path_shapes", "path_shapes_backward"):
        record = records[("hostile.four_gib_add", prop)]
        assert record["outcome"] == "runtime_unavailable" and "--tier large" in record["reason"]
        assert records[("hostile.tiny_add", prop)]["outcome"] == "passed"
    memory = json.loads((folder / "run.json").read_text())["environment"]["memory"]
    assert set(memory["tiers_left_out"]) >= {"large"} and memory["opted_in_tiers"] == []


def test_an_opted_in_tier_still_refuses_an_item_past_the_memory_before_allocating(tmp_path, kit, write_manifest):
    corpus_dir = _hostile_large(kit, tmp_path / "c")
    manifest = write_manifest('''
manifest = dict(BASE, semantic_level=8, capabilities={**BASE["capabilities"], "training": True},
                resource_limits={"max_system_memory_mb": 2048})
''')
    done, peak_mib = _run_child("path-shapes", "run", "--validation", "--manifest", str(manifest), "--corpus",
                                str(corpus_dir), "--tier", "large", "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 3, done.stderr[-3000:]  # nothing executed: the tiny case is deselected by --tier
    assert peak_mib < 1500, f"{peak_mib} MiB at peak: the refused case was allocated"
    records = _records(_run_folder(tmp_path / "r"))
    reason = records[("hostile.four_gib_add", "path_shapes")]["reason"]
    assert records[("hostile.four_gib_add", "path_shapes")]["outcome"] == "runtime_unavailable"
    assert "resource_limits.max_system_memory_mb 2048" in reason and "not allocated" in reason


def _two_small_cases(kit, folder: Path) -> Path:
    return kit.write_corpus(folder, kit.family(
        "mem",
        kit.case("mem.tiny", level=1),
        kit.case("mem.small_fits", args=[kit.tensor(256, 512), kit.tensor(256, 512)], tier="small", level=1),
        kit.case("mem.small_too_big", args=[kit.tensor(1024, 1024), kit.tensor(1024, 1024)], tier="small",
                 level=1)))


def test_the_manifest_system_memory_leaves_out_tiers_and_tier_opts_in(tmp_path, kit, write_manifest):
    corpus_dir = _two_small_cases(kit, tmp_path / "c")
    manifest = write_manifest('''
manifest = dict(BASE, semantic_level=8, capabilities={**BASE["capabilities"], "training": True},
                resource_limits={"max_system_memory_mb": 100})
''')
    base = ["path-shapes", "run", "--validation", "--manifest", str(manifest), "--corpus", str(corpus_dir)]
    default = CliRunner().invoke(cli, [*base, "--results-dir", str(tmp_path / "default")])
    assert default.exit_code == 0, default.output
    assert "left out: tier small (up to 16 MiB of operands and results, up to 368 MiB at its peak) is above " \
           "resource_limits.max_system_memory_mb 100, 100 MiB; include it with --tier small (2 cases, 4 items " \
           "recorded runtime_unavailable)" in default.output
    outcomes = {key: r["outcome"] for key, r in _records(_run_folder(tmp_path / "default")).items()}
    assert outcomes[("mem.tiny", "path_shapes")] == "passed"
    assert outcomes[("mem.small_fits", "path_shapes")] == outcomes[("mem.small_too_big", "path_shapes")] \
        == "runtime_unavailable"
    opted = CliRunner().invoke(cli, [*base, "--tier", "small", "--results-dir", str(tmp_path / "opted")])
    assert opted.exit_code == 0, opted.output
    assert "left out" not in opted.output
    records = _records(_run_folder(tmp_path / "opted"))
    assert records[("mem.small_fits", "path_shapes")]["outcome"] == "passed"
    assert records[("mem.small_fits", "path_shapes_backward")]["outcome"] == "passed"
    refused = records[("mem.small_too_big", "path_shapes")]
    assert refused["outcome"] == "runtime_unavailable"
    assert refused["reason"] == ("tier small: needs about 132 MiB at its peak (12.0 MiB of operands and results), "
                                 "above resource_limits.max_system_memory_mb 100, 100 MiB; not allocated")
    assert records[("mem.tiny", "path_shapes")]["outcome"] == "deselected"


def test_budget_limits_and_estimates():
    budget = MemoryBudget(8 << 30, "test", system_limit_mb=512)
    assert budget.limit() == (512 << 20, "resource_limits.max_system_memory_mb 512")
    assert MemoryBudget(100 << 20, "test", system_limit_mb=512).limit() == (100 << 20, "the memory available (test)")
    unknown = MemoryBudget(None, "no source says")
    assert unknown.limit()[0] == 4 << 30 and "assumed" in unknown.limit()[1]
    assert set(unknown.left_out_tiers()) == {"medium", "large"}
    assert set(MemoryBudget(None, "x", opted_in=("large",)).left_out_tiers()) == {"medium"}
    assert set(MemoryBudget(64 << 30, "x").left_out_tiers()) == {"large"}  # 4 GiB x 23 is past 64 GiB
    assert MemoryBudget(1 << 40, "x").left_out_tiers() == {}
    host, source = available_host_bytes()
    assert host is None or (host > 0 and source)


def test_the_peak_estimate_bounds_a_measured_float16_item(tmp_path, kit):
    """The factor for a 2-byte dtype (its comparison widens to float64) holds on a real run: forward and backward
    of a 48 MiB float16 add, measured as the child's peak RSS over an import-only child's."""
    corpus_dir = kit.write_corpus(tmp_path / "c", kit.family(
        "f16", kit.case("f16.add", args=[kit.tensor(4096, 2048, dtype="float16"),
                                         kit.tensor(4096, 2048, dtype="float16")], tier="medium", level=1, budget=2)))
    (case,) = ps.load_corpus(corpus_dir).cases
    _, baseline = _run_child("path-shapes", "list", "--corpus", str(corpus_dir))
    done, peak = _run_child("path-shapes", "run", "--validation", "--corpus", str(corpus_dir), "--tier", "medium",
                            "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-3000:]
    measured = (peak - baseline) << 20
    assert measured > case.needed_bytes  # the run did allocate
    assert measured <= max(peak_bytes(case, False), peak_bytes(case, True)), (measured >> 20, case.needed_bytes >> 20)
