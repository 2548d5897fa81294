"""The faulty device as a backend that cannot make a generator, for tests of what a claim then gives.

Where the device's compiled part loaded, its generator factory is made to raise what torch raises for a Python
backend without generator hooks; where it did not, torch's own refusal is already in place.
"""

from __future__ import annotations

import contextlib

REFUSAL = "You should register `PrivateUse1HooksInterface` and implement `getNewGenerator` (refused for the test)"


@contextlib.contextmanager
def refusing_generators():
    from torchcts.testing import native_build
    from torchcts.testing.faulty import generators  # registers the device

    if not generators.available():
        yield
        return

    def refuse(name, args, value):
        if name == "faulty.new_generator":
            raise NotImplementedError(REFUSAL)
        return generators.answer_step(name, args, value)

    module = native_build.load().module
    module.install(refuse)
    try:
        yield
    finally:
        module.install(generators.answer_step)
