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
from torchcts.pathshapes import memory
from torchcts.pathshapes.memory import MemoryBudget, available_host_bytes, peak_bytes, tier_peak_bytes
from torchcts.results.files import read_records

REPO = Path(__file__).resolve().parents[2]
# A child runs the CLI in-process and prints its own peak resident size (VmHWM, KiB) as its last stderr line. Not
# ru_maxrss: a child's starts at its parent's resident size (a pytest worker grown by earlier tests), which hid the
# item's peak under xdist; VmHWM belongs to the child's own address space, made fresh at exec.
PEAK_SCRIPT = textwrap.dedent("""
    import sys
    from torchcts.cli.main import cli
    code = 0
    try:
        cli(sys.argv[1:], prog_name="torchcts")
    except SystemExit as exc:
        code = exc.code
    with open("/proc/self/status") as stream:
        hwm = next(int(line.split()[1]) for line in stream if line.startswith("VmHWM:"))
    print("vmhwm_kib", hwm, file=sys.stderr)
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
    assert last.startswith("vmhwm_kib"), done.stderr[-2000:]
    return done, int(last.split()[1]) // 1024


def _hostile_large(kit, folder: Path) -> Path:
    """A family `validate` accepts: one `add` of two 1.3 GiB float32 operands (4 GiB with its result)."""
    return kit.write_corpus(folder, kit.family(
        "hostile", kit.case("hostile.four_gib_add", args=[kit.tensor(340, 1024, 1024), kit.tensor(340, 1024, 1024)],
                            tier="large", level=1, budget=3),
        kit.case("hostile.tiny_add", level=1)))


SYSTEM_8_GIB = '''
manifest = dict(BASE, semantic_level=8, capabilities={**BASE["capabilities"], "training": True},
                resource_limits={"max_system_memory_mb": 8192})
'''


@pytest.mark.slow
def test_a_large_tier_case_validate_accepts_is_left_out_by_default_before_anything_is_allocated(tmp_path, kit,
                                                                                                 write_manifest):
    corpus_dir = _hostile_large(kit, tmp_path / "c")
    (case, _) = sorted(ps.load_corpus(corpus_dir).cases, key=lambda c: -c.needed_bytes)
    assert case.tier == "large" and case.needed_bytes > 4_000_000_000  # validate's limits accept it
    assert peak_bytes(case, False) > 8192 << 20  # past the manifest's 8 GiB whatever the machine has free
    done, peak_mib = _run_child("path-shapes", "run", "--validation", "--corpus", str(corpus_dir), "--manifest",
                                str(write_manifest(SYSTEM_8_GIB)), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-3000:]  # the tiny case ran and passed
    assert peak_mib < 1500, f"{peak_mib} MiB at peak: the large case was allocated"
    assert "left out: tier large (its largest item, hostile.four_gib_add, needs about " in done.stderr
    assert "include it with --tier large (1 cases, 2 items recorded runtime_unavailable)" in done.stderr
    folder = _run_folder(tmp_path / "r")
    records = _records(folder)
    for prop in ("path_shapes", "path_shapes_backward"):
        record = records[("hostile.four_gib_add", prop)]
        assert record["outcome"] == "runtime_unavailable" and "--tier large" in record["reason"]
        assert records[("hostile.tiny_add", prop)]["outcome"] == "passed"
    memory = json.loads((folder / "run.json").read_text())["environment"]["memory"]
    assert set(memory["tiers_left_out"]) == {"large"} and memory["opted_in_tiers"] == []
    assert memory["limit_bytes"] <= 8192 << 20 and memory["process_resident_bytes"] > 0
    assert memory["budget_bytes"] == (memory["available_bytes"] or 4 << 30) + memory["process_resident_bytes"]


@pytest.mark.slow
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
        kit.case("mem.small_fits", args=[kit.tensor(256, 1024), kit.tensor(256, 1024)], tier="small", level=1),
        kit.case("mem.small_too_big", args=[kit.tensor(1024, 1024), kit.tensor(1024, 1024)], tier="small",
                 level=1)))


SYSTEM_300_MIB = '''
manifest = dict(BASE, semantic_level=8, capabilities={**BASE["capabilities"], "training": True},
                resource_limits={"max_system_memory_mb": 300})
'''


def test_the_manifest_system_memory_leaves_out_tiers_and_tier_opts_in(tmp_path, kit, write_manifest):
    corpus_dir = _two_small_cases(kit, tmp_path / "c")
    base = ["path-shapes", "run", "--validation", "--manifest", str(write_manifest(SYSTEM_300_MIB)), "--corpus",
            str(corpus_dir)]
    default = CliRunner().invoke(cli, [*base, "--results-dir", str(tmp_path / "default")])
    assert default.exit_code == 0, default.output
    assert "left out: tier small (its largest item, mem.small_too_big, needs about 496 MiB at its peak) is above " \
           "resource_limits.max_system_memory_mb 300, 300 MiB; include it with --tier small (2 cases, 4 items " \
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
    assert refused["reason"] == ("tier small: needs about 400 MiB at its peak (12.0 MiB of operands and results), "
                                 "above resource_limits.max_system_memory_mb 300, 300 MiB; not allocated")
    assert records[("mem.tiny", "path_shapes")]["outcome"] == "deselected"


def test_a_tier_is_judged_by_its_cases_not_its_cap(tmp_path, kit, write_manifest):
    """The small tier's cap (16 MiB, about 1 GiB at its peak) is past 300 MiB, but its one case fits: it runs."""
    corpus_dir = kit.write_corpus(tmp_path / "c", kit.family(
        "mem", kit.case("mem.small_fits", args=[kit.tensor(256, 1024), kit.tensor(256, 1024)], tier="small",
                        level=1)))
    assert tier_peak_bytes("small") > 300 << 20
    done = CliRunner().invoke(cli, ["path-shapes", "run", "--validation", "--manifest",
                                    str(write_manifest(SYSTEM_300_MIB)), "--corpus", str(corpus_dir),
                                    "--results-dir", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert "left out" not in done.output
    folder = _run_folder(tmp_path / "r")
    assert {r["outcome"] for r in _records(folder).values()} == {"passed"}
    assert json.loads((folder / "run.json").read_text())["environment"]["memory"]["tiers_left_out"] == {}


def test_the_left_out_count_leaves_out_items_an_earlier_reason_accounts(tmp_path, kit, write_manifest):
    """Only items whose reason is the tier's are counted: a level-5 case under --level 2 is level_filtered, and a
    tier whose only items are level_filtered is not left out at all."""
    manifest = str(write_manifest(SYSTEM_300_MIB))
    big = [kit.tensor(1024, 1024), kit.tensor(1024, 1024)]
    only_deep = kit.write_corpus(tmp_path / "deep", kit.family(
        "mem", kit.case("mem.tiny", level=1), kit.case("mem.deep", args=big, tier="small", level=5)))
    done = CliRunner().invoke(cli, ["path-shapes", "run", "--validation", "--manifest", manifest, "--corpus",
                                    str(only_deep), "--level", "2", "--results-dir", str(tmp_path / "r1")])
    assert done.exit_code == 0, done.output
    assert "left out" not in done.output
    records = _records(_run_folder(tmp_path / "r1"))
    assert {records[("mem.deep", p)]["outcome"] for p in ("path_shapes", "path_shapes_backward")} == \
        {"level_filtered"}
    mixed = kit.write_corpus(tmp_path / "mixed", kit.family(
        "mem", kit.case("mem.shallow", args=big, tier="small", level=1),
        kit.case("mem.deep", args=big, tier="small", level=5)))
    done = CliRunner().invoke(cli, ["path-shapes", "run", "--validation", "--manifest", manifest, "--corpus",
                                    str(mixed), "--level", "2", "--results-dir", str(tmp_path / "r2")])
    # the shallow case's backward item is level 4: level_filtered too; only its forward item is the tier's
    assert "include it with --tier small (1 cases, 1 items recorded runtime_unavailable)" in done.output
    outcomes = {key: r["outcome"] for key, r in _records(_run_folder(tmp_path / "r2")).items()}
    assert outcomes == {("mem.shallow", "path_shapes"): "runtime_unavailable",
                        ("mem.shallow", "path_shapes_backward"): "level_filtered",
                        ("mem.deep", "path_shapes"): "level_filtered",
                        ("mem.deep", "path_shapes_backward"): "level_filtered"}


def test_budget_limits_and_estimates():
    budget = MemoryBudget(8 << 30, "test", system_limit_mb=512)
    assert budget.limit() == (512 << 20, "resource_limits.max_system_memory_mb 512")
    assert MemoryBudget(100 << 20, "test", system_limit_mb=512).limit() == \
        (100 << 20, "the memory available at the start (test)")
    unknown = MemoryBudget(None, "no source says")
    assert unknown.limit()[0] == 4 << 30 and "assumed" in unknown.limit()[1]
    assert MemoryBudget(1 << 30, "x").left_out_tiers() == {}  # not judged yet: nothing left out whole
    host, source = available_host_bytes()
    assert host is None or (host > 0 and source)


def _shipped_items() -> list[tuple[ps.Case, bool]]:
    return [(case, backward) for case in ps.load_corpus().cases for backward in (False, True)]


def test_shipped_tiers_are_left_out_by_their_largest_item():
    items = _shipped_items()
    largest = {tier: max(peak_bytes(c, b) for c, b in items if c.tier == tier) for tier in ("medium", "large")}
    assert largest["medium"] < largest["large"] and largest["large"] * 4 < tier_peak_bytes("large")  # the cap's
    between = MemoryBudget(largest["medium"], "injected").judging(items)
    assert set(between.left_out_tiers()) == {"large"}
    assert "needs about" in between.left_out_tiers()["large"]
    assert MemoryBudget(largest["large"], "injected").judging(items).left_out_tiers() == {}
    below = MemoryBudget(largest["medium"] - 1, "injected").judging(items)
    assert set(below.left_out_tiers()) == {"medium", "large"}
    assert set(MemoryBudget(largest["medium"] - 1, "x", opted_in=("large",)).judging(items).left_out_tiers()) == \
        {"medium"}


def test_a_case_whose_peak_cannot_be_estimated_counts_as_its_tier_cap():
    """A conv2d whose weight torch rejects (no meta call): its tier is judged by the cap's bound."""
    spec = ps.TensorSpec((1, 3, 8, 8), "float32")
    broken = ps.Case("x.broken", "x", "x.json", "conv2d", (spec, ps.TensorSpec((4, 5, 3, 3), "float32")), (),
                     "small", 1, 1, needed_bytes=spec.nbytes)
    assert peak_bytes(broken, False) is None
    budget = MemoryBudget(tier_peak_bytes("small") - 1, "injected")
    assert "x.broken" in budget.judging([(broken, False)]).left_out_tiers()["small"]
    assert "needs about 1024 MiB" in budget.item_refusal(broken, False)
    assert MemoryBudget(tier_peak_bytes("small"), "injected").judging([(broken, False)]).left_out_tiers() == {}


def test_the_budget_is_taken_once_and_every_item_is_judged_against_it(monkeypatch):
    """After `detect`, nothing reads the machine's memory again: outcomes cannot flip with its load."""
    budget = MemoryBudget.detect(None)
    assert budget.process_bytes > 0
    case = next(c for c in ps.load_corpus().cases if c.tier == "small")
    before = (budget.item_refusal(case, True), budget.judging([(case, True)]).left_out_tiers())

    def unavailable(*_: object) -> None:
        raise AssertionError("memory read after the run's start")

    monkeypatch.setattr(memory, "available_host_bytes", unavailable)
    monkeypatch.setattr(memory, "process_resident_bytes", unavailable)
    monkeypatch.setattr(memory, "_proc_field", unavailable)
    monkeypatch.setattr(memory, "cgroup_available", unavailable)
    assert (budget.item_refusal(case, True), budget.judging([(case, True)]).left_out_tiers()) == before
    tight = MemoryBudget(peak_bytes(case, True) - 1, "injected")
    assert tight.item_refusal(case, False) is None and "not allocated" in tight.item_refusal(case, True)


def _cgroup_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_cgroup_is_the_process_own_and_its_ancestors(tmp_path):
    root = _cgroup_tree(tmp_path / "cg", {"memory.max": "max\n", "memory.current": "5000000000\n",
                                         "a/memory.max": "1000000000\n", "a/memory.current": "400000000\n",
                                         "a/b/memory.max": "max\n", "a/b/memory.current": "300000000\n",
                                         "c/memory.max": "2000000000\n", "c/memory.current": "100000000\n"})
    own = tmp_path / "cgroup"
    own.write_text("0::/a/b\n")
    assert memory.cgroup_available(root, own) == (600_000_000, f"the cgroup's memory.max less memory.current "
                                                               f"({root / 'a'})")
    own.write_text("12:memory:/x\n0::/c\n")
    assert memory.cgroup_available(root, own)[0] == 1_900_000_000
    for hostile in ("0::/../../etc\n", "0::/" + "/".join(["d"] * 40) + "\n", "1:name=systemd:/a\n"):
        own.write_text(hostile)  # unsafe, too deep, or no v2 line: the root's files, as before (no limit there)
        assert memory.cgroup_available(root, own) is None
    assert memory.cgroup_available(root, tmp_path / "missing") is None
    (root / "memory.max").write_text("9000000000\n")
    assert memory.cgroup_available(root, tmp_path / "missing")[0] == 4_000_000_000
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable: 1000000 kB\n")
    own.write_text("0::/a/b\n")
    assert available_host_bytes(root, own, meminfo) == (600_000_000, f"the cgroup's memory.max less "
                                                                     f"memory.current ({root / 'a'})")
    meminfo.write_text("MemAvailable: 500000 kB\n")
    assert available_host_bytes(root, own, meminfo) == (512_000_000, "/proc/meminfo MemAvailable")


@pytest.mark.slow
@pytest.mark.parametrize("op, args, kwargs, tier", [
    # a 2-byte dtype: its comparison widens to float64
    ("add", [{"shape": [4096, 2048], "dtype": "float16"}] * 2, {}, "medium"),
    # an 11x11 kernel: the unfolded input is 121 times the input (the reviewer's case had 15 images: 668 MiB)
    ("conv2d", [{"shape": [4, 64, 64, 64], "dtype": "float32"}, {"shape": [1, 64, 11, 11], "dtype": "float32"}],
     {"padding": 5}, "small"),
])
def test_the_peak_estimate_bounds_a_measured_item(tmp_path, kit, op, args, kwargs, tier):
    """The estimate holds on a real run: forward and backward, measured as the child's peak RSS over an
    import-only child's."""
    corpus_dir = kit.write_corpus(tmp_path / "c", kit.family(
        "peak", kit.case(f"peak.{op}", op=op, args=args, kwargs=kwargs, tier=tier, level=1, budget=2)))
    (case,) = ps.load_corpus(corpus_dir).cases
    _, baseline = _run_child("path-shapes", "list", "--corpus", str(corpus_dir))
    done, peak = _run_child("path-shapes", "run", "--validation", "--corpus", str(corpus_dir), "--tier", tier,
                            "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert {r["outcome"] for r in _records(_run_folder(tmp_path / "r")).values()} == {"passed"}
    measured = (peak - baseline) << 20
    assert measured > case.needed_bytes  # the run did allocate
    assert measured <= max(peak_bytes(case, False), peak_bytes(case, True)), (measured >> 20, case.needed_bytes >> 20)
