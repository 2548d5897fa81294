"""`torchcts check-manifest` on bad manifests: exit 2, the offending key named, a suggestion where one fits."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli

# (id, manifest body using BASE, key path the message must name, extra text the message must hold)
BAD_MANIFESTS = [
    ("unknown-top-level-key", 'manifest = dict(BASE, reference_device="cpu")', "reference_device", "unknown top-level key"),
    ("misspelt-top-level-key", "manifest = dict(BASE, semantic_levle=2)", "semantic_levle", "did you mean 'semantic_level'"),
    ("alias-top-level-key", 'manifest = dict(BASE, dtypes={"float32": True})', "dtypes", "did you mean 'supported_dtypes'"),
    ("missing-required-key", 'manifest = {k: v for k, v in BASE.items() if k != "manifest_version"}', "manifest_version", "missing required key"),
    ("wrong-manifest-version", "manifest = dict(BASE, manifest_version=2)", "manifest_version", "got 2"),
    ("device-name-not-str", "manifest = dict(BASE, device_name=3)", "device_name", "got 3"),
    ("device-name-with-space", 'manifest = dict(BASE, device_name="my gpu")', "device_name", "'my gpu'"),
    ("backend-import-not-module", 'manifest = dict(BASE, backend_import="my-backend")', "backend_import", "dotted module name"),
    ("dtypes-not-dict", 'manifest = dict(BASE, supported_dtypes=["float32"])', "supported_dtypes", "must be a dict"),
    ("unsupported-dtype-name", 'manifest = dict(BASE, supported_dtypes={"float31": True})', "supported_dtypes.float31", "did you mean 'float32'"),
    ("quantized-dtype-key", "manifest = dict(BASE, supported_dtypes={torch.qint8: True})", "supported_dtypes.qint8", "cannot be claimed"),
    ("sub-byte-dtype-key", 'manifest = dict(BASE, supported_dtypes={"torch.uint4": True})', "supported_dtypes['torch.uint4']", "cannot be claimed"),
    ("dtype-key-not-a-dtype", "manifest = dict(BASE, supported_dtypes={32: True})", "supported_dtypes[32]", "unsupported dtype"),
    ("duplicate-dtype", 'manifest = dict(BASE, supported_dtypes={"float32": True, torch.float: False})', "supported_dtypes.float32", "listed twice"),
    ("dtype-value-int", 'manifest = dict(BASE, supported_dtypes={"float16": 1})', "supported_dtypes.float16", "True, False or a regex"),
    ("dtype-regex-invalid", 'manifest = dict(BASE, supported_dtypes={"bfloat16": "linalg.(["})', "supported_dtypes.bfloat16", "invalid regex"),
    ("dtype-regex-empty", 'manifest = dict(BASE, supported_dtypes={"bfloat16": ""})', "supported_dtypes.bfloat16", "empty regex"),
    ("stale-capability-generator", 'manifest = dict(BASE, capabilities={"generator": True})', "capabilities.generator", "did you mean 'device_generator'"),
    ("stale-capability-quantized", 'manifest = dict(BASE, capabilities={"quantized": True})', "capabilities.quantized", "'quantized_container_plumbing', 'native_quantization', 'custom_quantized_decode'"),
    ("unknown-capability", 'manifest = dict(BASE, capabilities={"trainng": True})', "capabilities.trainng", "did you mean 'training'"),
    ("capability-not-bool", 'manifest = dict(BASE, capabilities={"training": "yes"})', "capabilities.training", "must be a bool"),
    ("capabilities-not-dict", 'manifest = dict(BASE, capabilities=["inference"])', "capabilities", "must be a dict"),
    ("ieee754-bad-regex", 'manifest = dict(BASE, capabilities={"ieee754": ["add", "(("]})', "capabilities.ieee754[1]", "invalid regex"),
    ("level-too-high", "manifest = dict(BASE, semantic_level=9)", "semantic_level", "from 1 to 8"),
    ("level-zero", "manifest = dict(BASE, semantic_level=0)", "semantic_level", "got 0"),
    ("level-bool", "manifest = dict(BASE, semantic_level=True)", "semantic_level", "got True"),
    ("level-string", 'manifest = dict(BASE, semantic_level="3")', "semantic_level", "got '3'"),
    ("device-count-zero", "manifest = dict(BASE, device_count=0)", "device_count", ">= 1"),
    ("max-samples-negative", "manifest = dict(BASE, max_samples=-1)", "max_samples", ">= 0"),
    ("skip-ops-string", 'manifest = dict(BASE, skip_ops="add")', "skip_ops", "list of op names"),
    ("skip-ops-non-string-entry", 'manifest = dict(BASE, skip_ops=["add", 7])', "skip_ops[1]", "non-empty string"),
    ("skip-ops-empty-reason", 'manifest = dict(BASE, skip_ops={"add": ""})', "skip_ops.add", "reason"),
    ("tolerance-unknown-dtype", 'manifest = dict(BASE, tolerance_overrides={"matmul:float31": {"atol": 1e-3}})', "tolerance_overrides['matmul:float31']", "did you mean 'float32'"),
    ("tolerance-unknown-category", 'manifest = dict(BASE, tolerance_overrides={"matmull:float16": {"atol": 1e-3}})', "tolerance_overrides['matmull:float16']", "did you mean 'matmul'"),
    ("tolerance-refused-category", 'manifest = dict(BASE, tolerance_overrides={"copy:float32": {"atol": 1e-3}})', "tolerance_overrides['copy:float32']", "category 'copy' takes no tolerance: copies and transfers are compared bit for bit"),
    ("tolerance-negative-atol", 'manifest = dict(BASE, tolerance_overrides={"matmul:float16": {"atol": -1e-3}})', "tolerance_overrides['matmul:float16'].atol", "must not be negative"),
    ("tolerance-non-numeric-rtol", 'manifest = dict(BASE, tolerance_overrides={"float16": {"rtol": "1e-3"}})', "tolerance_overrides.float16.rtol", "finite number"),
    ("tolerance-nan", 'manifest = dict(BASE, tolerance_overrides={"float16": {"rtol": float("nan")}})', "tolerance_overrides.float16.rtol", "finite number"),
    ("tolerance-unknown-key", 'manifest = dict(BASE, tolerance_overrides={"conv/bfloat16": {"abs_tol": 1e-2}})', "tolerance_overrides['conv/bfloat16'].abs_tol", "did you mean 'atol'"),
    ("tolerance-not-dict", 'manifest = dict(BASE, tolerance_overrides={"float16": 0.01})', "tolerance_overrides.float16", "atol"),
    ("container-format-unknown", 'manifest = dict(BASE, supported_container_formats={"nf5": True})', "supported_container_formats.nf5", "did you mean 'nf4'"),
    ("container-format-not-bool", 'manifest = dict(BASE, supported_container_formats={"nf4": "yes"})', "supported_container_formats.nf4", "must be a bool"),
    ("decoder-path-malformed", 'manifest = dict(BASE, supported_container_formats={"nf4": True}, custom_container_decoders={"nf4": "my_backend.decode"})', "custom_container_decoders.nf4", "'module:function'"),
    ("autocast-policy-not-dict", 'manifest = dict(BASE, autocast_policy=["softmax"])', "autocast_policy", "must be a dict"),
    ("autocast-policy-unknown-op", 'manifest = dict(BASE, autocast_policy={"sofmax": "float32"})', "autocast_policy.sofmax", "did you mean 'softmax'"),
    ("autocast-policy-bad-class", 'manifest = dict(BASE, autocast_policy={"softmax": ["float32"]})', "autocast_policy.softmax", "'lower_precision', 'float32', 'promote', 'unchanged'"),
    ("decoder-format-not-claimed", 'manifest = dict(BASE, custom_container_decoders={"nf4": "pkg.mod:decode"})', "custom_container_decoders.nf4", "does not claim"),
    ("custom-decode-without-decoders", 'manifest = dict(BASE, capabilities={"custom_quantized_decode": True})', "capabilities.custom_quantized_decode", "names no decoder"),
    ("hardware-unknown-key", 'manifest = dict(BASE, hardware={"device_memory": 16})', "hardware.device_memory", "did you mean 'device_memory_gb'"),
    ("hardware-memory-model", 'manifest = dict(BASE, hardware={"memory_model": "shared"})', "hardware.memory_model", "'discrete', 'unified'"),
    ("hardware-memory-empty-list", 'manifest = dict(BASE, hardware={"device_memory_gb": []})', "hardware.device_memory_gb", "one per device"),
    ("cleanup-threshold-out-of-range", 'manifest = dict(BASE, resource_limits={"cleanup_threshold_pct": 150})', "resource_limits.cleanup_threshold_pct", "1 to 100"),
    ("memory-limit-negative", 'manifest = dict(BASE, resource_limits={"max_device_memory_mb": -5})', "resource_limits.max_device_memory_mb", "positive number"),
    ("hypothesis-max-examples-zero", 'manifest = dict(BASE, hypothesis={"max_examples": 0})', "hypothesis.max_examples", "positive integer"),
    ("hypothesis-unknown-setting", 'manifest = dict(BASE, hypothesis={"max_example": 10})', "hypothesis.max_example", "did you mean 'max_examples'"),
    ("hypothesis-deadline-string", 'manifest = dict(BASE, hypothesis={"deadline": "200ms"})', "hypothesis.deadline", "milliseconds"),
    ("hypothesis-derandomize-string", 'manifest = dict(BASE, hypothesis={"derandomize": "yes"})', "hypothesis.derandomize", "a bool"),
    ("custom-test-dirs-string", 'manifest = dict(BASE, custom_test_dirs="tests")', "custom_test_dirs", "list of folder paths"),
    ("manifest-not-dict", 'manifest = list(BASE.items())', "manifest", "must be a dict"),
]


@pytest.mark.parametrize("body, key, text", [case[1:] for case in BAD_MANIFESTS], ids=[case[0] for case in BAD_MANIFESTS])
def test_bad_manifest_is_rejected_naming_the_key(write_manifest, body, key, text):
    path = write_manifest(body)
    result = CliRunner().invoke(cli, ["check-manifest", "--manifest", str(path)])
    assert result.exit_code == 2, result.output
    assert f"error: {key}: " in result.stderr
    assert text in result.stderr
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_manifest_table_is_large_and_distinct():
    assert len(BAD_MANIFESTS) >= 25
    assert len({body for _, body, _, _ in BAD_MANIFESTS}) == len(BAD_MANIFESTS)


def test_every_problem_is_listed_at_once(write_manifest):
    path = write_manifest(
        """
        manifest = dict(
            BASE,
            semantic_level=12,
            capabilities={"generator": True, "trainng": True},
            supported_dtypes={"float31": True, "bfloat16": "(("},
            colour="blue",
        )
        """
    )
    result = CliRunner().invoke(cli, ["check-manifest", "--manifest", str(path)])
    assert result.exit_code == 2
    assert "6 problems" in result.stderr
    for key in ("semantic_level", "capabilities.generator", "capabilities.trainng", "supported_dtypes.float31",
                "supported_dtypes.bfloat16", "colour"):
        assert f"error: {key}: " in result.stderr
