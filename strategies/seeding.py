"""Process-wide state that OpInfo sample functions and random ops read, fixed for a while.

OpInfo sample and error-input functions draw from torch's, Python's and NumPy's global RNGs
and hand out `torch.empty` tensors (`out=` arguments) whose contents are whatever memory
held: without care, the same op builds different samples depending on what ran before in
the process. `seeded_globals(seed)` seeds the three RNGs and, with `fill_uninitialized`,
has torch fill new tensors with a fixed value (NaN for floating dtypes, the maximum for
integers: `torch.utils.deterministic.fill_uninitialized_memory`); everything is restored on
exit. `seed_of(*parts)` derives a seed from strings, stable across processes.

Python's hash seed cannot be fixed from inside a process; sample functions that iterate a
set of strings (torch 2.13: `meshgrid`'s `{'xy', 'ij'}`) order their samples by it. The
`torchcts` command fixes it (PYTHONHASHSEED=0); see docs/strategies.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import random
import threading
import warnings
from typing import Iterator

import numpy as np
import torch
from hypothesis.control import currently_in_test_context


def seed_of(*parts: object) -> int:
    """A 64-bit seed from the text of `parts`: the same in every process and on every machine."""
    text = "|".join(str(part) for part in parts)
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)


def seed_torch(seed: int) -> None:
    """`torch.manual_seed(seed)`: every device's default generator, without its cost where an accelerator
    module torch seeds lazily (CUDA, XPU, MTIA) is not available: there torch records the caller's whole
    stack for a device that will never start, about 2 ms per call under Hypothesis (43% of a level-2
    forward item's time, profiled). Where the accelerator is available, torch's own call (lazy until it
    starts) runs as before; MPS and the PrivateUse1 device (the faulty one) are seeded as torch does."""
    seed = int(seed)
    for name in ("cuda", "xpu", "mtia"):
        module = getattr(torch, name, None)
        if module is None or module._is_in_bad_fork():
            continue
        if module.is_initialized() or module.is_available():
            module.manual_seed_all(seed)
    if not torch.mps._is_in_bad_fork():
        torch.mps.manual_seed(seed)
    torch.random._seed_custom_device(seed)
    torch.default_generator.manual_seed(seed)


_blocks = threading.local()  # how many seeded_globals blocks this thread is in
_numpy_to_hypothesis: contextvars.ContextVar[bool] = contextvars.ContextVar("numpy_to_hypothesis", default=False)


@contextlib.contextmanager
def numpy_left_to_hypothesis() -> Iterator[None]:
    """Inside this block, an outermost `seeded_globals` block in a Hypothesis test case leaves NumPy's
    generator as it left it, without saving and restoring it (~0.3 ms a block).

    Hypothesis seeds NumPy's generator for each test case and puts it back when the case ends
    (`deterministic_PRNG`); for a caller whose test cases run nothing between its blocks that draws
    from it (the engine: a case is its draw and its check, each in a block), what anyone draws is then
    unchanged. A user's own test body may draw from it: outside this block nothing changes."""
    token = _numpy_to_hypothesis.set(True)
    try:
        yield
    finally:
        _numpy_to_hypothesis.reset(token)


@contextlib.contextmanager
def seeded_globals(seed: int, *, fill_uninitialized: bool = False) -> Iterator[None]:
    """Seed torch's (CPU), Python's and NumPy's global RNGs; with `fill_uninitialized`, make
    `torch.empty` and friends return filled tensors. Restores all of it on exit.

    `fill_uninitialized` switches on `torch.use_deterministic_algorithms` (warn-only), which
    may pick other kernels: use it to build inputs on CPU, never around the device under test.
    Inside `numpy_left_to_hypothesis`, an outermost block in a Hypothesis test case leaves NumPy's
    generator to Hypothesis (see there).
    """
    depth = getattr(_blocks, "depth", 0)
    keep_numpy = depth > 0 or not _numpy_to_hypothesis.get() or not currently_in_test_context()
    python_state, numpy_state = random.getstate(), np.random.get_state() if keep_numpy else None
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=[]))
        seed_torch(seed % 2**63)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        if fill_uninitialized:
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", message=".*does not have a deterministic implementation")
        _blocks.depth = depth + 1
        try:
            if fill_uninitialized:
                torch.use_deterministic_algorithms(True, warn_only=True)
                torch.utils.deterministic.fill_uninitialized_memory = True
            yield
        finally:
            _blocks.depth = depth
            if fill_uninitialized:
                torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
                torch.utils.deterministic.fill_uninitialized_memory = fill
            random.setstate(python_state)
            if numpy_state is not None:
                np.random.set_state(numpy_state)
