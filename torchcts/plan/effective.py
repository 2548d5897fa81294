"""The claims a run tests: the manifest file's, with the command line's `--level` and `--dtype` applied for
this run only.

`semantic_level` is a run depth, not a capability claim: the manifest's is the default depth, `--level N` the
run's (up as well as down). `--dtype D` claims D for every op in this run, even where the manifest marks it
False, scopes it to other ops by a regex, or does not list it; the dtypes not selected are deselected. The
result says what differs from the file (which dtypes the command line added, which depth it set), and carries
both fingerprints, so a report never passes a command-line claim off as the manifest's.
"""

from __future__ import annotations

from typing import Any

import attrs

from torchcts import dtypes as dtype_names
from torchcts.manifest import Manifest
from torchcts.manifest.model import DtypeClaim
from torchcts.plan.selection import Selection

LEVEL_FROM_MANIFEST = "manifest"
LEVEL_FROM_OPTION = "--level"


@attrs.frozen
class RunClaims:
    """The manifest as its file says (`declared`) and as this run tests it (`effective`).

    `added_dtypes`: dtype name -> what the file says of it (`False`, `regex '...'`, `not listed`), for each
    dtype `--dtype` claims for every op although the file does not; `level_source`: who set the depth."""

    declared: Manifest
    effective: Manifest
    level_source: str
    added_dtypes: dict[str, str]

    @property
    def depth(self) -> int:
        return self.effective.semantic_level

    @property
    def differs(self) -> bool:
        """Whether the run tests other claims than the file's."""
        return self.effective.fingerprint() != self.declared.fingerprint()

    @property
    def beyond_file(self) -> bool:
        """Whether the command line claims more than the file: a dtype added, or a depth above its level."""
        return bool(self.added_dtypes) or self.depth > self.declared.semantic_level

    def summary_line(self) -> str:
        """One line saying what the command line claims beyond the file ("" when nothing)."""
        parts = [f"--dtype claims {name} for every op (the manifest: {said})" for name, said in self.added_dtypes.items()]
        if self.depth > self.declared.semantic_level:
            parts.append(f"--level {self.depth} runs deeper than the manifest's semantic_level "
                         f"{self.declared.semantic_level}")
        return "; ".join(parts)

    def level_reason(self, level: int) -> str:
        """The accounting reason of an item at `level`, above this run's depth: names who set the depth."""
        if self.level_source == LEVEL_FROM_OPTION:
            return (f"level {level} is above --level {self.depth} (the run's depth; the manifest's "
                    f"semantic_level is {self.declared.semantic_level})")
        return f"level {level} is above the manifest's semantic_level {self.depth} (the run's depth; --level overrides it)"

    def as_json(self) -> dict[str, Any]:
        """run.json's `claims`: both fingerprints, the depth and its source, the dtypes the command line added."""
        return {"manifest_hash": self.declared.fingerprint(), "effective_manifest_hash": self.effective.fingerprint(),
                "differs_from_manifest": self.differs,
                "level": {"depth": self.depth, "source": self.level_source,
                          "manifest": self.declared.semantic_level},
                "dtypes_added_by_command_line": dict(self.added_dtypes)}


def run_claims(manifest: Manifest, selection: Selection) -> RunClaims:
    """The claims of a run of `manifest` under `selection` (`--level`, `--dtype`)."""
    depth = selection.level if selection.level is not None else manifest.semantic_level
    source = LEVEL_FROM_OPTION if selection.level is not None else LEVEL_FROM_MANIFEST
    claims = list(manifest.dtype_claims)
    added: dict[str, str] = {}
    for dtype in selection.dtypes or ():
        claim = manifest.claim_for(dtype)
        if claim is not None and claim.claimed and claim.op_pattern is None:
            continue
        added[dtype_names.canonical_name(dtype)] = _what_the_file_says(claim)
        whole = DtypeClaim(dtype, True)
        claims = [whole if c.dtype == dtype else c for c in claims] if claim is not None else claims + [whole]
    effective = attrs.evolve(manifest, semantic_level=depth, dtype_claims=tuple(claims))
    return RunClaims(manifest, effective, source, added)


def _what_the_file_says(claim: DtypeClaim | None) -> str:
    if claim is None:
        return "not listed"
    if not claim.claimed:
        return "False"
    return f"regex {claim.op_pattern.pattern!r}" if claim.op_pattern is not None else "True"
