"""The OpInfo metadata cache (issue 21): a plan from the cache is the plan from the op database; the cache file is
read as untrusted data (corrupt, stale, oversized -> rebuilt with a warning naming the file and why), written
atomically, and a property the cache cannot answer for makes planning read the op database."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
import torch

from torchcts.manifest import parse_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan import catalog, op_metadata, op_metadata_file, registry
from torchcts.plan.build import build_plan
from torchcts.plan.op_metadata import OpMetadata, OpMetadataWarning
from torchcts.plan.op_metadata_file import OpMetadataFileError, read_catalog, to_json, write_catalog
from torchcts.plan.registry import OpInfoItems, PropertySpec

OP_DATABASE = "torch.testing._internal.common_methods_invocations"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder of this test's own (never ~/.cache)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(op_metadata.CACHE_DIR_VARIABLE, str(folder))
    return folder


@pytest.fixture(scope="module")
def built() -> op_metadata.OpCatalog:
    return op_metadata.build()


def _manifest(template: str):
    namespace: dict = {}
    exec(render_template(template, device_name="cpu"), namespace)  # noqa: S102 - our own template
    return parse_manifest(namespace["manifest"], Path("manifest.py"))[0]


@pytest.mark.parametrize("template", ["complete", "minimal"])  # every property has items; most items accounted
def test_a_plan_from_the_cache_is_the_plan_from_the_op_database(cache, template):
    manifest = _manifest(template)
    from_cache = build_plan(manifest)
    ops = op_metadata.planning_ops(spec.items for spec in registry.load() if not spec.scenario)
    assert ops and all(isinstance(op, OpMetadata) for op in ops)  # the plan really came from the cache file
    assert op_metadata.cache_path().is_file()
    from_database = build_plan(manifest, ops=catalog.all_ops())
    assert len(from_cache.items) > 3000 and len(from_cache.items) + len(from_cache.accounting) > 26_000
    assert from_cache.items == from_database.items
    assert from_cache.accounting == from_database.accounting
    assert [op.id for op in ops] == [catalog.op_id(op) for op in catalog.all_ops()]


def test_the_coverage_mapping_of_the_cache_is_that_of_the_op_database(cache):
    from torchcts.coverage import mapping
    from torchcts.coverage.inventory import load_inventory

    properties = registry.load()
    inventory = load_inventory()
    ops = mapping.opinfo_ops(properties)
    assert isinstance(ops[0], OpMetadata)
    assert mapping.map_opinfos(ops, properties, inventory) == mapping.map_opinfos(catalog.all_ops(), properties,
                                                                                   inventory)


def test_a_custom_item_source_makes_planning_read_the_op_database(cache):
    def _only_abs(op) -> bool:
        return op.name == "abs"

    def test_custom(cts):  # pragma: no cover - never run, only planned
        pass

    spec = PropertySpec("custom_abs", "inference", 1, OpInfoItems(applies=_only_abs), test_custom)
    assert op_metadata.planning_ops([spec.items]) is catalog.all_ops()
    plan = build_plan(_manifest("minimal"), properties=[spec])
    assert {item.op for item in plan.items} == {"abs"}
    # a custom property with the default item source is answered by the cache
    default = PropertySpec("custom_all", "inference", 1, OpInfoItems(), test_custom)
    assert isinstance(op_metadata.planning_ops([default.items])[0], OpMetadata)
    assert build_plan(_manifest("minimal"), properties=[default]) == build_plan(
        _manifest("minimal"), properties=[default], ops=catalog.all_ops())


def test_the_file_round_trips(tmp_path, built):
    path = write_catalog(tmp_path / "c.json", built)
    again = read_catalog(path)
    assert again.ops == built.ops and dict(again.sources) == dict(built.sources)
    assert dict(again.environment) == dict(built.environment)
    assert len(built.ops) == len(catalog.all_ops())
    assert path.stat().st_size < op_metadata_file.MAX_BYTES // 10


def _corrupt(text: str, kind: str) -> str:
    data = json.loads(text)
    if kind == "truncated":
        return text[: len(text) // 2]
    if kind == "wrong types":
        data["ops"][3]["answers"][0] = 5
    elif kind == "unknown dtype":
        data["ops"][0]["answers"][0] = ["float33"]
    elif kind == "wrong torch version":
        data["environment"]["torch"] = "1.0.0"
    elif kind == "wrong schema version":
        data["schema_version"] = 99
    elif kind == "changed item source":
        data["sources"][1]["fingerprint"] = "0" * 32
    elif kind == "missing item source":
        del data["sources"][1]
        for op in data["ops"]:
            del op["answers"][1]
    elif kind == "not an object":
        data = [1, 2, 3]
    elif kind == "deeply nested":
        return "[" * 100_000 + "]" * 100_000
    return json.dumps(data)


WHY = {"truncated": "not valid JSON", "wrong types": "ops[3].answers[0]: a list of distinct claimable dtype names",
       "unknown dtype": "ops[0].answers[0]", "wrong torch version": "built for torch '1.0.0'",
       "wrong schema version": "schema_version", "changed item source": "changed since it was built",
       "missing item source": "does not know the item source", "not an object": "the file: an object",
       "deeply nested": "not valid JSON"}


@pytest.mark.parametrize("kind", list(WHY))
def test_a_corrupt_or_stale_cache_is_rebuilt_with_a_warning_naming_the_file_and_why(cache, built, kind):
    path = write_catalog(op_metadata.cache_path(), built)
    path.write_text(_corrupt(path.read_text(), kind))
    with pytest.warns(OpMetadataWarning) as caught:
        rebuilt = op_metadata.current()
    [message] = [str(w.message) for w in caught if issubclass(w.category, OpMetadataWarning)]
    assert message.startswith(f"{path}: ") and WHY[kind] in message and message.endswith("rebuilding it")
    assert "\n" not in message
    assert rebuilt.ops == built.ops
    assert read_catalog(path).ops == built.ops  # the file is whole again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert op_metadata.current().ops == built.ops  # and read without a word


def test_an_oversized_or_irregular_cache_file_is_refused_before_it_is_read(cache, built, monkeypatch):
    path = op_metadata.cache_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b" " * 2048)
    monkeypatch.setattr(op_metadata_file, "MAX_BYTES", 1024)
    with pytest.raises(OpMetadataFileError, match=r"2048 bytes, over the 1024 byte limit"):
        read_catalog(path)
    path.unlink()
    path.mkdir()
    with pytest.raises(OpMetadataFileError, match="not a regular file"):
        read_catalog(path)


def test_a_missing_cache_is_built_with_one_line_on_stderr(cache, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        built = op_metadata.current()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "building the OpInfo metadata cache" in err and str(cache) in err
    assert read_catalog(op_metadata.cache_path()).ops == built.ops
    op_metadata.current()
    assert capsys.readouterr().err == ""


def test_an_unwritable_cache_folder_plans_from_the_op_database_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv(op_metadata.CACHE_DIR_VARIABLE, str(blocker / "cache"))
    with pytest.warns(OpMetadataWarning, match="cannot write the OpInfo metadata cache"):
        plan = build_plan(_manifest("minimal"))
    assert plan == build_plan(_manifest("minimal"), ops=catalog.all_ops())


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(op_metadata.CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert op_metadata.cache_dir() == tmp_path / "xdg" / "torchcts"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert op_metadata.cache_dir() == tmp_path / "home" / ".cache" / "torchcts"
    name = op_metadata.cache_path().name
    assert name.startswith(f"opinfo-torch-{torch.__version__}-torchcts-") and name.endswith(".json")


def test_concurrent_builders_leave_a_whole_file(cache, built):
    path = op_metadata.cache_path()
    write_catalog(path, built)
    problems: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        for _ in range(15):
            write_catalog(path, built)

    def reader() -> None:
        while not stop.is_set():
            try:
                read_catalog(path)
            except (OpMetadataFileError, FileNotFoundError) as exc:  # FileNotFoundError: a rename left a gap
                problems.append(str(exc)[:200])

    threads = [threading.Thread(target=writer) for _ in range(4)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    stop.set()
    watcher.join(timeout=600)
    assert problems == []
    assert read_catalog(path).ops == built.ops
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left behind


@pytest.mark.slow
def test_show_skips_on_a_warm_cache_does_not_import_the_op_database(cache, tmp_path, built):
    write_catalog(op_metadata.cache_path(), built)
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("minimal", device_name="cpu"))
    code = ("import sys\nfrom torchcts.cli.main import cli\n"
            "try:\n    cli(['show-skips', '--manifest', sys.argv[1]])\nexcept SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            f"print('OP DATABASE', {OP_DATABASE!r} in sys.modules)\n"
            "print('DYNAMO', 'torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, str(manifest)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "items would run" in done.stdout
    # nor torch's device-test machinery (dynamo, inductor): the suites import SampleInput at first use
    assert done.stdout.strip().endswith("OP DATABASE False\nDYNAMO False")
    assert "building the OpInfo metadata cache" not in done.stderr
