"""Fixtures shared by the engine's tests: `scenario` registers throwaway scenario properties."""

from __future__ import annotations

import pytest

from torchcts.plan import registry
from torchcts.plan.build import PlanItem


@pytest.fixture
def scenario():
    """Register scenario properties for one test (and forget them after it)."""
    names = []

    def register(name, check):
        names.append(name)
        registry.register_property(name, capability="inference", level=1,
                                   items=registry.ScenarioItems(("probe",), ("float32",)))(check)
        return PlanItem(name, "probe", "scenario", "float32", 1)

    yield register
    for name in names:
        registry._REGISTRY.pop(name, None)
