"""docs/manifest.md documents every word the validator accepts, so docs and code cannot drift apart."""

from pathlib import Path

import pytest

from torchcts import dtypes
from torchcts.manifest import schema
from torchcts.manifest import vocabulary as vocab

DOC = (Path(__file__).resolve().parents[1] / "docs" / "manifest.md").read_text()

VOCABULARIES = {
    "top-level key": list(schema.KEYS),
    "capability": list(vocab.CAPABILITIES) + list(vocab.STALE_CAPABILITIES),
    "container format": list(vocab.CONTAINER_FORMATS),
    "tolerance category": list(vocab.TOLERANCE_CATEGORIES),
    "hardware key": [key.name for key in schema.SECTION_KEYS["hardware"].keys],
    "resource limit": [key.name for key in schema.SECTION_KEYS["resource_limits"].keys],
    "hypothesis setting": [key.name for key in schema.SECTION_KEYS["hypothesis"].keys],
    "dtype": dtypes.claimable_names(),
}


@pytest.mark.parametrize("kind", VOCABULARIES)
def test_manifest_doc_names_every_accepted_word(kind):
    missing = [word for word in VOCABULARIES[kind] if f"`{word}`" not in DOC]
    assert missing == [], f"docs/manifest.md does not document these {kind}s"


def test_manifest_doc_describes_every_semantic_level():
    for level, meaning in vocab.SEMANTIC_LEVELS.items():
        assert f"| {level} | {meaning} |" in DOC


# docs/architecture.md is the map of the code (issue 14, item 7): it names every stage's package, and every
# path it names exists.
ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_architecture_doc_names_every_subpackage():
    subpackages = sorted(p.name for p in (ROOT / "torchcts").iterdir() if (p / "__init__.py").is_file())
    assert [name for name in subpackages if f"`torchcts/{name}/`" not in ARCHITECTURE] == []
    for folder in ("strategies", "properties", "manifests", "corpus"):
        assert f"`{folder}/`" in ARCHITECTURE


def test_every_path_and_module_the_architecture_doc_names_exists():
    import importlib.util
    import re

    top = "torchcts|strategies|properties|manifests|corpus|docs|tests"
    path = rf"(?<![\w/.<-])((?:{top})/[\w./-]*[\w/])(?![\w/<-]|\.\w)"
    paths = set(re.findall(path, ARCHITECTURE))  # not placeholders (`properties/suites/<area>.py`, `torchcts/*.py`)
    assert len(paths) > 30
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []
    modules = set(re.findall(r"`(torchcts(?:\.\w+)+)`", ARCHITECTURE))
    assert sorted(m for m in modules if importlib.util.find_spec(m) is None) == []


def test_manifest_doc_lists_each_tolerance_category_with_its_readers_and_each_refused_one_with_its_reason():
    for category, readers in vocab.TOLERANCE_READERS.items():
        assert f"| `{category}` | {readers} |" in DOC
    for category, reason in vocab.REFUSED_TOLERANCE_CATEGORIES.items():
        assert f"- `{category}`: {reason}." in DOC
