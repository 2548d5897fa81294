"""The backend manifest: what a backend claims, loaded from `manifest.py` and validated.

`schema` declares every key (type, default, meaning, what reads it); the model's defaults, the
validator's key checks and the key tables of docs/manifest.md come from it. A leaf of the
package: it knows torch dtypes, nothing of pytest, Hypothesis or the op database.
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
