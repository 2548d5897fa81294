"""The quantized decoders suite (`torchcts.properties.suites.quantized_decoders`): a manifest's container decoders are
loaded, called on the device and compared with the CPU codec; the reference decoders pass on CPU, the faulty
device's own pass clean, each seeded decoder bug is caught (and fires only under its condition), and every way an
entry breaks the contract is an `error` naming the format and the path."""

from __future__ import annotations

import itertools

import attrs
import pytest
import torch

from torchcts.containers import Container, decode, pack_codes
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import PlanItem
from torchcts.properties.suites.quantized_decoders import DTYPES, beyond_one_ulp, compare_decoded
from torchcts.testing.faulty.bug_model import DECODE_STEP
from torchcts.testing.faulty.suite_bugs.quantized_decoders import BUGS

BUG = {bug.name: bug for bug in BUGS}
PROP = "quantized_decoders"


def test_the_suite_is_registered_with_its_capability_one_item_per_format_and_dtype():
    registry.load()
    spec = registry.get(PROP)
    assert (spec.capability, spec.level, spec.items.scenarios, spec.items.dtypes, spec.items.formats) == (
        "custom_quantized_decode", 6, CONTAINER_FORMATS, DTYPES, "custom_container_decoders")
    assert spec.items.programs == {}  # a decoder is backend code: nothing to export


# -- the comparison ---------------------------------------------------------------------------------

def test_one_ulp_of_the_output_dtype_is_allowed_two_are_not():
    expected = torch.tensor([1.0, 1.0, 0.0, float("nan"), float("inf"), 3.0], dtype=torch.bfloat16)
    got = torch.tensor([1.0078125, 1.015625, -0.0, float("nan"), float("inf"), float("nan")], dtype=torch.bfloat16)
    assert beyond_one_ulp(got, expected, torch.bfloat16).tolist() == [False, True, False, False, False, True]
    finite_for_inf = beyond_one_ulp(torch.tensor([65504.0], dtype=torch.float16),
                                    torch.tensor([float("inf")], dtype=torch.float16), torch.float16)
    assert finite_for_inf.tolist() == [True]
    smallest = torch.tensor([2.0 ** -24], dtype=torch.float16)  # one subnormal step from 0 is one ULP there
    assert not beyond_one_ulp(smallest, torch.zeros(1, dtype=torch.float16), torch.float16).any()


def test_a_mismatch_names_the_format_index_code_and_group():
    codes = [1, 2, 3, 4, 5, 6]
    container = Container("uint4", pack_codes(codes, 4), torch.tensor([1.0, 2.0]), torch.tensor([0, 3]), (2, 3))
    expected = decode(container)
    got = expected.clone()
    got[1, 2] = 0.0
    with pytest.raises(AssertionError) as raised:
        compare_decoded(container, got, expected, torch.float32, "the case")
    message = str(raised.value)
    assert "uint4: out[1, 2] = 0.0, expected 6.0 (code 6 = 6.0, group 1: scale 2.0, zero point 3" in message, message
    assert "1 of 6 elements differ" in message and message.endswith("[the case]")


# -- whole items ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, dtype", [("nf4", "float32"), ("uint4_msb_first", "bfloat16"), ("mxfp4", "float16"),
                                        ("fp6_e2m3", "float32"), ("int8_asymmetric", "bfloat16"),
                                        ("nvfp4", "float32"), ("e8m0fnu", "float16"), ("int2_ternary", "float32")])
def test_the_reference_decoders_pass_on_cpu(run_suite, fmt, dtype):
    record = run_suite(PROP, fmt, dtype, max_examples=10)
    assert record["outcome"] is Outcome.PASSED and record["examples"] == 10, record


@pytest.mark.parametrize("fmt", CONTAINER_FORMATS)
def test_the_faulty_devices_decoders_pass_clean(run_suite, fmt):
    record = run_suite(PROP, fmt, "bfloat16", device="faulty", max_examples=5)
    assert record["outcome"] is Outcome.PASSED, record


