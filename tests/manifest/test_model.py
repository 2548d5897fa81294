"""The parsed manifest: normalised claims and the planning queries built on them."""

from __future__ import annotations

import attrs
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchcts import dtypes
from torchcts.manifest import DtypeStatus, Manifest, parse_manifest, validate, vocabulary
from torchcts.manifest.problems import Severity

BASE = {
    "manifest_version": 1,
    "device_name": "cpu",
    "supported_dtypes": {"float32": True},
    "capabilities": {"inference": True},
}


def parse(**overrides) -> Manifest:
    manifest, _ = parse_manifest(dict(BASE, **overrides))
    return manifest


def warnings_of(**overrides) -> dict[str, str]:
    manifest, problems = validate(dict(BASE, **overrides))
    assert manifest is not None, [p.render() for p in problems]
    return {p.key: p.message for p in problems if p.severity is Severity.WARNING}


def test_defaults_are_filled_in():
    manifest = parse()
    assert manifest.semantic_level == 3
    assert manifest.device_count == 1
    assert manifest.max_samples == 10
    assert manifest.hypothesis.max_examples == 100
    assert manifest.hypothesis.derandomize is False
    assert manifest.backend_import is None
    assert manifest.capabilities == frozenset({"inference"})


def test_manifest_is_frozen():
    manifest = parse()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        manifest.semantic_level = 8


def test_dtype_status_covers_every_accounting_reason():
    manifest = parse(supported_dtypes={"float32": True, "bfloat16": r"^(?!linalg\.)", "float16": False})
    assert manifest.dtype_status(torch.float32, "add") is DtypeStatus.CLAIMED
    assert manifest.dtype_status(torch.bfloat16, "add") is DtypeStatus.CLAIMED
    assert manifest.dtype_status(torch.bfloat16, "linalg.svd") is DtypeStatus.REGEX_FILTERED
    assert manifest.dtype_status(torch.bfloat16, None) is DtypeStatus.REGEX_FILTERED
    assert manifest.dtype_status(torch.float16, "add") is DtypeStatus.NOT_SUPPORTED
    assert manifest.dtype_status(torch.int64, "add") is DtypeStatus.NOT_LISTED
    assert manifest.dtype_status(torch.int64) is DtypeStatus.NOT_LISTED
    assert manifest.claimed_dtypes == (torch.bfloat16, torch.float32)  # canonical order, not file order


def test_dtype_regex_matches_anywhere_in_the_op_name():
    manifest = parse(supported_dtypes={"float16": "fft"})
    assert manifest.dtype_status(torch.float16, "fft.rfft") is DtypeStatus.CLAIMED
    assert manifest.dtype_status(torch.float16, "linalg.fft_like") is DtypeStatus.CLAIMED
    assert manifest.dtype_status(torch.float16, "add") is DtypeStatus.REGEX_FILTERED


@given(st.lists(st.sampled_from(dtypes.CLAIMABLE_DTYPES), unique=True, min_size=1), st.data())
def test_any_spelling_of_a_dtype_gives_the_same_claims(chosen, data):
    spellings = {}
    for dtype in chosen:
        names = [n for n in dtypes.spellings() if dtypes.lookup(n) == dtype]
        spelling = data.draw(st.sampled_from([dtype, *names, *(f"torch.{n}" for n in names)]), label=str(dtype))
        spellings[spelling] = True
    canonical = {dtypes.canonical_name(d): True for d in chosen}
    a, b = parse(supported_dtypes=spellings), parse(supported_dtypes=canonical)
    assert a.dtype_claims == b.dtype_claims
    assert a.fingerprint() == b.fingerprint()


def test_fingerprint_changes_with_any_claim():
    base = parse().fingerprint()
    assert parse(semantic_level=4).fingerprint() != base
    assert parse(capabilities={"inference": True, "training": True}).fingerprint() != base
    assert parse(supported_dtypes={"float32": "add"}).fingerprint() != base
    assert parse().fingerprint() == base


def test_capability_and_ieee754_regexes():
    manifest = parse(capabilities={"inference": True, "training": False, "ieee754": ["^add$", "^mul"]})
    assert manifest.declares("inference")
    assert not manifest.declares("training")
    assert manifest.ieee754_claimed_for("add")
    assert manifest.ieee754_claimed_for("mul")
    assert not manifest.ieee754_claimed_for("addmm")
    assert parse(capabilities={"ieee754": True}).ieee754_claimed_for("anything")
    assert not parse().ieee754_claimed_for("add")


def test_skip_ops_list_and_dict_forms():
    assert parse(skip_ops=["add"]).skip_reason("add") == "listed in skip_ops"
    manifest = parse(skip_ops={"nn.functional.grid_sample": "kernel hangs on driver 1.2"})
    assert manifest.skip_reason("nn.functional.grid_sample") == "kernel hangs on driver 1.2"
    assert manifest.skip_reason("add") is None


