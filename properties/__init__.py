"""Property suites run against a backend, one pytest module per area (installed as `torchcts.properties`).

Each test function `test_<property>` takes the `cts` fixture (a `torchcts.engine.context.CaseContext`)
and is parametrized by the TorchCTS pytest plugin over the run plan's items for that property.
Run them with `torchcts run --device D` or `python -m pytest --pyargs torchcts.properties --device D`.
"""
