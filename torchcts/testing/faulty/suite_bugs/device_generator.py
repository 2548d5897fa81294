"""Seeded bugs for the device_generator suite (properties/suites/device_generator.py): none can exist.

The faulty device has no generator objects: torch (2.13) gives a Python backend no hook for
`torch.Generator(device="faulty")`, which raises NotImplementedError. A manifest that claims
`device_generator` for the faulty device therefore gets an `error` on every item of the suite (the
selftest manifest declares the capability False). The device's default generators, which do exist,
carry the rng suite's bugs (suite_bugs/rng.py).
"""

from __future__ import annotations

BUGS: tuple = ()
