"""Known crashes of the CPU oracle itself: items that cannot be compared because CPU dies.

When torch's own CPU kernel segfaults or aborts on an op's plain samples, no conformance
statement can be made for that item; running it would only end the run. Each rule names the
properties (None: all), the op (a regex on the OpInfo id), the dtypes and the torch versions it
was seen in, and why; matching items are accounted `cpu_contract` with that reason. Rules for crashes that
only transformed cases trigger live with the transformations (`strategies.samples`), where they
turn the transformation off instead of the whole item.
"""

from __future__ import annotations

import re

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.crashes.ledger import torch_minor, version_in


@attrs.frozen
class OracleCrash:
    properties: frozenset[str] | None  # None: every property
    op_pattern: str
    dtypes: frozenset[str]
    torch_versions: str  # clauses as in the known-crash ledger: ">=2.13,<2.14"
    reason: str

    def matches(self, prop: str, op_name: str, dtype: torch.dtype, torch_version: tuple[int, int]) -> bool:
        return ((self.properties is None or prop in self.properties)
                and dtype_names.canonical_name(dtype) in self.dtypes
                and version_in(torch_version, self.torch_versions)
                and re.search(self.op_pattern, op_name) is not None)


KNOWN_ORACLE_CRASHES: tuple[OracleCrash, ...] = (
    OracleCrash(None, r"^nn\.functional\.grid_sample$", frozenset({"bfloat16"}), ">=2.13,<2.14",
                "the CPU oracle segfaults: bfloat16 grid_sample, forward and backward, on its (2, 3, 345, 456) "
                "reference input with grid values beyond [-1, 1] (torch 2.13, bilinear, zeros padding)"),
)


def known_oracle_crash(prop: str, op_name: str, dtype: torch.dtype) -> str | None:
    """Why CPU cannot be the oracle for this item, or None."""
    version = torch_minor()
    for rule in KNOWN_ORACLE_CRASHES:
        if rule.matches(prop, op_name, dtype, version):
            return rule.reason
    return None
