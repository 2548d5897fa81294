"""Measured OpInfo reach: the packaged trace of the OpInfos' samples, how the audit credits it, and
the packaged file's checks (real op_db, real kernels)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from torchcts.coverage import mapping
from torchcts.strategies import opinfo_trace
from torchcts.coverage.inventory import load_inventory
from torchcts.plan import catalog, registry

FRESHNESS_SAMPLE = ("nn.functional.conv2d", "fft.fft", "nn.functional.avg_pool3d", "nn.functional.cross_entropy")


@pytest.mark.slow
def test_the_packaged_trace_is_fresh_for_a_sample_of_opinfos():
    """Re-traces a few OpInfos: their phases must equal the packaged ones (refresh:
    python -m torchcts.strategies.opinfo_trace --refresh). In a child process: running their kernels and
    gradients here would leave this process's thread pools in another state for later tests that fork."""
    code = ("import json, sys; from torchcts.strategies import opinfo_trace; from torchcts.plan import catalog; "
            "ops = [catalog.find_op(n) for n in sys.argv[1:]]; print(json.dumps(opinfo_trace.compute(ops)['opinfos']))")
    child = subprocess.run([sys.executable, "-c", code, *FRESHNESS_SAMPLE], capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    fresh = json.loads(child.stdout)
    packaged = opinfo_trace.packaged()["opinfos"]
    for name in FRESHNESS_SAMPLE:
        assert fresh[name] == packaged[name], name


def test_samples_reach_what_their_names_do_not_spell():
    reach = opinfo_trace.traced_reach()
    assert "aten.convolution.default" in reach["nn.functional.conv2d"]["function"]
    assert "aten.convolution_backward.default" in reach["nn.functional.conv2d"]["backward"]
    assert any(name.startswith("aten._fft_") for name in reach["fft.fft"]["function"])
    donors = opinfo_trace.packaged()["donors"]["aten.avg_pool3d_backward.default"]
    assert donors and all(phase == "backward" for _, _, _, phase in donors)


@pytest.fixture(scope="module")
def world():
    return registry.load(), load_inventory()


def test_a_trace_credits_each_property_with_its_own_phase(world):
    properties, inventory = world
    packets = mapping.Packets.of(inventory)
    op = catalog.find_op("nn.functional.conv2d")
    traced = {"function": ("aten.convolution.default",), "backward": ("aten.convolution_backward.default",),
              "out": ("aten.not_an_overload.default",)}
    reach = mapping.reach_of(op, "nn.functional.conv2d", properties, packets, traced)
    assert "aten.convolution.default" in reach.by_property["forward"]
    assert "aten.convolution_backward.default" not in reach.by_property["forward"]
    assert "aten.convolution_backward.default" in reach.by_property["backward"]
    assert {"aten.convolution.default", "aten.convolution_backward.default"} <= reach.by_trace_only
    assert not any("not_an_overload" in name for found in reach.by_property.values() for name in found)
    untraced = mapping.reach_of(op, "nn.functional.conv2d", properties, packets)
    assert not untraced.by_trace_only and "aten.convolution.default" not in untraced.overloads


def test_an_overload_named_by_some_opinfo_is_credited_by_name(world):
    properties, inventory = world
    packets = mapping.Packets.of(inventory)
    traced = {"function": ("aten.add.Tensor",)}
    reach = mapping.reach_of(catalog.find_op("add"), "add", properties, packets, traced)
    assert "aten.add.Tensor" in reach.overloads and "aten.add.Tensor" not in reach.by_trace_only


def test_the_audit_says_whether_an_opinfo_credit_is_by_name_or_by_trace(tmp_path):
    from torchcts.coverage.audit import run_audit

    result, _ = run_audit(tmp_path)
    entries = {e["overload"]: e for e in result["entries"]}
    assert entries["aten.convolution.default"]["status"] == "opinfo"
    assert entries["aten.convolution.default"]["opinfo_basis"] == "trace"
    assert "nn.functional.conv2d" in entries["aten.convolution.default"]["opinfos"]
    assert entries["aten.add.Tensor"]["opinfo_basis"] == "name"
    assert all(e["opinfo_basis"] is None for e in result["entries"] if e["status"] != "opinfo")
    assert result["metadata"]["opinfo_trace"]["torch"] == result["metadata"]["torch"]


@pytest.mark.parametrize("content, words", [
    (b"{not json", "unreadable"),
    (json.dumps({"opinfos": {"add": {"sideways": ["aten.add.Tensor"]}}, "donors": {}}).encode(), "phases"),
    (json.dumps({"opinfos": {"add": {"function": [3]}}, "donors": {}}).encode(), "`opinfos`"),
    (json.dumps({"opinfos": {}, "donors": {"aten.add.Tensor": [["add", "float32", "0", "function"]]}}).encode(),
     "`donors`"),
    (json.dumps({"opinfos": {}, "donors": {"aten.add.Tensor": [["add", "float32; rm", 0, "function"]]}}).encode(),
     "`donors`"),
])
def test_a_damaged_packaged_trace_names_the_file_and_what_is_wrong(tmp_path, monkeypatch, content, words):
    path = tmp_path / "opinfo_trace.json"
    path.write_bytes(content)
    monkeypatch.setattr(opinfo_trace, "PACKAGED", path)
    opinfo_trace.packaged.cache_clear()
    try:
        with pytest.raises(opinfo_trace.TraceFileError, match=words) as caught:
            opinfo_trace.packaged()
        assert str(path) in str(caught.value)
    finally:
        opinfo_trace.packaged.cache_clear()


def test_an_oversized_packaged_trace_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "opinfo_trace.json"
    path.write_bytes(b" " * (opinfo_trace.MAX_PACKAGED_BYTES + 10))
    monkeypatch.setattr(opinfo_trace, "PACKAGED", path)
    opinfo_trace.packaged.cache_clear()
    try:
        with pytest.raises(opinfo_trace.TraceFileError, match="over the limit"):
            opinfo_trace.packaged()
    finally:
        opinfo_trace.packaged.cache_clear()
