"""Property suites run against a backend, one pytest module per area (installed as `torchcts.properties`).

Each check function `test_<property>` takes the `cts` fixture (a `torchcts.engine.context.CaseContext`)
and is registered next to its definition with `@register_property(...)` (`torchcts.plan.registry`):
its name, the capability it proves, its semantic level and its item source. The plan, show-skips
and the report read the registry; the TorchCTS pytest plugin parametrizes each check over the run
plan's items for its property. Run them with `torchcts run --device D` or
`python -m pytest --pyargs torchcts.properties --device D`.
"""
