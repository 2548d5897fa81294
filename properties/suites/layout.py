"""Layout invariance: a re-laid-out input gives the backend's answer on its contiguous twin.

Compares the device with itself, so it catches layout bugs even where a tolerance against CPU
would be loose. Cases without any re-layout say nothing and are still counted. Below 32 bits a
kernel may accumulate in another order for another layout, so the tolerance there is 4x the
dtype's.
"""

from torchcts.engine.context import contiguous_twin
from torchcts.plan.registry import OpInfoItems, register_property
from torchcts.strategies import opinfo_samples

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "a re-laid-out input gives the device's own answer on its contiguous twin"
DOCS = ("docs/strategies.md",)


@register_property("layout", capability="inference", level=2, items=OpInfoItems())  # no special values: no ieee754
def test_layout(cts):
    def check(case):
        cts.on_cpu(case.sample)  # a case the CPU rejects says nothing about the backend
        relaid = cts.on_device(case.sample)
        plain = cts.on_device(contiguous_twin(case.sample))
        widen = 4.0 if cts.dtype.is_floating_point and cts.dtype.itemsize < 4 else 1.0
        cts.assert_matches(relaid, plain, what=f"re-laid-out input ({'; '.join(case.transforms)})", widen=widen,
                           inputs=case.sample)

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level, special_values=False), check)
