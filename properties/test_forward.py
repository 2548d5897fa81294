"""OpInfo forward: the backend's outputs equal the CPU oracle's on drawn cases (dtype, shape, values)."""

from torchcts.strategies import opinfo_samples


def test_forward(cts):
    def check(case):
        expected = cts.on_cpu(case.sample)
        actual = cts.on_device(case.sample)
        cts.assert_matches(actual, expected)

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level), check)
