"""Which kind of failure a record is, from its structured fields first, with the evidence that decided it.

The kinds (`KINDS`) are those a backend team triages by: wrong values, wrong strides or memory format,
wrong dtype or promotion, an unsupported operation, error parity (an error where CPU has none, or a
different one), a crash, a hang, nondeterminism, and `harness` (TorchCTS itself or the item's setup
failed: not the backend's finding). The deciding field is, in order: the outcome (crashed, timed_out),
the error kind (`missing_kernel`, `backend`, `harness`, `setup`, `case_file`), the property (`errors`,
`deterministic`, `dtype_semantics`), the stored case (an OpInfo error input; the oracle's difference,
which names the first mismatch: dtype, strides, layout, shape or values), and only last the record's
own message, read with the same anchored patterns.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

KINDS = ("values", "strides", "dtype", "unsupported", "error_parity", "crash", "hang", "nondeterminism", "harness")
KIND_TITLES = {
    "values": "values outside tolerance", "strides": "strides / memory format", "dtype": "dtype / promotion",
    "unsupported": "unsupported operation", "error_parity": "error parity", "crash": "crash", "hang": "hang",
    "nondeterminism": "nondeterminism", "harness": "harness / setup (not a backend finding)",
}
_PROPERTY_KINDS = {"errors": "error_parity", "deterministic": "nondeterminism", "dtype_semantics": "dtype"}
_HARNESS_KINDS = ("harness", "setup", "case_file")
# The oracle's comparison message (`torchcts.engine.oracle.compare`): `<where>: dtype X, CPU gives Y`, ...
_MISMATCH = re.compile(r"(?:^|: )(dtype|strides|layout|shape) [^;]*?,? (?:CPU gives|expected) ")
_MISMATCH_KINDS = {"dtype": "dtype", "strides": "strides", "layout": "strides", "shape": "values"}
_NOT_IMPLEMENTED = re.compile(r"^(?:\w+: )?NotImplementedError\b")


@attrs.frozen
class Classification:
    kind: str
    evidence: str  # which field decided it, and its value


def classify(record: dict[str, Any], case: Any = None) -> Classification:
    """The kind of a failing record (outcome failed, error, crashed or timed_out); `case`, its loaded corpus
    case when there is one (`CorpusCase`), adds its structured failure."""
    outcome = record["outcome"]
    if outcome == "crashed":
        signal = record.get("signal")
        return Classification("crash", "outcome crashed" + (f" ({signal})" if isinstance(signal, str) else ""))
    if outcome == "timed_out":
        return Classification("hang", "outcome timed_out")
    error_kind = record.get("error_kind")
    if outcome == "error":
        if error_kind == "missing_kernel":
            missing = record.get("missing_kernel") or {}
            return Classification("unsupported", f"error_kind missing_kernel ({missing.get('overload', '?')})")
        if error_kind in _HARNESS_KINDS:
            return Classification("harness", f"error_kind {error_kind}")
        line = record.get("error_line") or ""
        if error_kind == "backend" and _NOT_IMPLEMENTED.match(line):
            return Classification("unsupported", "error_kind backend, message NotImplementedError")
        if error_kind == "backend":
            return Classification("error_parity", "error_kind backend (raised where CPU did not)")
        return Classification("harness", f"outcome error with error_kind {error_kind!r}")
    prop = record["property"]
    if prop in _PROPERTY_KINDS:
        return Classification(_PROPERTY_KINDS[prop], f"property {prop}")
    if case is not None:
        if "error_type" in case.inputs:
            return Classification("error_parity",
                                  f"case holds an OpInfo error input ({_short(case.inputs['error_type'])})")
        difference = case.failure.get("difference")
        if isinstance(difference, str):
            found = _MISMATCH.search(difference)
            what = found.group(1) if found else "values"
            return Classification(_MISMATCH_KINDS.get(what, "values"), f"case failure.difference: {what}")
    line = record.get("error_line") or ""
    found = _MISMATCH.search(line)
    if found:
        return Classification(_MISMATCH_KINDS[found.group(1)], f"message (last resort): {found.group(1)} differs")
    return Classification("values", "outcome failed (no field names another kind)")


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else type(value).__name__
    return text[:60]
