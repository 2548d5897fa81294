"""Writes `torchcts/cli/completion_names.py`, the names a Tab completes, from their sources.

A completion must not import torch or the registry (`torchcts.cli.completion`), so it reads a generated
module; this renders that module from the registry (property names), `torchcts.dtypes` (dtype names), the
manifest vocabulary (capabilities) and the templates. `scripts/generate_registry_listings.py` writes it and
tests/cli/test_completion.py fails when the committed file differs, so adding a suite adds its names.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from torchcts.dtypes import claimable_names
from torchcts.manifest.template_names import TEMPLATE_NAMES
from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.plan import registry

TARGET = Path(__file__).resolve().with_name("completion_names.py")
HEADER = '''"""The names a Tab completes (`torchcts.cli.completion`): written by scripts/generate_registry_listings.py from
their sources (`torchcts.cli.completion_listing`); do not edit. tests/cli/test_completion.py fails when stale."""

from __future__ import annotations
'''


def _tuple(name: str, what: str, values: tuple[str, ...]) -> str:
    body = textwrap.fill(", ".join(f'"{value}"' for value in values) + ",", width=116, initial_indent="    ",
                         subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
    return f"\n# {what}\n{name}: tuple[str, ...] = (\n{body}\n)\n"


def render() -> str:
    """The text of `completion_names.py` for this checkout."""
    registry.load()
    return HEADER + "".join([
        _tuple("PROPERTY_NAMES", "registry.names() of the installed suites (by level, then name)", registry.names()),
        _tuple("DTYPE_NAMES", "torchcts.dtypes.claimable_names() on the supported torch (what --dtype may name)",
               tuple(claimable_names())),
        _tuple("CAPABILITY_NAMES", "torchcts.manifest.vocabulary.CAPABILITIES, in its order", tuple(CAPABILITIES)),
        _tuple("TEMPLATE_NAMES", "torchcts.manifest.template_names.TEMPLATE_NAMES (`init --template`)",
               tuple(TEMPLATE_NAMES)),
    ])