DETECTED_IN = [  # (bug, format, dtype, outcome)
    ("decode_uint4_high_nibble_first", "uint4", "float32", Outcome.FAILED),
    ("decode_nf4_table_typo", "nf4", "float32", Outcome.FAILED),
    ("decode_mxfp4_scale_bias_128", "mxfp4", "float16", Outcome.FAILED),
    ("decode_mx8_nan_scale_as_number", "mxfp8_e4m3", "float32", Outcome.FAILED),
    ("decode_first_group_zero_point", "int4_asymmetric", "float32", Outcome.FAILED),
    ("decode_bfloat16_through_float16", "int8_symmetric", "bfloat16", Outcome.FAILED),
    ("decode_fp4_e2m1_float32_result", "fp4_e2m1", "bfloat16", Outcome.ERROR),
    ("decode_fp6_words_big_endian", "fp6_e2m3", "float32", Outcome.FAILED),
    ("decode_odd_offset_from_storage_start", "int8_symmetric", "float32", Outcome.FAILED),
]


def test_every_bug_has_a_detection_test():
    assert sorted(bug for bug, *_ in DETECTED_IN) == sorted(BUG) and len(BUG) >= 5
    assert all(bug.ops == (DECODE_STEP,) and bug.suite == PROP for bug in BUGS)


@pytest.mark.parametrize("bug, fmt, dtype, outcome", DETECTED_IN, ids=[row[0] for row in DETECTED_IN])
def test_each_seeded_bug_is_detected(run_suite, bug, fmt, dtype, outcome):
    record = run_suite(PROP, fmt, dtype, device="faulty", bugs=(bug,), max_examples=10, shrink=False)
    assert record["outcome"] is outcome, record
    assert record["error_line"].startswith(f"{fmt}: out[") if outcome is Outcome.FAILED else \
        f"custom_container_decoders['{fmt}']" in record["error_line"], record["error_line"]


def test_a_counterexample_is_stored_small_and_replays(run_suite, replay_case, tmp_path):
    bug = "decode_nf4_table_typo"
    record = run_suite(PROP, "nf4", "float32", device="faulty", bugs=(bug,), max_examples=10,
                       corpus_dir=tmp_path / "corpus")
    stored = record["counterexample"]
    assert record["outcome"] is Outcome.FAILED and stored["path"], record
    assert replay_case(stored["path"], tmp_path, bugs=(bug,))["outcome"] is Outcome.FAILED
    assert replay_case(stored["path"], tmp_path)["outcome"] is Outcome.PASSED


# -- each bug's condition ---------------------------------------------------------------------------

def _on_faulty(format_name, codes, scale, zero_point=None, shape=None, dtype=torch.float32, offset=0):
    """The step's arguments for a container on the faulty device, its packed bytes at `offset` of a buffer."""
    from torchcts.containers import get

    spec = get(format_name)
    packed = pack_codes(codes, spec.bits, spec.msb_first)
    buffer = torch.full((offset + packed.numel(),), 0xA5, dtype=torch.uint8)
    buffer[offset:] = packed
    device = torch.device("faulty")
    placed = buffer.to(device)[offset:]
    zero = None if zero_point is None else zero_point.to(device)
    return (format_name, placed, scale.to(device), zero, tuple(shape or (len(codes),)), dtype)


def _changes(bug, args) -> bool:
    """Whether `bug` fires on the step's arguments and changes the decoded result (bits, dtype or shape)."""
    from torchcts.containers.codec import decode_container, program_arguments
    from torchcts.containers import get

    format_name, packed, scale, zero_point, shape, dtype = args
    clean = decode_container(packed, scale, zero_point, shape, dtype,
                             **program_arguments(get(format_name), packed.device))
    if not bug.fires(DECODE_STEP, args, {}):
        return False
    changed = bug.perturb(DECODE_STEP, args, {}, clean).cpu()
    clean = clean.cpu()
    return changed.dtype != clean.dtype or changed.shape != clean.shape or bool(
        beyond_one_ulp(changed, clean, clean.dtype).any())


