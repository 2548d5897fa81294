"""OpInfo forward: the backend's outputs equal the CPU oracle's on drawn cases.

Dtype, shape and values always; the memory order of the output too where CPU defines it
(elementwise ops keep their input's memory format). Then the ULP rule (docs/oracle.md): where CPU
rounds correctly (add, mul, div, sqrt, casts, min/max, copies) the device may not be less accurate
than CPU against a float64 reference; for other ops both errors go to the record.
"""

from torchcts.engine.oracle import strides_defined
from torchcts.plan.registry import OpInfoItems, register_property
from torchcts.strategies import opinfo_samples

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "values, dtype, shape (strides for elementwise ops) vs CPU"
DOCS = ("docs/strategies.md", "docs/oracle.md",)


@register_property("forward", capability="inference", level=1, items=OpInfoItems(), also_proves=("ieee754",))
def test_forward(cts):
    def check(case):
        expected = cts.on_cpu(case.sample)
        actual = cts.on_device(case.sample)
        cts.assert_matches(actual, expected, strides="significant" if strides_defined(cts.op.name) else False,
                           inputs=case.sample)
        cts.assert_ulp(actual, expected, case.sample)  # correctly rounded ops: no less accurate than CPU

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level), check)
