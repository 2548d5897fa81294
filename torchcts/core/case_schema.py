"""The shape of a corpus case file, as names: what the case writer (`cases/files.py`, `cases/codec.py`) writes and
what a torch-free reader (the report) reads without the case reader, which needs torch (docs/corpus.md).
"""

from __future__ import annotations

INPUT_PARTS = ("input", "args", "kwargs")  # a case's `inputs`: the sample's input, positional and keyword arguments
NAMED_INPUTS = "scenario"  # or, for a scenario case, {"scenario": {name: value}}: its parameters by name
TENSOR = "tensor"  # an encoded tensor is an object with this key (its kind: strided, sparse_coo, nested, ...)
CONTAINERS = ("tuple", "dict")  # an encoded tuple or dict: {"tuple": [...]}, {"dict": {...}}
