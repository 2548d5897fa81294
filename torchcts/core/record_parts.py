"""The typed parts of a result record (`core.record.Record`): what each on-disk field of records.jsonl holds.

Every field is one key of the record's flat JSON line (docs/results.md, `records.jsonl`); the parts group
them by what they say: the item, its verdict, its measures, how it was isolated, its stored counterexample,
its compile leg, its traces, its path-shapes case. The nested objects (a missing kernel, the warnings, a
stored or replayed case, a blamed leg) are typed too. No torch: the report path reads records."""

from __future__ import annotations

from typing import Any

import attrs

from torchcts.core import outcomes
from torchcts.core import json_checks as c
from torchcts.core.typed_json import json_field, nulls_field

# the smaller copies of a record that carry some of its fields (`views=` of a field; `core.record.view_fields`):
# CONSOLE: what a console line and the progress need, carried from a pytest-xdist worker to its controller
# FAILURE: where a failure is stored and what raised it, carried in a fuzz worker's answer
CONSOLE, FAILURE = "console", "failure"

MAX_DISPATCHED = 8192  # names in a record's `dispatched` (torch 2.13 has ~3,100 aten overloads)
MAX_LEGS = 8  # a blamed failure replays at most 6 legs (`engine.blame`)
ISOLATED_BY = ("fork", "spawn")


def _outcome(value: Any) -> bool:
    return isinstance(value, str) and value in outcomes.VALUES  # what outcomes.parse accepts, without building it


def _dispatched(value: Any) -> bool:
    return value is None or (isinstance(value, list) and len(value) <= MAX_DISPATCHED and
                             all(isinstance(v, str) and 0 < len(v) <= 200 for v in value))


def _legs(value: Any) -> bool:
    return value is None or (isinstance(value, list) and len(value) <= MAX_LEGS and all(
        isinstance(leg, dict) and all(isinstance(leg.get(key), str) for key in ("backend", "shape_mode", "outcome"))
        and c.opt_str(leg.get("error_line")) for leg in value))


def _counterexample(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.opt_str(value.get("path")) and
                             c.opt_str(value.get("replay")) and c.opt_int(value.get("elements")) and
                             c.opt_str(value.get("fingerprint")) and c.opt_bool(value.get("new")))


def _case(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.opt_str(value.get("path")) and
                             c.opt_str(value.get("status")) and c.opt_str(value.get("fingerprint")) and
                             c.opt_str(value.get("unreadable")))


def _missing_kernel(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.is_str(value.get("overload")) and
                             c.opt_str(value.get("dispatch_key")))


def _warnings(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.is_count(value.get("count")) and
                             c.opt_str_list(value.get("messages")))


def _unwritable(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.opt_str(value.get("path"))
                             and c.opt_str(value.get("reason")))


def _isolated_by(value: Any) -> bool:
    return value is None or value in ISOLATED_BY


# -- nested objects ------------------------------------------------------------------------------

@attrs.frozen(kw_only=True)
class MissingKernel:
    """The overload a device has no kernel for, as the dispatcher names it, and the dispatch key."""
    overload: str = json_field(c.is_str, "a string", required=True)
    dispatch_key: str | None = json_field(c.opt_str, "a string or null")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


@attrs.frozen(kw_only=True)
class Warnings:
    """Python warnings raised while the item ran: how many, and the distinct messages."""
    count: int = json_field(c.is_count, "a non-negative integer", required=True)
    messages: tuple[str, ...] | None = json_field(c.opt_str_list, "a list of strings")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


@attrs.frozen(kw_only=True)
class StoredCase:
    """The item's failing case in the corpus: where, its fingerprint, whether it is new, its size, how to replay."""
    path: str | None = json_field(c.opt_str, "a string")
    fingerprint: str | None = json_field(c.opt_str, "a string")
    new: bool | None = json_field(c.opt_bool, "true or false")
    elements: int | None = json_field(c.opt_int, "an integer")
    replay: str | None = json_field(c.opt_str, "a string")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


