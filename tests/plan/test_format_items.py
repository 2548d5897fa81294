"""Container-format scenarios: an item per format runs only where the manifest key its suite reads names the format."""

from __future__ import annotations

from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import build_plan
from torchcts.plan.registry import PropertySpec, ScenarioItems


def _check(cts):
    pass


def _spec(name, key):
    return PropertySpec(name, "quantized_container_plumbing" if key == "supported_container_formats"
                        else "custom_quantized_decode", 6,
                        ScenarioItems(("nf4", "uint4", "mxfp4"), ("uint8",), formats=key), _check)


def test_only_claimed_formats_run_and_the_rest_are_accounted_with_the_key_named(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu")
                    + 'manifest["supported_container_formats"] = {"nf4": True, "uint4": True, "mxfp4": False}\n'
                    + 'manifest["capabilities"]["custom_quantized_decode"] = True\n'
                    + 'manifest["custom_container_decoders"] = {"uint4": "vendor.quant:decode_uint4"}\n')
    manifest = load_manifest(path)[0]
    plan = build_plan(manifest, properties=[_spec("formats", "supported_container_formats"),
                                            _spec("decoders", "custom_container_decoders")])
    assert sorted((i.property, i.op) for i in plan.items) == [("decoders", "uint4"), ("formats", "nf4"),
                                                              ("formats", "uint4")]
    reasons = {(a.item.property, a.item.op): (a.outcome, a.reason) for a in plan.accounting}
    assert reasons[("formats", "mxfp4")] == (Outcome.CAPABILITY_NOT_DECLARED,
                                             "supported_container_formats does not name mxfp4")
    assert reasons[("decoders", "nf4")] == (Outcome.CAPABILITY_NOT_DECLARED,
                                            "custom_container_decoders does not name nf4")