def test_tolerance_override_forms_and_lookup():
    manifest = parse(
        tolerance_overrides={
            "matmul:float16": {"atol": 1e-2, "rtol": 1e-3},
            ("conv", torch.bfloat16): (1e-2, 1e-1),
            "torch.float16": {"atol": 5e-3},
        }
    )
    assert manifest.tolerance_override("matmul", torch.float16).atol == 1e-2
    conv = manifest.tolerance_override("conv", torch.bfloat16)
    assert (conv.rtol, conv.atol) == (1e-2, 1e-1)
    assert manifest.tolerance_override("elementwise", torch.float16).atol == 5e-3  # falls back to default
    assert manifest.tolerance_override("elementwise", torch.float32) is None


def test_tolerance_overrides_merge_field_by_field_the_most_specific_category_winning():
    manifest = parse(tolerance_overrides={"float32": {"rtol": 1e-2, "atol": 1e-2}, "backward:float32": {"atol": 1e-3},
                                          "matmul_backward:float32": {"atol": 1e-4}, "matmul:float32": {"rtol": 0.5}})
    gradients = manifest.tolerance_override(("matmul_backward", "backward", "matmul"), torch.float32)
    assert (gradients.rtol, gradients.atol) == (0.5, 1e-4)  # rtol: matmul over default; atol: matmul_backward
    conv = manifest.tolerance_override(("backward", "conv"), torch.float32)
    assert (conv.rtol, conv.atol) == (1e-2, 1e-3)  # rtol from default, atol from backward
    assert manifest.tolerance_override((), torch.float32).atol == 1e-2  # a scenario: default alone
    assert manifest.tolerance_override(("backward",), torch.float16) is None


@pytest.mark.parametrize("category", sorted(vocabulary.REFUSED_TOLERANCE_CATEGORIES))
def test_a_refused_tolerance_category_is_one_error_with_its_reason(category):
    _, problems = validate(dict(BASE, tolerance_overrides={f"{category}:float32": {"atol": 1e-3}}))
    (problem,) = [p for p in problems if p.severity is Severity.ERROR]
    assert f"takes no tolerance: {vocabulary.REFUSED_TOLERANCE_CATEGORIES[category]}" in problem.render()
    assert category not in vocabulary.TOLERANCE_CATEGORIES


def test_duplicate_tolerance_spellings_are_an_error():
    manifest, problems = validate(dict(BASE, tolerance_overrides={"matmul:float16": {"atol": 1}, "matmul/half": {"atol": 2}}))
    assert manifest is None
    assert any("duplicate override" in p.message for p in problems)


def test_container_formats_list_form_and_decoders():
    manifest = parse(
        supported_container_formats=["nf4", "int8_symmetric"],
        custom_container_decoders={"nf4": "vendor.quant:decode_nf4"},
        capabilities={"quantized_container_plumbing": True, "custom_quantized_decode": True},
    )
    assert manifest.container_formats == frozenset({"nf4", "int8_symmetric"})
    assert manifest.custom_container_decoders == {"nf4": "vendor.quant:decode_nf4"}


def test_custom_test_dirs_resolve_against_the_manifest_folder(tmp_path):
    (tmp_path / "extra_tests").mkdir()
    manifest, problems = parse_manifest(dict(BASE, custom_test_dirs=["extra_tests", "missing"]), tmp_path / "m.py")
    assert manifest.custom_test_dirs == ((tmp_path / "extra_tests").resolve(), (tmp_path / "missing").resolve())
    assert [p.key for p in problems] == ["custom_test_dirs[1]"]
    assert manifest.as_json()["custom_test_dirs"] == ["extra_tests", "missing"]


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"capabilities": {"fp8": True}}, "capabilities.fp8"),
        ({"capabilities": {"double_backward": True}}, "capabilities.double_backward"),
        ({"capabilities": {"training": True}, "supported_dtypes": {"int64": True}}, "capabilities.training"),
        ({"capabilities": {"multi_device": True}}, "capabilities.multi_device"),
        ({"supported_container_formats": ["nf4"]}, "supported_container_formats"),
        ({"supported_container_formats": ["nf4"], "custom_container_decoders": {"nf4": "a.b:c"}},
         "custom_container_decoders"),
        ({"hypothesis": {"derandomize": True, "seed": 3}}, "hypothesis.seed"),
        ({"hardware": {"device_memory_gb": [16, 16]}}, "hardware.device_memory_gb"),
        ({"supported_dtypes": {"float32": False}}, "supported_dtypes"),
    ],
)
def test_claims_that_cannot_all_be_tested_are_warnings(overrides, key):
    assert key in warnings_of(**overrides)


def test_consistent_claims_have_no_warnings():
    assert warnings_of(
        supported_dtypes={"float32": True, "float8_e4m3fn": True},
        capabilities={"training": True, "double_backward": True, "fp8": True, "multi_device": True},
        device_count=2,
        hardware={"device_memory_gb": [80, 80]},
    ) == {}