@attrs.frozen(kw_only=True)
class Unwritable:
    """A case file the corpus could not take, and the system's reason."""
    path: str | None = json_field(c.opt_str, "a string")
    reason: str | None = json_field(c.opt_str, "a string")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


@attrs.frozen(kw_only=True)
class ReplayedCase:
    """The case file a replay run replayed: its path, fingerprint, status before, why it cannot be read."""
    path: str | None = json_field(c.opt_str, "a string")
    fingerprint: str | None = json_field(c.opt_str, "a string")
    status: str | None = json_field(c.opt_str, "a string")
    unreadable: str | None = json_field(c.opt_str, "a string or null")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


@attrs.frozen(kw_only=True)
class Leg:
    """One leg a blamed compile failure was replayed under, and what it gave."""
    backend: str = json_field(c.is_str, "a string", required=True)
    shape_mode: str = json_field(c.is_str, "a string", required=True)
    outcome: str = json_field(c.is_str, "a string", required=True)
    error_line: str | None = json_field(c.opt_str, "a string or null")
    nulls: frozenset[str] = nulls_field()  # the fields its JSON held as null


# -- the parts ----------------------------------------------------------------------------------

@attrs.frozen(kw_only=True)
class Identity:
    """Which item: its id and parts (and, in a replay run, the case file replayed)."""
    item: str = json_field(c.is_str, "a string", required=True, views=(CONSOLE,))
    property: str = json_field(c.is_str, "a string", required=True, views=(CONSOLE,))
    op: str = json_field(c.is_str, "a string", required=True, views=(CONSOLE,))
    variant: str | None = json_field(c.opt_str, "a string", views=(CONSOLE,))
    dtype: str = json_field(c.is_str, "a string", required=True, views=(CONSOLE,))
    level: int = json_field(c.level, f"an integer from {c.LEVELS[0]} to {c.LEVELS[-1]}", required=True,
                            views=(CONSOLE,))
    case: ReplayedCase | None = json_field(_case, "null or an object with string path, fingerprint, status and "
                                                  "unreadable", nested=ReplayedCase)


@attrs.frozen(kw_only=True)
class Verdict:
    """What the item came to: its outcome, why, and the error that says so."""
    outcome: outcomes.Outcome = json_field(_outcome, "an outcome docs/results.md names (passed, failed, ..., "
                                                     "runtime_unavailable)", required=True, views=(CONSOLE,))
    reason: str | None = json_field(c.opt_str, "a string or null", views=(CONSOLE,))
    error: str | None = json_field(c.opt_str, "a string or null")
    error_line: str | None = json_field(c.opt_str, "a string or null", views=(CONSOLE, FAILURE))
    error_kind: str | None = json_field(c.opt_str, "a string or null (missing_kernel, backend, harness, setup, "
                                                   "case_file)", views=(CONSOLE, FAILURE))
    error_wrappers: tuple[str, ...] | None = json_field(c.opt_str_list, "a list of strings (torch.compile's "
                                                                         "wrapper types, outermost first)")
    missing_kernel: MissingKernel | None = json_field(_missing_kernel, "null or an object with string overload and "
                                                                       "dispatch_key", nested=MissingKernel,
                                                      views=(CONSOLE, FAILURE))
    finding: str | None = json_field(c.opt_str, "a string or null (a device finding's id)")
    signal: str | None = json_field(c.opt_str, "a string or null (a signal's name)")
    cleanup_error: str | None = json_field(c.opt_str, "a string or null")
    warnings: Warnings | None = json_field(_warnings, "null or an object with integer count and a list of "
                                                       "strings messages", nested=Warnings)


