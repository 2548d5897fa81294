"""What a run keeps of the manifest's claims: the command line's `--level`, `--dtype`, `--ops`, `--property`,
`--shard`, `--capability`, `--last-failed`."""

from __future__ import annotations

import difflib
import re
from typing import Any

import attrs
import torch

from torchcts.arguments import shown
from torchcts.core.shards import FORM, MAX_SHARDS, ShardError, parse_shard
from torchcts.manifest.vocabulary import CAPABILITIES


class SelectionError(ValueError):
    """A command-line selection that cannot be used; the message names the option and what is allowed."""


def _check_level(_: Any, __: Any, level: int | None) -> None:
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 8):
        raise SelectionError(f"--level must be an integer from 1 to 8, got {level!r}")


def _check_shard(_: Any, __: Any, shard: tuple[int, int] | None) -> None:
    if shard is None:
        return
    if (not isinstance(shard, tuple) or len(shard) != 2 or not all(type(n) is int for n in shard)
            or not 1 <= shard[0] <= shard[1] <= MAX_SHARDS):
        raise SelectionError(f"--shard {shard!r} is not {FORM}")


def _compile_patterns(selection: "Selection") -> tuple[re.Pattern[str], ...]:
    """The `--ops` regexes, compiled once when the selection is made: a bad one fails before anything runs."""
    compiled = []
    for pattern in selection.op_patterns:
        if not pattern:
            raise SelectionError("--ops '': an empty regex matches every op; leave --ops out to run them all")
        try:
            compiled.append(re.compile(pattern))
        except (re.error, OverflowError, RecursionError) as exc:
            raise SelectionError(f"--ops {shown(pattern)} is not a valid regular expression: {exc}") from None
    return tuple(compiled)


@attrs.frozen
class Selection:
    """What this run keeps of the manifest's claims (command-line narrowing); checked when made.

    `--ops` regexes are searched in the OpInfo id, or in the scenario name of a scenario item. `shard`
    (K, N) keeps only the items whose id hashes to shard K of N (`torchcts.core.shards`)."""

    level: int | None = attrs.field(default=None, validator=_check_level)
    dtypes: tuple[torch.dtype, ...] | None = None
    op_patterns: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    properties: tuple[str, ...] | None = None
    shard: tuple[int, int] | None = attrs.field(default=None, validator=_check_shard)  # (K, N): `torchcts.core.shards`
    capabilities: tuple[str, ...] | None = None  # --capability: only properties that test one (`check_capabilities`)
    last_failed: Any = None  # --last-failed: a `torchcts.results.last_failed.LastFailed`, the earlier run's outcomes
    _op_regexes: tuple[re.Pattern[str], ...] = attrs.field(
        init=False, repr=False, eq=False, default=attrs.Factory(_compile_patterns, takes_self=True))

    def op_selected(self, name: str) -> bool:
        return not self._op_regexes or any(p.search(name) for p in self._op_regexes)

    def narrowing_reason(self, spec: Any, item_id: str) -> str | None:
        """Why `--capability` or `--last-failed` leaves an item of property `spec` out, or None."""
        if self.capabilities is not None and not spec.tests(self.capabilities):
            return f"--capability {', '.join(self.capabilities)} leaves it out ({spec.name} tests {spec.capability})"
        return self.last_failed.reason(item_id) if self.last_failed is not None else None


def check_properties(names: Any, known: Any) -> tuple[str, ...] | None:
    """`--property` names, each one of `known` (the registered properties); None when none are given."""
    if not names:
        return None
    known = list(known)
    for name in names:
        if name not in known:  # the list itself is too long for a one-line error: the closest names, or where to look
            close = difflib.get_close_matches(str(name), known, n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise SelectionError(f"--property {shown(name)} is unknown; {hint}{len(known)} are registered "
                                 "(`torchcts run --help` lists them)")
    return tuple(names)


def check_shard(text: str | None) -> tuple[int, int] | None:
    """`--shard K/N` as (K, N); None when not given; SelectionError names `--shard` and the allowed form."""
    if text is None:
        return None
    try:
        return parse_shard(text)
    except ShardError as exc:
        raise SelectionError(str(exc)) from None


def check_capabilities(names: Any) -> tuple[str, ...] | None:
    """`--capability` names, each a capability a manifest may claim; None when none are given. An unknown one is a
    SelectionError with the closest names."""
    if not names:
        return None
    for name in names:
        if name not in CAPABILITIES:
            close = difflib.get_close_matches(str(name), list(CAPABILITIES), n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise SelectionError(f"--capability {shown(name)} is not one of the {len(CAPABILITIES)} capabilities; "
                                 f"{hint}docs/manifest.md lists them")
    return tuple(dict.fromkeys(names))
