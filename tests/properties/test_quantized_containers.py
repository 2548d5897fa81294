"""The quantized container transfer suite (`torchcts.properties.suites.quantized_containers`): packed bytes, scales
and zero points of every format move between host and device bit for bit; its seeded bugs are caught and fire
only under their conditions; formats a manifest does not claim are accounted."""

from __future__ import annotations

import pytest
import torch

from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import build_plan
from torchcts.properties.suites.quantized_containers import container_transfer
from torchcts.testing.faulty.suite_bugs.quantized_containers import BUGS

BUG = {bug.name: bug for bug in BUGS if bug.suite == "quantized_containers"}
# a format whose items each bug's condition reaches (the E8M0 / float8 scale bugs need an MX or NVFP4 format)
BUG_FORMAT = {"h2d_odd_offset_reads_aligned_below": "uint4", "pitched_copy_ignores_row_padding": "int8_asymmetric",
              "e8m0_copy_saturates_nan": "mxfp8_e4m3", "column_major_clone_writes_row_major": "uint8",
              "small_non_blocking_readback_stale": "nf4", "float8_view_as_bytes_converts": "nvfp4"}


def test_the_suite_is_registered_with_one_uint8_item_per_container_format():
    registry.load()
    spec = registry.get("quantized_containers")
    assert (spec.capability, spec.level) == ("quantized_container_plumbing", 6)
    assert (spec.items.scenarios, spec.items.dtypes) == (CONTAINER_FORMATS, ("uint8",))
    assert (spec.items.comparison, spec.items.formats) == ("bits", "supported_container_formats")
    assert set(spec.items.programs.values()) == {container_transfer}


def test_the_program_moves_a_window_its_scale_and_zero_point_and_fills_around_them():
    buffer = torch.arange(10, dtype=torch.uint8)
    scale = torch.tensor([127, 255], dtype=torch.uint8).view(torch.float8_e8m0fnu)
    moved = container_transfer(buffer[3:7], scale, torch.tensor(-3, dtype=torch.int8), False)
    packed = moved["packed"]
    for name in ("to_host", "into_host", "from_host", "into_device", "clone", "copy_"):
        assert packed[name].tolist() == [3, 4, 5, 6], (name, packed[name])
    assert packed["host_buffer"].tolist() == [0x5A] * 3 + [3, 4, 5, 6], packed["host_buffer"]
    assert packed["reinterpreted"].dtype == torch.int8 and packed["dtype"] == "torch.uint8"
    assert moved["scale"]["to_host"].view(torch.uint8).tolist() == [127, 255]  # the NaN scale byte kept
    assert moved["scale"]["reinterpreted"].dtype == torch.int8
    assert (moved["zero_point"]["to_host"].item(), moved["zero_point"]["reinterpreted"].item()) == (-3, 253)


def test_every_format_passes_on_cpu(run_suite):
    outcomes = {name: run_suite("quantized_containers", name, "uint8", max_examples=3)["outcome"]
                for name in CONTAINER_FORMATS}
    assert {name: o for name, o in outcomes.items() if o is not Outcome.PASSED} == {}


@pytest.mark.parametrize("name", ["int2_ternary", "uint4_msb_first", "fp6_e2m3", "mxfp4", "nvfp4", "e8m0fnu"])
def test_a_format_passes_on_the_clean_faulty_device(run_suite, name):
    assert run_suite("quantized_containers", name, "uint8", device="faulty", max_examples=10)["outcome"] \
        is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(BUG))
