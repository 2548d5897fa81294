"""`--shard K/N`: which of N shards runs an item, decided by a hash of its id alone.

An item's shard depends only on its id (`PlanItem.id`, stable across runs and machines) and N:
adding or removing other items (a new op, a new property) never moves it, and every machine that
builds the same plan agrees on the split without talking to the others. No torch: the report's
`--merge` imports this.
"""

from __future__ import annotations

import hashlib
import re

MAX_SHARDS = 1000
FORM = "K/N with integers 1 <= K <= N <= 1000 (e.g. 2/3)"
_SHAPE = re.compile(r"\s*(\d{1,4})\s*/\s*(\d{1,4})\s*", re.ASCII)  # no full-width digits: 1/2 only


class ShardError(ValueError):
    """A `--shard` value that is not K/N; the message names the option and the allowed form."""


def parse_shard(text: object) -> tuple[int, int]:
    """(K, N) from "K/N"; ShardError names `--shard` and the allowed form."""
    match = _SHAPE.fullmatch(text) if isinstance(text, str) else None
    if match is not None:
        index, count = int(match[1]), int(match[2])
        if 1 <= index <= count <= MAX_SHARDS:
            return index, count
    shown = repr(text) if not isinstance(text, str) or len(text) <= 40 else repr(text[:37] + "...")
    raise ShardError(f"--shard {shown} is not {FORM}")


def format_shard(shard: tuple[int, int]) -> str:
    return f"{shard[0]}/{shard[1]}"


def shard_of(item_id: str, count: int) -> int:
    """The shard (1..count) that runs the item `item_id`: the first 64 bits of its id's SHA-256, mod count."""
    return int(hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:16], 16) % count + 1


def shard_reason(item_id: str, shard: tuple[int, int]) -> str | None:
    """Why `--shard K/N` leaves the item out ("--shard 1/3: shard 2 runs it"), or None when shard K runs it."""
    owner = shard_of(item_id, shard[1])
    return None if owner == shard[0] else f"--shard {format_shard(shard)}: shard {owner} runs it"
