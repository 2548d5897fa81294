"""The device-side unpacking suite (`torchcts.properties.suites.quantized_unpack`): the CPU codec's `decode_container`
run on the device gives CPU's bits for every format; its seeded bugs are caught and fire only under their
conditions; a device without a kernel the unpacking needs is accounted runtime_unavailable with the kernel named."""

from __future__ import annotations

import pytest
import torch

from torchcts.containers import FORMATS, pack_codes
from torchcts.containers.codec import decode_container, program_arguments
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import build_plan
from torchcts.properties.suites.quantized_unpack import UNPACK_DTYPES
from torchcts.testing.faulty import bugs as faulty_bugs
from torchcts.testing.faulty.bug_model import Bug
from torchcts.testing.faulty.suite_bugs.quantized_containers import BUGS

BUG = {bug.name: bug for bug in BUGS if bug.suite == "quantized_unpack"}
BUG_FORMAT = {"lut_gather_wraps_past_15": "fp8_e4m3fn", "rshift_by_16_keeps_low_half": "fp6_e3m2",
              "byte_widen_ignores_stride": "uint4", "broadcast_mul_zero_absorbs_nan": "mxfp4",
              "int8_to_float_reads_unsigned": "int8_asymmetric"}


def _on_faulty(*tensors):
    return [t.to("faulty") for t in tensors]


def test_the_suite_is_registered_with_one_item_per_format_and_output_dtype():
    registry.load()
    spec = registry.get("quantized_unpack")
    assert (spec.capability, spec.level) == ("quantized_container_plumbing", 6)
    assert (spec.items.scenarios, spec.items.dtypes) == (CONTAINER_FORMATS, UNPACK_DTYPES)
    assert (spec.items.comparison, spec.items.formats) == ("bits", "supported_container_formats")
    assert set(spec.items.programs.values()) == {decode_container}


def test_every_format_passes_on_cpu(run_suite):
    outcomes = {name: run_suite("quantized_unpack", name, "float32", max_examples=3)["outcome"]
                for name in CONTAINER_FORMATS}
    assert {name: o for name, o in outcomes.items() if o is not Outcome.PASSED} == {}


@pytest.mark.parametrize("name, dtype", [("int4_asymmetric_msb_first", "float32"), ("nf4", "bfloat16"),
                                         ("mxfp4", "float16"), ("fp6_e2m3", "float32"), ("e8m0fnu", "bfloat16"),
                                         ("mxint8", "float32")])
def test_a_format_passes_on_the_clean_faulty_device(run_suite, name, dtype):
    assert run_suite("quantized_unpack", name, dtype, device="faulty", max_examples=10)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(BUG))
def test_each_seeded_bug_is_detected(run_suite, bug):
    record = run_suite("quantized_unpack", BUG_FORMAT[bug], "float32", device="faulty", bugs=(bug,), max_examples=20,
                       shrink=False)
    assert record["outcome"] in (Outcome.FAILED, Outcome.ERROR), record


def _raise_bad_gather(func, args, kwargs, value):
    raise RuntimeError("the gather kernel failed")


def test_a_missing_unpacking_kernel_makes_the_item_runtime_unavailable_naming_it(run_suite, monkeypatch):
    """A device without a gather kernel: every case is unavailable, the item says which kernel (never a pass)."""
    no_gather = Bug("test_no_gather_kernel", ("aten.index.Tensor",), "always", "no kernel for index.Tensor",
                    lambda func, args, kwargs: True, faulty_bugs._no_kernel, kind="missing-kernel",
                    suite="quantized_unpack")
    monkeypatch.setitem(faulty_bugs.BUGS, no_gather.name, no_gather)
    record = run_suite("quantized_unpack", "nf4", "float32", device="faulty", bugs=(no_gather.name,), max_examples=4)
    assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE, record
    assert "missing kernel aten::index.Tensor" in record["reason"], record["reason"]
    other_error = Bug("test_gather_raises", ("aten.index.Tensor",), "always", "raises a plain RuntimeError",
                      lambda func, args, kwargs: True, _raise_bad_gather, kind="wrong-error", suite="quantized_unpack")
    monkeypatch.setitem(faulty_bugs.BUGS, other_error.name, other_error)
    record = run_suite("quantized_unpack", "nf4", "float32", device="faulty", bugs=(other_error.name,),
                       max_examples=4, shrink=False)
    assert record["outcome"] is Outcome.ERROR, record  # anything but a missing kernel stays an error


