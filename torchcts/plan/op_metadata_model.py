"""The OpInfo metadata planning reads: one OpInfo's names and answers, and the catalog of all of them.

Plain data (no op database): `op_metadata` builds it from torch's OpInfos, `op_metadata_file` reads and writes it.
"""

from __future__ import annotations

from typing import Mapping

import attrs


@attrs.frozen
class OpMetadata:
    """One OpInfo as planning and the coverage audit see it: its names and what each item source says of it.

    Quacks like an OpInfo where they read one (`name`, `variant_test_name`, `aten_name`; `aliases` are
    names here, `alias_names` reads either). `answers`: item source key -> the claimable dtype names it
    gives (in `torchcts.dtypes.CLAIMABLE_DTYPES` order), or None where the source does not apply."""

    name: str
    variant_test_name: str
    aten_name: str
    aliases: tuple[str, ...]
    answers: Mapping[str, tuple[str, ...] | None] = attrs.field(hash=False)

    @property
    def id(self) -> str:
        return f"{self.name}.{self.variant_test_name}" if self.variant_test_name else self.name


@attrs.frozen
class OpCatalog:
    """The cache's content: the environment it was built in, the item sources it answers, every OpInfo."""

    environment: Mapping[str, str] = attrs.field(hash=False)
    sources: Mapping[str, str] = attrs.field(hash=False)  # source key -> fingerprint
    ops: tuple[OpMetadata, ...]
    seconds: float = attrs.field(default=0.0, eq=False)  # how long building it took (informational)
