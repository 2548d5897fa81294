"""The property suites, one module per area (`torchcts.properties.suites.<area>`).

Every module here is a suite: its check functions are registered with `@register_property`
(`torchcts.plan.registry`), which imports them all (`registry.load`); the TorchCTS pytest plugin
collects them through the registry's package, not by pytest's `test_*.py` naming. Helpers that
several suites share (programs, case tables, statistics) live one level up, in `torchcts.properties`.
"""