ONE = torch.ones(())
E8M0_BYTES = torch.tensor([127], dtype=torch.uint8)
CONDITIONS = {  # bug: (arguments where it shows, arguments of the closest cases where it must not)
    "decode_uint4_high_nibble_first": (
        lambda: _on_faulty("uint4", [1, 2], ONE, torch.zeros(())),
        [lambda: _on_faulty("uint4_msb_first", [1, 2], ONE, torch.zeros(())),
         lambda: _on_faulty("int4_symmetric", [1, 2], ONE)]),
    "decode_nf4_table_typo": (
        lambda: _on_faulty("nf4", [3, 12], ONE),
        [lambda: _on_faulty("nf4", [3, 11, 13], ONE), lambda: _on_faulty("af4", [12], ONE)]),
    "decode_mxfp4_scale_bias_128": (
        lambda: _on_faulty("mxfp4", [2] * 32, E8M0_BYTES),
        [lambda: _on_faulty("mxfp6_e2m3", [2] * 32, E8M0_BYTES),
         lambda: _on_faulty("nvfp4", [2] * 16, torch.tensor([0x38], dtype=torch.uint8))]),  # E4M3 0x38: 1.0
    "decode_mx8_nan_scale_as_number": (
        lambda: _on_faulty("mxint8", [3] * 32, torch.tensor([255], dtype=torch.uint8)),
        [lambda: _on_faulty("mxint8", [3] * 32, torch.tensor([254], dtype=torch.uint8)),
         lambda: _on_faulty("mxfp4", [3] * 32, torch.tensor([255], dtype=torch.uint8))]),
    "decode_first_group_zero_point": (
        lambda: _on_faulty("uint8", [5, 5], torch.ones(2), torch.tensor([1, 2]), (2, 1)),
        [lambda: _on_faulty("uint8", [5, 5], ONE, torch.tensor(1)),
         lambda: _on_faulty("int8_symmetric", [5, 5], torch.ones(2), None, (2, 1))]),
    "decode_bfloat16_through_float16": (
        lambda: _on_faulty("int8_symmetric", [100], torch.tensor(1000.0), dtype=torch.bfloat16),
        [lambda: _on_faulty("int8_symmetric", [100], torch.tensor(1000.0), dtype=torch.float32),
         lambda: _on_faulty("fp8_e5m2", [0x7B], torch.tensor(1000.0), dtype=torch.bfloat16)]),
    "decode_fp4_e2m1_float32_result": (
        lambda: _on_faulty("fp4_e2m1", [1], ONE, dtype=torch.bfloat16),
        [lambda: _on_faulty("fp4_e2m1", [1], ONE, dtype=torch.float16),
         lambda: _on_faulty("mxfp4", [1] * 32, E8M0_BYTES, dtype=torch.bfloat16)]),
    "decode_fp6_words_big_endian": (
        lambda: _on_faulty("fp6_e3m2", [1, 2, 3, 4], ONE),
        [lambda: _on_faulty("mxfp6_e3m2", [1, 2, 3] * 10 + [4, 5], E8M0_BYTES),
         lambda: _on_faulty("fp6_e3m2", [0, 0, 0, 0], ONE)]),
    "decode_odd_offset_from_storage_start": (
        lambda: _on_faulty("int8_symmetric", [1, 2], ONE, offset=3),
        [lambda: _on_faulty("int8_symmetric", [1, 2], ONE, offset=2),
         lambda: _on_faulty("int8_symmetric", [1, 2], ONE)]),
}


def test_every_bug_has_a_condition_test():
    assert sorted(CONDITIONS) == sorted(BUG)


