"""dtypes(manifest, op): the manifest's claims, intersected with the op's dtypes, float32 first."""

import pytest
import torch
from hypothesis import find
from hypothesis.errors import InvalidArgument

from torchcts.manifest import parse_manifest
from torchcts.plan.catalog import find_op
from torchcts.strategies import claimed_dtypes, dtypes

BASE = {"manifest_version": 1, "device_name": "cpu", "capabilities": {"inference": True}}


def manifest(**overrides):
    parsed, _ = parse_manifest(dict(BASE, **overrides))
    return parsed


def test_claims_intersect_op_support_and_put_float32_first():
    m = manifest(supported_dtypes={"bool": True, "float16": True, "float32": True, "complex64": True})
    conv = find_op("nn.functional.conv2d")  # no bool support
    assert claimed_dtypes(m, conv) == (torch.float32, torch.float16, torch.complex64)
    assert find(dtypes(m, conv), lambda d: True) is torch.float32


def test_regex_claims_follow_the_op_name():
    m = manifest(supported_dtypes={"float32": True, "bfloat16": r"^(?!linalg\.)"})
    assert torch.bfloat16 in claimed_dtypes(m, find_op("add"))
    assert torch.bfloat16 not in claimed_dtypes(m, find_op("linalg.det"))


def test_float8_needs_the_fp8_capability():
    claims = {"float32": True, "float8_e4m3fn": True}
    assert torch.float8_e4m3fn not in claimed_dtypes(manifest(supported_dtypes=claims))
    with_fp8 = manifest(supported_dtypes=claims, capabilities={"inference": True, "fp8": True})
    assert torch.float8_e4m3fn in claimed_dtypes(with_fp8)


def test_nothing_claimed_is_an_eager_error():
    with pytest.raises(InvalidArgument, match="claims no dtype"):
        dtypes(manifest(supported_dtypes={"bool": True}), find_op("nn.functional.conv2d"))
