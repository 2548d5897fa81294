"""The docs/results.md table of record fields, rendered from rows kept here beside the typed record: a test
(tests/results/test_record_doc.py) checks that the doc holds `render_table()` and that the rows name every field
of `core.record` exactly once, so a field cannot be added, renamed or dropped without its row."""

from __future__ import annotations

import attrs


@attrs.frozen
class Row:
    fields: tuple[str, ...]  # the record fields the row documents
    written: str  # in which records the fields appear
    meaning: str


ROWS: tuple[Row, ...] = (
    Row(('item',),
        'all',
        '`property::op::variant::dtype`, stable across runs'),
    Row(('property', 'op', 'variant', 'dtype', 'level'),
        'all',
        "the item's parts; `op` is the OpInfo id (`name` or `name.variant_test_name`)"),
    Row(('outcome',),
        'all',
        'one of the outcomes below ([Outcomes](#outcomes)): executed (`passed`, `failed`, `error`, '
        '`crashed`, `timed_out`), or not run, in the group of its reason'),
    Row(('reason',),
        'all but `passed`',
        'why, in words'),
    Row(('error',),
        'executed',
        'the failure message, with the shrunk counterexample Hypothesis printed (at most 4,000 '
        'characters)'),
    Row(('error_line',),
        'failed, error, crashed, timed_out',
        'the error\'s first meaningful line, at most 300 characters, without the dispatcher\'s "This '
        'could be because ..." text and "registered at" listing: what a console prints; `missing '
        'kernel aten::zero_ (PrivateUse1)` for a missing kernel'),
    Row(('error_kind',),
        'error',
        'what raised: `missing_kernel` (the device has no kernel for an overload the case needs), '
        '`backend` (the backend raised anything else where CPU did not), `harness` (certainly '
        'TorchCTS itself: a TorchCTS defect it detected, anything on the CPU validation target, or an'
        " exception other than a RuntimeError raised with only TorchCTS's, its test runner's and the "
        "standard library's frames on the way; an unexpected exception whose traceback passes through"
        ' torch or backend code is `backend`, since it cannot be told from a backend crashing in '
        'Python), `setup` (the item could not be prepared: its op, its inputs), `case_file` (a '
        'replayed corpus case cannot be read)'),
    Row(('compile',),
        'executed items under `--compile` (absent otherwise)',
        'the compile target the item ran through: `backend`, `shape_mode` (`static`, `dynamic`, '
        '`automatic`), `mode`, `options`, `fullgraph` (torchcts.engine.compile_target; '
        'docs/compile.md)'),
    Row(('compile_stats',),
        'executed items of the compile_modules suite',
        "the graphs dynamo compiled (`graphs`) and its graph breaks (`graph_breaks`), summed over the item's "
        'cases run on the device (docs/suites/compile_modules.md)'),
    Row(('shrink_stopped',),
        'a failing item under `--compile` whose shrinking hit the compile budget (absent otherwise)',
        'why shrinking ended early: the kept case is the last that failed, not necessarily minimal'),
    Row(('error_wrappers',),
        'failed, error under `--compile` (absent otherwise)',
        "the `torch.compile` wrappers the device's exception came through, outermost first, e.g. "
        '`["TorchRuntimeError", "Unsupported"]` for an op\'s refusal dynamo raised while running it on'
        ' fake tensors, `["BackendCompilerFailed"]` for one AOTAutograd\'s tracing raised '
        "(torchcts.engine.error_cause: the errors property compares the cause behind them with CPU's "
        'error; a compile failure is never a refusal)'),
    Row(('missing_kernel',),
        'error of kind `missing_kernel`',
        '`{"overload": "aten::add.out", "dispatch_key": "PrivateUse1"}`: the overload as the '
        'dispatcher names it and the dispatch key it has no kernel for (a renamed PrivateUse1 backend'
        ' is reported as `PrivateUse1`; see [Missing kernels](#missing-kernels))'),
    Row(('finding',),
        'failed, error, when a device finding explains it',
        "the id of the run's device finding this item's error is a symptom of (`device_index_none`: "
        'the device\'s tensors have no index, and the error is PyTorch\'s "structured kernels don\'t '
        'support multi-device outputs" assert or autograd\'s device-index assert); the finding itself,'
        ' with its fix, is in run.json `environment.findings` and the report groups the item under it'
        ' ([Device findings](#device-findings))'),
    Row(('warnings',),
        'executed, when any',
        'Python warnings raised while the item ran (op UserWarnings, deprecations, warnings while '
        'drawing cases): `{"count": N, "messages": [...]}`, the distinct messages as `Category: '
        'text`, at most 20 of at most 500 characters; they are kept here and not printed on the '
        'terminal'),
    Row(('duration_s',),
        'executed',
        'wall time of the item'),
    Row(('examples',),
        'executed',
        'cases run (Hypothesis examples, shrinking included)'),
    Row(('distinct_cases',),
        'executed',
        'how many distinct cases (distinct `fingerprints`) were compared with CPU: a case the CPU '
        'oracle rejected (`cpu_contract_cases`) or the target could not run (`unavailable_cases`) is '
        'no evidence and does not count; Hypothesis can draw the same case again, and an op with few '
        'OpInfo samples has fewer cases than the budget (a derandomized CPU validation run of abs, '
        'add, mul, neg and sin at `--level 1 --max-examples 10`: 46 of 62 items ran fewer than 10 '
        'distinct cases, the fewest 4). Absent in records written before the field, in the record of '
        'an item whose process died and in path-shapes records (docs/path-shapes.md): a reader takes '
        'it as unknown, not 0'),
    Row(('max_examples',),
        'executed, drawn cases',
        "the item's example budget: the Hypothesis `max_examples` its cases were drawn against "
        '(`--max-examples`, the profile or the manifest; fuzz: `--examples-per-task`). Absent for an '
        'item whose cases are a fixed list (OpInfo error inputs, a replayed case) and in older '
        'records. The report counts the passed items whose `distinct_cases` is below it '
        '(docs/reports.md, "Distinct cases")'),
    Row(('cpu_contract_cases',),
        'executed',
        'cases the CPU oracle rejected (they say nothing about the backend)'),
    Row(('unavailable_cases',),
        'executed',
        'cases the target cannot run by design (`meta` and a data-dependent output size); an item '
        'whose cases are all rejected or unavailable is `runtime_unavailable`'),
    Row(('metadata_only_cases',),
        'executed, when any',
        "cases compared in dtype and shape only, not values: the `dispatch` property's random "
        "overloads, results holding uninitialized memory, and calls CPU's own kernel answered two "
        'ways (docs/coverage/generated.md)'),
    Row(('fingerprints',),
        'executed',
        "the first 16 hex digits of each case's fingerprint, in order: two derandomized runs with the"
        ' same versions and manifest have equal lists'),
    Row(('max_abs_error', 'max_rel_error', 'max_ulp'),
        'executed',
        'the largest errors seen in comparisons that passed'),
    Row(('ulp_error',),
        'executed, floating items whose cases were measured',
        'the ULP rule (docs/oracle.md): `{"rule": "correctly_rounded" or "recorded", "backend": max, '
        '"cpu": max, "cases": n, "checked": n}`, the largest errors of the device and of CPU against '
        'a float64 reference, in ULPs of the result dtype'),
    Row(('counterexample',),
        'failed, error',
        "the item's shrunk and reduced failing case in the corpus (docs/corpus.md): `path`, "
        '`fingerprint`, `new` (false when the same case was already there), `elements` (tensor '
        'elements in the case), `replay` (the command that reruns it); null for items that passed. '
        'For a missing kernel, the one case stored for its overload (`new` false when an earlier item'
        ' stored it)'),
    Row(('counterexample_error',),
        'failed, error',
        "why the failing case could not be stored (an input with no exact JSON form; the corpus's "
        'disk full)'),
    Row(('counterexample_unwritable',),
        'failed, error, when the corpus could not be written',
        '`{"path", "reason"}`: the case file that could not be written and the system\'s reason (`No '
        'space left on device`); the run stopped after this record with the line `PATH: cannot be '
        'written: REASON`, exit 2 (docs/harness.md)'),
    Row(('leg', 'legs', 'leg_reason'),
        'failing items under `--compile` (`torchcts run`; `fuzz` blames nothing)',
        'which layer of `torch.compile` first shows the failure (torchcts.engine.blame; '
        'docs/compile.md): its stored case replayed in the run, a fresh compile per leg, under '
        '`eager` (dynamo), `aot_eager` (+ AOTAutograd) and the backend with static shapes, then, for '
        'a dynamic or automatic run, the backend and the two references with dynamic shapes. `leg`: '
        '`dynamo`, `aot`, `backend`, `backend-dynamic-only` (the backend fails it only with dynamic '
        'shapes), `not-reproduced` (no leg failed it again) or `not-blamed` (no stored case, as for '
        "an item whose own process died or overran; the run's budget of blamed cases spent; a leg "
        'that fails differently from the run; a leg that could not replay it; an error that is '
        "TorchCTS's own; `leg_reason` says which); `legs`: each leg tried, in order: `backend`, "
        '`shape_mode`, `outcome`, `error_line`'),
    Row(('case',),
        'replay runs',
        'the replayed case file: `path`, `fingerprint`, `status` before the replay'),
    Row(('cleanup_error',),
        "optional: items after which the device's cache cleanup failed",
        "what the device's `empty_cache` (run after the item when its memory runs full, inside the "
        "item's guard) raised or how it left (`os._exit(3) called in vendor.empty_cache (...)`); the "
        "item's outcome stands"),
    Row(('isolated',),
        'isolated items',
        'why the item ran isolated (`--subprocess-per-test`, a known-crash rule, adaptive evidence; '
        'docs/harness.md)'),
    Row(('isolated_by',),
        'isolated items',
        '`fork` (a forked child) or `spawn` (a spawned worker interpreter, where the device does not '
        'survive a fork or `--isolation-start spawn`; docs/harness.md)'),
    Row(('isolated_cases',),
        'optional: items a CPU-oracle crash rule matches',
        "`known CPU-oracle crash rule <rule>: <reason>`: the item's crash-prone cases each ran in "
        'their own forked child, and one the oracle crashes or hangs on counts in '
        '`cpu_contract_cases` (docs/harness.md)'),
    Row(('signal',),
        'crashed',
        "the signal that killed the child (`SIGSEGV`, `SIGABRT`); `error` then holds the crash's "
        'Python stack'),
    Row(('device_ops',),
        'executed, faulty with `TORCHCTS_TRACE_DEVICE_OPS=1`',
        'aten overloads the item ran on the device (used by `torchcts selftest`), and `bug:<name>` '
        'for each seeded bug that fired in it (benchmarks/bench_triage.py, tests/triage); with '
        '`TORCHCTS_FAULTY_WOULD_FIRE=1` (the selftest\'s clean runs) `would:<name>` for each seeded bug that was off '
        'and whose condition held in it (docs/faulty-backend.md)'),
    Row(('dispatched',),
        'executed, with `--trace-dispatch` (eager devices only)',
        "the sorted aten overloads (`aten.add.Tensor`) the item's device side dispatched: placing its"
        ' cases on the device and the device calls, not the CPU oracle; at most 8192 names; read by '
        '`torchcts coverage collect-backend-evidence` (docs/coverage/evidence.md)'),
    Row(('hypothesis_statistics',),
        'executed, with `--hypothesis-show-statistics`',
        "Hypothesis's statistics for the item: `phases` (per phase run: `test_cases`, `passing`, "
        '`failing`, `invalid`, `seconds`; `shrinks_successful` for shrink), `stopped_because`, and '
        "`text` (Hypothesis's own description, at most 4,000 characters). Timings vary from run to "
        'run'),
    Row(('path_shape', 'waiver'),
        'path-shapes runs (`torchcts path-shapes run`)',
        "the case's `family`, `tier`, `needed_bytes`, `largest_tensor_bytes`, `budget`, `source` and "
        '`file`; `waiver`: the waiver that marks the case a known problem of the target (`targets`, '
        '`reason`, `expires`) or null; docs/path-shapes.md'),
    Row(('record_version',),
        'records written since version 2',
        "the record's version, 2; a record without it is version 1 ([Record "
        'versions](#record-versions))'),
)


def render_table() -> str:
    """The record-field table of docs/results.md (`## records.jsonl`)."""
    lines = ["| field | in | meaning |", "| --- | --- | --- |"]
    for row in ROWS:
        names = ", ".join(f"`{name}`" for name in row.fields)
        lines.append(f"| {names} | {row.written} | {row.meaning} |")
    return "\n".join(lines)


def documented_fields() -> list[str]:
    return [name for row in ROWS for name in row.fields]