def test_each_seeded_bug_is_detected(run_suite, bug):
    record = run_suite("quantized_containers", BUG_FORMAT[bug], "uint8", device="faulty", bugs=(bug,),
                       max_examples=20, shrink=False)
    assert record["outcome"] in (Outcome.FAILED, Outcome.ERROR), record


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_counterexample_with_float8_scales_is_stored_and_replays(run_suite, replay_case, tmp_path):
    """A shrunk case holding a float8_e8m0fnu scale (and no zero point) goes to the corpus and replays failing with
    the bug on, passing without it."""
    bug = "e8m0_copy_saturates_nan"
    record = run_suite("quantized_containers", "mxfp8_e4m3", "uint8", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED and record["counterexample"]["path"], record
    path = record["counterexample"]["path"]
    assert replay_case(path, tmp_path, bugs=(bug,))["outcome"] is Outcome.FAILED
    assert replay_case(path, tmp_path)["outcome"] is Outcome.PASSED


def test_an_unclaimed_format_is_accounted_with_the_manifest_key_named(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu")
                    + 'manifest["supported_container_formats"] = {"nf4": True}\n')
    registry.load()
    plan = build_plan(load_manifest(path)[0], properties=[registry.get("quantized_containers")])
    assert [(i.op, i.dtype) for i in plan.items] == [("nf4", "uint8")]
    reasons = {a.item.op: (a.outcome, a.reason) for a in plan.accounting}
    assert set(reasons) == set(CONTAINER_FORMATS) - {"nf4"}
    assert reasons["mxfp4"] == (Outcome.CAPABILITY_NOT_DECLARED, "supported_container_formats does not name mxfp4")


# -- each bug fires under its condition only (real device ops with the bug on) ---------------------------

def test_odd_offset_uploads_read_the_byte_below(faulty_bug):
    faulty_bug("h2d_odd_offset_reads_aligned_below")
    buffer = torch.arange(10, dtype=torch.uint8)
    assert buffer[3:6].to("faulty").cpu().tolist() == [2, 3, 4]  # odd offset, host -> device
    assert buffer[2:5].to("faulty").cpu().tolist() == [2, 3, 4]  # even offset
    assert buffer.to("faulty")[3:6].cpu().tolist() == [3, 4, 5]  # device -> host
    assert buffer.float()[3:6].to("faulty").cpu().tolist() == [3.0, 4.0, 5.0]  # not bytes


def test_pitched_readbacks_ignore_the_padding(faulty_bug):
    faulty_bug("pitched_copy_ignores_row_padding")
    padded = torch.arange(12, dtype=torch.uint8).to("faulty").as_strided((2, 3), (5, 1), 1)
    assert padded.cpu().tolist() == [[1, 2, 3], [4, 5, 6]]  # rows read as if the pitch were 3
    assert padded.cpu().tolist() != [[1, 2, 3], [6, 7, 8]]
    dense = torch.arange(12, dtype=torch.uint8).to("faulty").as_strided((2, 3), (3, 1), 1)
    one_row = torch.arange(12, dtype=torch.uint8).to("faulty").as_strided((1, 3), (5, 1), 1)
    assert (dense.cpu().tolist(), one_row.cpu().tolist()) == ([[1, 2, 3], [4, 5, 6]], [[1, 2, 3]])


def test_e8m0_copies_saturate_only_the_nan_byte(faulty_bug):
    faulty_bug("e8m0_copy_saturates_nan")
    with_nan = torch.tensor([127, 255], dtype=torch.uint8).view(torch.float8_e8m0fnu)
    assert with_nan.to("faulty").cpu().view(torch.uint8).tolist() == [127, 254]
    finite = torch.tensor([127, 254], dtype=torch.uint8)
    assert finite.view(torch.float8_e8m0fnu).to("faulty").cpu().view(torch.uint8).tolist() == [127, 254]
    assert torch.tensor([1, 255], dtype=torch.uint8).to("faulty").cpu().tolist() == [1, 255]  # bytes, not e8m0


def test_column_major_byte_clones_read_transposed(faulty_bug):
    faulty_bug("column_major_clone_writes_row_major")
    column_major = torch.arange(6, dtype=torch.uint8).to("faulty").as_strided((2, 3), (1, 2))
    expected = column_major.cpu().tolist()
    assert column_major.clone().cpu().tolist() != expected
    assert column_major.clone(memory_format=torch.contiguous_format).cpu().tolist() == expected
    row_major = torch.arange(6, dtype=torch.uint8).to("faulty").view(2, 3)
    assert row_major.clone().cpu().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_small_non_blocking_readbacks_read_zeros(faulty_bug):
    faulty_bug("small_non_blocking_readback_stale")
    scale = torch.tensor(0.5).to("faulty")
    assert scale.to("cpu", non_blocking=True).item() == 0.0
    assert scale.to("cpu").item() == 0.5  # blocking
    assert torch.ones(2, dtype=torch.float32).to("faulty").to("cpu", non_blocking=True).tolist() == [1.0, 1.0]


def test_float8_byte_views_convert_the_values(faulty_bug):
    faulty_bug("float8_view_as_bytes_converts")
    scale = torch.tensor([127, 130], dtype=torch.uint8).view(torch.float8_e8m0fnu).to("faulty")
    assert scale.view(torch.uint8).cpu().tolist() == [1, 8]  # 2**0, 2**3 converted, not the bytes 127, 130
    assert torch.tensor([1.0]).to("faulty").view(torch.int32).cpu().item() == 0x3F800000
    assert torch.tensor([3], dtype=torch.uint8).to("faulty").view(torch.int8).cpu().item() == 3
