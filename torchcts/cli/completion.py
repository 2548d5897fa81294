"""Shell completion of the names options take: --property, --dtype, --capability and --template values.

click completes commands and options itself (`_TORCHCTS_COMPLETE=bash_source torchcts`, README
"Shell completion"); this module adds the values (--capability and --template through
`options.LazyChoice(complete=...)`). A completion runs on every Tab press, so it must not import
torch, the op database or the property registry (seconds): the names are lists generated from their
sources (the registry, `torchcts.dtypes`, `torchcts.manifest.vocabulary`, the templates) into
`completion_names.py` by scripts/generate_registry_listings.py; tests/cli/test_completion.py fails when
that file is stale. Properties of a manifest's `custom_test_dirs` are
not completed (they need the manifest loaded); they are still accepted.
"""

from __future__ import annotations

from typing import Iterable

import click
from click.shell_completion import CompletionItem

# generated from their sources; the option modules import them from here
from torchcts.cli.completion_names import CAPABILITY_NAMES, DTYPE_NAMES, PROPERTY_NAMES, TEMPLATE_NAMES  # noqa: F401


def _starting_with(names: Iterable[str], incomplete: str, prefix: str = "") -> list[CompletionItem]:
    return [CompletionItem(prefix + name) for name in names if name.startswith(incomplete)]


def complete_properties(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """--property: the installed suites' property names."""
    return _starting_with(PROPERTY_NAMES, incomplete)


def complete_dtypes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """--dtype: dtype names (after `torch.` too), and the last name of a comma list (`float32,bf`)."""
    head, comma, last = incomplete.rpartition(",")
    prefix = head + comma
    if last.startswith("torch."):
        return _starting_with((f"torch.{name}" for name in DTYPE_NAMES), last, prefix)
    return _starting_with(DTYPE_NAMES, last, prefix)
