"""The backend manifest: what a backend claims, loaded from `manifest.py` and validated.

A leaf of the package: it knows torch dtypes, nothing of pytest, Hypothesis or the op database.
"""

from torchcts.manifest.load import environment_problems, load_manifest, read_manifest_dict
from torchcts.manifest.model import DtypeClaim, DtypeStatus, Manifest, Tolerance
from torchcts.manifest.parse import parse_manifest, validate
from torchcts.manifest.problems import ManifestError, Problem, Severity

__all__ = [
    "DtypeClaim",
    "DtypeStatus",
    "Manifest",
    "ManifestError",
    "Problem",
    "Severity",
    "Tolerance",
    "environment_problems",
    "load_manifest",
    "parse_manifest",
    "read_manifest_dict",
    "validate",
]
