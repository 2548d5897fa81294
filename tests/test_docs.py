"""docs/manifest.md documents every word the validator accepts, so docs and code cannot drift apart."""

from pathlib import Path

import pytest

from torchcts import dtypes
from torchcts.manifest import vocabulary as vocab

DOC = (Path(__file__).resolve().parents[1] / "docs" / "manifest.md").read_text()

VOCABULARIES = {
    "top-level key": list(vocab.TOP_LEVEL_KEYS),
    "capability": list(vocab.CAPABILITIES) + list(vocab.STALE_CAPABILITIES),
    "container format": list(vocab.CONTAINER_FORMATS),
    "tolerance category": list(vocab.TOLERANCE_CATEGORIES),
    "hardware key": list(vocab.HARDWARE_KEYS),
    "resource limit": list(vocab.RESOURCE_LIMIT_KEYS),
    "hypothesis setting": list(vocab.HYPOTHESIS_KEYS),
    "dtype": dtypes.claimable_names(),
}


@pytest.mark.parametrize("kind", VOCABULARIES)
def test_manifest_doc_names_every_accepted_word(kind):
    missing = [word for word in VOCABULARIES[kind] if f"`{word}`" not in DOC]
    assert missing == [], f"docs/manifest.md does not document these {kind}s"


def test_manifest_doc_describes_every_semantic_level():
    for level, meaning in vocab.SEMANTIC_LEVELS.items():
        assert f"| {level} | {meaning} |" in DOC
