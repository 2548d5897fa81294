"""Settings and fixtures for TorchCTS's own tests: Hypothesis derandomized, no database, no deadline."""

import os
import tempfile
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

from torchcts.engine.run import HARNESS_THREADS

# No clock decides an outcome: no deadline, and no `too_slow` health check (it times the draws,
# so a busy machine would fail a test that an idle one passes).
settings.register_profile("torchcts-tests", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("torchcts-tests")

# The faulty device registers only when a test asks (--device faulty, importing it, or TORCHCTS_FAULTY=1 in a
# subprocess's environment): a developer's exported TORCHCTS_FAULTY=1 would take PrivateUse1 from the user-style
# backends (tests/backends) in every subprocess and hide a path that forgets to ask.
os.environ.pop("TORCHCTS_FAULTY", None)

# The OpInfo metadata cache (torchcts.plan.op_metadata) of the test session, never the developer's ~/.cache: one
# folder for every pytest-xdist worker and subprocess (the cache writes atomically; the first builder wins).
os.environ.setdefault("TORCHCTS_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"torchcts-test-cache-{os.getuid()}"))

# As a run does (torchcts.plugin.options): tests fork children (isolation, the guard_alloc suite's out-of-memory
# child), and an OpenMP pool that ran in the parent deadlocks a forked child's first parallel kernel.
torch.set_num_threads(HARNESS_THREADS)

# A small valid manifest; tests derive bad ones from it (`dict(BASE, key=value)`).
BASE_MANIFEST_SOURCE = '''\
import torch

BASE = {
    "manifest_version": 1,
    "device_name": "cpu",
    "supported_dtypes": {"float32": True, "int64": True, "bool": False},
    "capabilities": {"inference": True, "device_api": True},
}
'''


@pytest.fixture
def write_manifest(tmp_path: Path):
    """Write a manifest file whose body may use BASE (a valid manifest dict); returns its path."""

    def write(body: str, name: str = "manifest.py") -> Path:
        path = tmp_path / name
        path.write_text(BASE_MANIFEST_SOURCE + textwrap.dedent(body), encoding="utf-8")
        return path

    return write