def test_an_unclaimed_format_is_accounted_with_the_manifest_key_named(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu")
                    + 'manifest["supported_container_formats"] = {"uint4_msb_first": True, "nf4": False}\n')
    registry.load()
    plan = build_plan(load_manifest(path)[0], properties=[registry.get("quantized_unpack")])
    assert sorted((i.op, i.dtype) for i in plan.items) == [("uint4_msb_first", d) for d in sorted(UNPACK_DTYPES)]
    reasons = {(a.item.op, a.item.dtype): (a.outcome, a.reason) for a in plan.accounting}
    assert reasons[("nf4", "float16")] == (Outcome.CAPABILITY_NOT_DECLARED,
                                           "supported_container_formats does not name nf4")


# -- each bug fires under its condition only (real device ops with the bug on) ---------------------------

def test_large_table_gathers_wrap_at_16(faulty_bug):
    faulty_bug("lut_gather_wraps_past_15")
    table, small = torch.arange(64.0), torch.arange(16.0)
    indices = torch.tensor([3, 17, 40])
    device_table, device_small, device_indices = _on_faulty(table, small, indices)
    assert device_table[device_indices].cpu().tolist() == [3.0, 1.0, 8.0]
    assert device_table[device_indices[:1]].cpu().tolist() == [3.0]  # every index below 16
    assert device_small[device_indices[:1] + 12].cpu().tolist() == [15.0]  # a 16-entry table


def test_long_right_shifts_keep_only_the_low_half(faulty_bug):
    faulty_bug("rshift_by_16_keeps_low_half")
    word, = _on_faulty(torch.tensor([0x00FC0000 | 0x3F], dtype=torch.int32))
    amounts, short = _on_faulty(torch.tensor([0, 18], dtype=torch.int32), torch.tensor([0, 12], dtype=torch.int32))
    assert (word >> amounts).cpu().tolist() == [0x00FC003F, 0]  # 0xFC0000 >> 18 is 63 on CPU
    assert (word >> short).cpu().tolist() == [0x00FC003F, 0x00FC003F >> 12]


def test_strided_byte_widening_reads_consecutive_bytes(faulty_bug):
    faulty_bug("byte_widen_ignores_stride")
    data, = _on_faulty(torch.arange(8, dtype=torch.uint8))
    assert data[1::2].to(torch.int32).cpu().tolist() == [1, 2, 3, 4]
    assert data[1:5].to(torch.int32).cpu().tolist() == [1, 2, 3, 4]  # contiguous: right
    assert data[1::2].to(torch.float32).cpu().tolist() == [1.0, 3.0, 5.0, 7.0]  # not an integer widening


def test_broadcast_products_of_zero_and_nan_fold_to_zero(faulty_bug):
    faulty_bug("broadcast_mul_zero_absorbs_nan")
    nan, inf = float("nan"), float("inf")
    values, nan_scale, inf_scale, finite_scale, same = _on_faulty(
        torch.tensor([[0.0, 2.0]]), torch.tensor([[nan]]), torch.tensor([[inf]]), torch.tensor([[0.5]]),
        torch.tensor([[nan, nan]]))
    product = (values * nan_scale).cpu()
    assert product[0, 0].item() == 0.0 and product[0, 1].isnan(), product
    assert (values * inf_scale).cpu().tolist() == [[0.0, inf]]
    assert (values * finite_scale).cpu().tolist() == [[0.0, 1.0]]
    assert (values * same).cpu().isnan().all()  # same shapes: no broadcast, NaN kept


def test_negative_int8_converts_as_unsigned(faulty_bug):
    faulty_bug("int8_to_float_reads_unsigned")
    negative, positive = _on_faulty(torch.tensor([-3, 2], dtype=torch.int8), torch.tensor([3, 2], dtype=torch.int8))
    assert negative.to(torch.float32).cpu().tolist() == [253.0, 2.0]
    assert positive.to(torch.float32).cpu().tolist() == [3.0, 2.0]
    assert negative.to(torch.int32).cpu().tolist() == [-3, 2]  # not a float conversion


def test_the_codec_decodes_a_strided_6_bit_word_on_the_device_as_on_cpu():
    """The program itself: the four codes of one 6-bit word in every other byte of a buffer, on faulty and CPU."""
    spec = FORMATS["fp6_e3m2"]
    packed = pack_codes([1, 2, 33, 63], 6)
    buffer = torch.full((7,), 0xA5, dtype=torch.uint8)
    buffer[1::2] = packed
    arguments = program_arguments(spec)
    expected = decode_container(buffer[1::2], torch.tensor(2.0), None, (4,), torch.float32, **arguments)
    assert expected.tolist() == [2 * spec.table[c] for c in (1, 2, 33, 63)]
    placed, = _on_faulty(buffer)
    on_device = decode_container(placed[1::2], torch.tensor(2.0, device="faulty"), None, (4,), torch.float32,
                                 **program_arguments(spec, "faulty"))
    assert on_device.cpu().tolist() == expected.tolist()
