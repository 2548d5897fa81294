"""The scorecard groups errors by cause: lines that differ only in volatile parts (C++ line numbers, addresses,
object ids, dynamo's shape symbols, temp paths) are one group; lines that differ in anything else are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchcts.report.causes import MAX_KEY_CHARS, cause_key
from torchcts.report.grouping import failure_groups
from torchcts.report.render import write_report

# PyTorch's assert as a backend whose tensors have no device index raises it (tests/engine/test_device_findings.py
# produces it for real), at the line of the generated file that holds each op's structured kernel
ASSERT = ('RuntimeError: *current_device == options.device() INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/build/'
          'aten/src/ATen/RegisterCompositeExplicitAutogradNonFunctional_{shard}.cpp":{line}, please report a bug '
          'to PyTorch. structured kernels don\'t support multi-device outputs')


@pytest.mark.parametrize("one, other", [
    (ASSERT.format(shard=0, line=6878), ASSERT.format(shard=1, line=16364)),
    ("ValueError: cannot pickle <Foo object at 0x7f3a2c1d9e80>", "ValueError: cannot pickle <Foo object at 0x55d0>"),
    ("RuntimeError: storage 140234567812345 freed", "RuntimeError: storage 94123456789012 freed"),
    ("GuardOnDataDependentSymNode: Eq(u0, 1) with s0*s1", "GuardOnDataDependentSymNode: Eq(u17, 1) with s3*s12"),
    ("OSError: cannot open /tmp/pytest-of-ci/pytest-3/test_a0/x.bin", "OSError: cannot open /tmp/tmpq2k7/x.bin"),
    ('  File "/tmp/tmpab12/kernels.py", line 12', '  File "/tmp/tmpzz99/kernels.py", line 140'),
    ("error at kernels.cu:41:7 (launch)", "error at   kernels.cu:97:2 (launch)"),
    ("RuntimeError: expected size s0 + 1, got s1*2", "RuntimeError: expected size s7 + 1, got s9*2"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 "
     "GiB of which 3.06 MiB is free. Process 1234 has 79.14 GiB memory in use.",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 "
     "GiB of which 1.10 GiB is free. Process 98 has 78.00 GiB memory in use."),
    ("CompilationError: at 3:4 in triton_poi_fused_add_17: bad store",
     "CompilationError: at 3:4 in triton_poi_fused_add_3: bad store"),
    ("OSError: cannot write /tmp/tmpab12cd34", "OSError: cannot write /tmp/tmpzz9_x7q1"),
])
def test_lines_that_differ_only_in_volatile_parts_have_one_key(one, other):
    assert one != other and cause_key(one) == cause_key(other)


@pytest.mark.parametrize("one, other", [
    ("RuntimeError: shape [3, 4] is invalid for input of size 11", "RuntimeError: shape [3, 5] is invalid for "
                                                                    "input of size 11"),
    ("RuntimeError: expected dim 1", "RuntimeError: expected dim 2"),
    ("TypeError: bad float16", "TypeError: bad float32"),
    ("RuntimeError: in kernels.cpp:12", "RuntimeError: in other.cpp:12"),  # another file is another place
    ("ValueError: x", "TypeError: x"),
    # dtype spellings are not shape symbols: Triton's u8/u16, XLA's s32[3]/u8[3], outside a symbolic line
    ("CompilationError: unsupported type u8 in tl.store", "CompilationError: unsupported type u16 in tl.store"),
    ("XlaRuntimeError: expected s32[3], got u8[3]", "XlaRuntimeError: expected s32[3], got s32[3]"),
    ("RuntimeError: u8 * 2 overflows", "RuntimeError: s64 * 2 overflows"),
    # a temp folder is dropped, the file name in it is not
    ("OSError: cannot open /tmp/tmpq2k7/weights.bin", "OSError: cannot open /tmp/tmpq2k7/config.json"),
    # another inductor kernel, another cause; another GPU, another cause
    ("error in triton_poi_fused_add_17", "error in triton_poi_fused_mul_17"),
    ("CUDA out of memory. GPU 0 has 3.06 MiB free", "CUDA out of memory. GPU 1 has 3.06 MiB free"),
])
def test_lines_that_differ_in_anything_else_keep_their_own_keys(one, other):
    assert cause_key(one) != cause_key(other)


def test_hostile_lines_are_bounded_and_total():
    huge = "0x" + "f" * 10**6
    assert len(cause_key(huge)) <= MAX_KEY_CHARS
    assert cause_key("\x00\n\t x  \u202e") == "\x00 x \u202e"  # whitespace collapsed, nothing else lost
    assert cause_key("/tmp" * 50_000) == cause_key("/tmp" * 60_000)  # bounded read: no pathological backtracking
    assert cause_key("") == ""


def failure(index: int, op: str, message: str) -> dict:
    return {"item": f"forward::{op}::function::float32#{index}", "op": op, "outcome": "error", "message": message,
            "error_kind": "backend"}


def test_failure_groups_count_one_group_per_cause():
    ops = ["max", "sort", "topk", "aminmax", "cummax", "kthvalue", "mode", "median"]
    failures = [failure(i, ops[i % len(ops)], ASSERT.format(shard=i % 2, line=6000 + 37 * i)) for i in range(20)]
    failures += [failure(100 + i, "abs", f"ValueError: bad <T object at 0x{0x7f00 + i:x}>") for i in range(3)]
    failures.append(failure(200, "neg", "AssertionError: values differ"))
    groups = failure_groups(failures)["by_message"]
    assert [(g["count"], g["ops"], g["variants"]) for g in groups] == [(20, 8, 20), (3, 1, 3), (1, 1, 1)]
    assert groups[0]["message"] == ASSERT.format(shard=0, line=6000)  # the first line as printed
    assert groups[0]["first_item"] == "forward::max::function::float32#0"


def test_the_scorecard_shows_one_row_for_twenty_lines_of_one_cause(tmp_path):
    """A run folder whose 30 errors are one cause at 30 C++ lines: the scorecard's error-line table has one row."""
    folder = tmp_path / "results" / "20261207T080000Z-cafe01"
    folder.mkdir(parents=True)
    ops = [f"op{i}" for i in range(30)]
    records = [{"item": f"forward::{op}::function::float32", "property": "forward", "op": op, "variant": "function",
                "dtype": "float32", "level": 1, "outcome": "error", "reason": "", "examples": 1,
                "error": ASSERT.format(shard=i % 3, line=1000 + 11 * i), "error_kind": "backend"}
               for i, op in enumerate(ops)]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = {"schema_version": 1, "run_id": folder.name, "status": "complete", "complete": True,
               "started": "2026-12-07T08:00:00+00:00", "finished": "2026-12-07T08:01:00+00:00",
               "environment": {"device": "tiny", "hardware_key": "tiny:synthetic", "torch": "2.13.0",
                               "capabilities": ["inference"], "property_capabilities": {"forward": "inference"},
                               "claimed_dtypes": ["float32"]},
               "counts": {"error": 30}, "executed": 30, "interrupted": None, "run_kind": "run"}
    (folder / "run.json").write_text(json.dumps(summary))
    written = write_report(folder, baseline="none", formats=("md",))
    scorecard = Path(written["md"]).read_text()
    table = scorecard[scorecard.index("| items | ops | error line |"):]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == 1, table[:2000]
    assert rows[0].startswith("| 30 | 30 | RuntimeError:")
    assert "(30 lines that differ only in line numbers, addresses, ids or temp paths)" in rows[0]
