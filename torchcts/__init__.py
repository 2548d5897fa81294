"""TorchCTS: a conformance test suite for PyTorch backends.

A backend's manifest claims dtypes and capabilities; TorchCTS turns each claim into property
tests against CPU oracles and writes evidence a release manager can read.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("torchcts")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