@attrs.frozen(kw_only=True)
class Measures:
    """How much the item ran and how far its results were from CPU's."""
    duration_s: float | None = json_field(c.opt_duration, "a finite non-negative number or null", views=(CONSOLE,))
    examples: int | None = json_field(c.opt_count, "a non-negative integer", views=(CONSOLE,))
    # absent in records older than the field: the report says unknown, not 0
    distinct_cases: int | None = json_field(c.opt_count, "a non-negative integer or null", views=(CONSOLE,))
    max_examples: int | None = json_field(c.opt_count, "a non-negative integer or null", views=(CONSOLE,))
    cpu_contract_cases: int | None = json_field(c.opt_count, "a non-negative integer or null")
    unavailable_cases: int | None = json_field(c.opt_count, "a non-negative integer or null")
    metadata_only_cases: int | None = json_field(c.opt_count, "a non-negative integer or null")
    fingerprints: tuple[str, ...] | None = json_field(c.opt_str_list, "a list of strings")
    max_abs_error: float | None = json_field(c.opt_measure, "a number or null")
    max_rel_error: float | None = json_field(c.opt_measure, "a number or null")
    max_ulp: float | None = json_field(c.opt_measure, "a number or null")
    ulp_error: dict[str, Any] | None = json_field(c.opt_dict, "null or an object")
    hypothesis_statistics: dict[str, Any] | None = json_field(c.opt_dict, "null or an object")


@attrs.frozen(kw_only=True)
class Isolation:
    """Why the item (or its crash-prone cases) ran in another process, and how."""
    isolated: str | None = json_field(c.opt_str, "a string or null", views=(CONSOLE,))
    isolated_by: str | None = json_field(_isolated_by, f"one of {', '.join(ISOLATED_BY)} or null")
    isolated_cases: str | None = json_field(c.opt_str, "a string or null")


@attrs.frozen(kw_only=True)
class Counterexample:
    """Where the item's failing case went in the corpus, or why it could not be stored."""
    counterexample: StoredCase | None = json_field(_counterexample, "null or an object with string path, replay, "
                                                                    "fingerprint, integer elements and boolean new",
                                                   nested=StoredCase, views=(CONSOLE, FAILURE))
    counterexample_error: str | None = json_field(c.opt_str, "a string or null", views=(FAILURE,))
    counterexample_unwritable: Unwritable | None = json_field(_unwritable, "null or an object with string path and "
                                                                           "reason", nested=Unwritable,
                                                        views=(FAILURE,))


@attrs.frozen(kw_only=True)
class CompileLeg:
    """An item run through torch.compile: the target, its counts, and the leg a failure is blamed on."""
    compile: dict[str, Any] | None = json_field(c.opt_dict, "null or an object (the compile target)")
    compile_stats: dict[str, Any] | None = json_field(c.opt_dict, "null or an object")
    shrink_stopped: str | None = json_field(c.opt_str, "a string or null")
    # a compiled failure's blame (`engine.blame`): the first leg that shows it, each leg tried, why none is named
    leg: str | None = json_field(c.opt_str, "a string or null (dynamo, aot, backend, backend-dynamic-only, "
                                            "not-reproduced, not-blamed)", views=(FAILURE,))
    legs: tuple[Leg, ...] | None = json_field(_legs, f"null or a list of at most {MAX_LEGS} objects with string "
                                                      "backend, shape_mode, outcome and error_line (or null)",
                                              nested_list=Leg)
    leg_reason: str | None = json_field(c.opt_str, "a string or null")


@attrs.frozen(kw_only=True)
class Traces:
    """What the item ran on the device, when the run traced it."""
    device_ops: tuple[str, ...] | None = json_field(c.opt_str_list, "a list of strings")
    dispatched: tuple[str, ...] | None = json_field(_dispatched, f"null or a list of at most {MAX_DISPATCHED} "
                                                                 "overload names")


@attrs.frozen(kw_only=True)
class PathShapes:
    """A path-shapes item (docs/path-shapes.md): its case's family, tier and sizes, and its waiver."""
    path_shape: dict[str, Any] | None = json_field(c.opt_dict, "null or an object")
    waiver: dict[str, Any] | None = json_field(c.opt_dict, "null or an object")
