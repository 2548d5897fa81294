"""Coverage exclusions: the packaged file, the project's file merged after it, and malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchcts.coverage import exclusions
from torchcts.coverage.exclusions import PROJECT_FILE, ExclusionsError, load_exclusions
from torchcts.coverage.inventory import inventory_names

NAMES = frozenset({"aten.add.Tensor", "aten.add.out", "aten.abs.default", "aten._print.default"})


def _write(folder: Path, entries, **top) -> Path:
    path = folder / PROJECT_FILE
    path.write_text(json.dumps({"schema_version": 1, "exclusions": entries} | top))
    return path


def _packaged(folder: Path, entries) -> Path:
    path = folder / "packaged.json"
    path.write_text(json.dumps({"schema_version": 1, "exclusions": entries}))
    return path


def test_packaged_file_is_valid_and_names_installed_overloads():
    loaded = load_exclusions(None)
    assert loaded.entries and loaded.problems == ()  # every reviewed entry names a real overload
    assert all(e.reason and e.source.startswith("torchcts/coverage/exclusions.json#") for e in loaded.entries)
    hit = loaded.match("aten.sym_constrain_range.default")
    assert hit is not None and hit.kind == "op" and "Tensor" in hit.reason
    assert loaded.match("aten.add.Tensor") is None
    assert all(name in inventory_names() for name in ("aten._print.default", "aten._foobar.out"))


def test_project_entries_merge_after_packaged_and_override_by_name(tmp_path):
    packaged = _packaged(tmp_path, [{"op": "aten.add", "reason": "packaged reason"},
                                    {"overload": "aten.abs.default", "reason": "packaged abs"}])
    _write(tmp_path, [{"overload": "aten.add.out", "reason": "project reason"},
                      {"pattern": "aten._pr*", "reason": "project pattern"}])
    loaded = load_exclusions(tmp_path, packaged=packaged, torch_version="2.13.0", names=NAMES)
    assert [e.source.rsplit("#")[0] for e in loaded.entries] == [str(packaged)] * 2 + [str(tmp_path / PROJECT_FILE)] * 2
    assert loaded.match("aten.add.out").reason == "project reason"  # the project's entry wins
    assert loaded.match("aten.add.Tensor").reason == "packaged reason"  # the packaged op entry still covers the rest
    assert loaded.match("aten.abs.default").source == f"{packaged}#1"
    assert loaded.match("aten._print.default").kind == "pattern"
    assert loaded.match("aten.sub.Tensor") is None


def test_a_project_op_entry_overrides_a_packaged_overload_entry(tmp_path):
    packaged = _packaged(tmp_path, [{"overload": "aten.add.Tensor", "reason": "packaged"},
                                    {"pattern": "aten.abs.*", "reason": "packaged pattern"}])
    _write(tmp_path, [{"op": "aten.add", "reason": "project op"}, {"op": "aten.abs", "reason": "project abs"}])
    loaded = load_exclusions(tmp_path, packaged=packaged, torch_version="2.13.0", names=NAMES)
    assert loaded.match("aten.add.Tensor").reason == "project op"
    assert loaded.match("aten.abs.default").reason == "project abs"


def test_torch_specifier_makes_an_entry_inactive_elsewhere(tmp_path):
    _write(tmp_path, [{"overload": "aten.add.Tensor", "reason": "new torch only", "torch": ">=2.12"},
                      {"overload": "aten.abs.default", "reason": "old torch only", "torch": "<2.8"}])
    packaged = _packaged(tmp_path, [])
    loaded = load_exclusions(tmp_path, packaged=packaged, torch_version="2.13.0+cpu", names=NAMES)
    assert loaded.match("aten.add.Tensor") is not None and loaded.match("aten.abs.default") is None
    assert [e.value for e in loaded.inactive] == ["aten.abs.default"]


def test_stale_names_warn_and_do_not_fail(tmp_path):
    _write(tmp_path, [{"overload": "aten.gone.default", "reason": "renamed in torch 2.99"},
                      {"op": "aten.vanished", "reason": "removed"},
                      {"pattern": "aten.nothing_*", "reason": "matches nothing"},
                      {"overload": "aten.add.Tensor", "reason": "twice"},
                      {"overload": "aten.add.Tensor", "reason": "twice"}])
    loaded = load_exclusions(tmp_path, packaged=_packaged(tmp_path, []), torch_version="2.13.0", names=NAMES)
    assert len(loaded.entries) == 5
    text = "\n".join(loaded.problems)
    assert "#0: overload 'aten.gone.default' is not an overload of torch 2.13.0 (stale)" in text
    assert "#1: op 'aten.vanished' is not an op" in text and "#2: pattern" in text and "matches no overload" in text
    assert "repeats" not in text and len(loaded.problems) == 3
    assert [r.split(":")[0].rsplit("#")[1] for r in loaded.repeats] == ["4"] and "repeats" in loaded.repeats[0]


@pytest.mark.parametrize(("entry", "field", "words"), [
    ({"overload": "aten.add.Tensor"}, "reason", "non-empty reason"),
    ({"overload": "aten.add.Tensor", "reason": "  "}, "reason", "non-empty reason"),
    ({"overload": "aten.add.Tensor", "reason": "x", "why": "y"}, "why", "unknown field"),
    ({"reason": "x"}, None, "exactly one of"),
    ({"overload": "aten.add.Tensor", "op": "aten.add", "reason": "x"}, "op", "exactly one of"),
    ({"overload": "add.Tensor", "reason": "x"}, "overload", "not an overload name"),
    ({"op": "aten.add.Tensor", "reason": "x"}, "op", "not an op name"),
    ({"pattern": "aten.(add", "reason": "x"}, "pattern", "not a glob"),
    ({"pattern": "(a+)+b", "reason": "x"}, "pattern", "not a glob"),
    ({"pattern": r"aten\.(\w|\w)*Z", "reason": "x"}, "pattern", "not a glob"),  # regexes are not accepted
    ({"pattern": "aten.[ab]*", "reason": "x"}, "pattern", "not a glob"),
    ({"overload": "aten.add.Tensor", "reason": "x", "torch": "newest"}, "torch", "not a version specifier"),
    ({"overload": "aten.add.Tensor", "reason": "x", "torch": 2.13}, "torch", "version specifier"),
    ("aten.add.Tensor", None, "must be an object"),
])
def test_malformed_entries_name_file_entry_and_field(tmp_path, entry, field, words):
    path = _write(tmp_path, [{"overload": "aten.abs.default", "reason": "fine"}, entry])
    with pytest.raises(ExclusionsError) as caught:
        load_exclusions(tmp_path, packaged=_packaged(tmp_path, []), torch_version="2.13.0", names=NAMES)
    error = caught.value
    assert (error.file, error.entry, error.field) == (str(path), 1, field)
    assert words in str(error) and str(error).startswith(f"{path}: entry 1")
    assert "\n" not in str(error)


@pytest.mark.parametrize(("text", "field", "words"), [
    ("{not json", None, "not JSON"),
    ('["a"]', None, "must be a JSON object"),
    ('{"schema_version": 2, "exclusions": []}', "schema_version", "must be 1"),
    ('{"schema_version": 1}', "exclusions", "must be a list"),
    ('{"schema_version": 1, "exclusions": [], "extra": 1}', "extra", "unknown field"),
    ("[" * 500 + "]" * 500, None, "nested deeper"),
])
def test_malformed_files_name_the_file(tmp_path, text, field, words):
    path = tmp_path / PROJECT_FILE
    path.write_text(text)
    with pytest.raises(ExclusionsError) as caught:
        load_exclusions(tmp_path, packaged=_packaged(tmp_path, []), torch_version="2.13.0", names=NAMES)
    assert (caught.value.file, caught.value.entry, caught.value.field) == (str(path), None, field)
    assert words in str(caught.value)


def test_oversized_file_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(exclusions, "MAX_BYTES", 100)
    path = _write(tmp_path, [{"overload": "aten.add.Tensor", "reason": "x" * 200}])
    with pytest.raises(ExclusionsError, match="over the limit") as caught:
        exclusions.read_file(path)
    assert caught.value.file == str(path)


def test_no_project_file_means_packaged_only(tmp_path):
    loaded = load_exclusions(tmp_path, packaged=_packaged(tmp_path, [{"op": "aten.add", "reason": "r"}]),
                             torch_version="2.13.0", names=NAMES)
    assert [e.value for e in loaded.entries] == ["aten.add"] and loaded.problems == ()


def test_globs_match_whole_names_in_linear_time():
    """`*` is any run of characters, `?` one; a pattern built to backtrack still answers at once."""
    def glob(value):
        return exclusions.Exclusion("pattern", value, "r", "f#0")
    assert glob("aten.abs.*").matches("aten.abs.default") and not glob("aten.abs.*").matches("aten.absolute.default")
    assert glob("aten._foreach_*_.*").matches("aten._foreach_add_.List")
    assert not glob("aten._foreach_*_.*").matches("aten._foreach_add.List")
    assert glob("aten.a?s.default").matches("aten.abs.default") and not glob("aten.a?s.*").matches("aten.as.x")
    assert glob("*").matches("aten.add.Tensor") and not glob("aten.add").matches("aten.add.Tensor")
    import time
    start = time.monotonic()
    hostile = glob("*a" * 60 + "*Z")
    assert not any(hostile.matches("aten." + "a" * n) for n in range(200))
    assert time.monotonic() - start < 2