@pytest.mark.parametrize("bug", sorted(CONDITIONS))
def test_each_bug_changes_the_result_only_under_its_condition(bug):
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    shows, quiet = CONDITIONS[bug]
    assert _changes(BUG[bug], shows()), f"{bug} should change the decode of its condition's container"
    assert [i for i, args in enumerate(quiet) if _changes(BUG[bug], args())] == [], f"{bug} fires outside its condition"


# -- hostile entries ------------------------------------------------------------------------------

_counter = itertools.count()


@pytest.fixture(scope="module")
def faulty_claims(tmp_path_factory):
    """The selftest's faulty manifest, loaded once (each test swaps its custom_container_decoders)."""
    from torchcts.testing.selftest import faulty_manifest

    path = tmp_path_factory.mktemp("manifest") / "faulty.py"
    path.write_text(faulty_manifest())
    return load_manifest(path)[0]


def _run_with_entry(manifest, tmp_path, monkeypatch, source, attribute="decode", fmt="nf4", device="faulty"):
    """The record of `fmt`'s item on `device` with a decoder module of `source` as its entry."""
    from torchcts.testing import faulty

    module = f"hostile_decoder_{next(_counter)}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = f"{module}:{attribute}"
    claims = attrs.evolve(manifest, custom_container_decoders={fmt: path})
    faulty.disable_bugs()
    settings = EngineSettings(target=Target(device), manifest=claims, level=8, max_examples=3, versions=versions(),
                              shrink=False)
    registry.load()
    return path, run_item(PlanItem(PROP, fmt, "scenario", "float32", 6), settings)


HOSTILE = {
    "does_not_import": ("import torch\nraise RuntimeError('vendor runtime not found')\n", "decode",
                        "does not import: RuntimeError: vendor runtime not found"),
    "missing_attribute": ("def decode_nf5(*args):\n    pass\n", "decode", "has no attribute 'decode'"),
    "not_callable": ("decode = 42\n", "decode", "is a int, not a callable"),
    "returns_a_list": ("def decode(packed, scale, zero_point, shape, dtype, device):\n    return [0.0]\n", "decode",
                       "returned a list, not a tensor"),
    "wrong_shape": ("import torch\ndef decode(packed, scale, zero_point, shape, dtype, device):\n"
                    "    return torch.zeros(packed.numel() * 2 + 1, dtype=dtype, device=device)\n", "decode",
                    "returned shape"),
    "wrong_dtype": ("import torch\ndef decode(packed, scale, zero_point, shape, dtype, device):\n"
                    "    return torch.zeros(shape, dtype=torch.float64, device=device)\n", "decode",
                    "returned torch.float64 when asked for torch.float32"),
    "cpu_tensor": ("import torch\ndef decode(packed, scale, zero_point, shape, dtype, device):\n"
                   "    return torch.zeros(shape, dtype=dtype)\n", "decode", "returned a tensor on cpu, not on faulty"),
    "raises": ("def decode(packed, scale, zero_point, shape, dtype, device):\n"
               "    raise ValueError('no kernel for this group size')\n", "decode",
               "raised ValueError (decoder custom_container_decoders['nf4']"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_entry_is_an_error_naming_the_format_and_path(faulty_claims, tmp_path, monkeypatch, case):
    source, attribute, said = HOSTILE[case]
    path, record = _run_with_entry(faulty_claims, tmp_path, monkeypatch, source, attribute)
    assert record["outcome"] is Outcome.ERROR and record["error_kind"] == "backend", record
    line = record["error_line"]
    assert f"custom_container_decoders['nf4'] = '{path}'" in line and said in line, line


def test_a_format_without_an_entry_is_not_declared_even_when_reached(faulty_claims):
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    claims = attrs.evolve(faulty_claims, custom_container_decoders={})
    settings = EngineSettings(target=Target("faulty"), manifest=claims, level=8, max_examples=3, versions=versions())
    registry.load()
    record = run_item(PlanItem(PROP, "nf4", "scenario", "float32", 6), settings)
    assert record["outcome"] is Outcome.CAPABILITY_NOT_DECLARED, record
