"""Hypothesis strategies for PyTorch backends (installed as `torchcts.strategies`).

Dtypes from a manifest, shapes, values with special values, dense tensors and their memory
layouts, sparse and nested forms, and cases drawn from OpInfo sample inputs, plus exact device
placement and case fingerprints. docs/strategies.md documents the API; each strategy says what
it generates and how it shrinks. Usable on its own by a backend team writing its own properties.
"""

from torchcts.strategies.dtype_claims import claimed_dtypes, dtypes
from torchcts.strategies.fixed_constants import fix_local_constants
from torchcts.strategies.fingerprint import fingerprint, same_bits
from torchcts.strategies.layouts import describe_layout, is_overlapping, relayouts
from torchcts.strategies.nested import NESTED_LAYOUTS, nested_components, nested_forms, nested_tensors
from torchcts.strategies.placement import Placement, copy_exact, place
from torchcts.strategies.probes import cpu_probes
from torchcts.strategies.opinfo_pool import sample_pool
from torchcts.strategies.samples import Case, NoSamples, opinfo_samples
from torchcts.strategies.seeding import seeded_globals
from torchcts.strategies.sparse import SPARSE_LAYOUTS, sparse_forms, sparse_tensors
from torchcts.strategies.shapes import TILE_BOUNDARY_SIZES, broadcastable_shapes, mutually_broadcastable_shapes, shapes, shapes_for
from torchcts.strategies.tensors import tensors
from torchcts.strategies.variants import call_variant
from torchcts.strategies.values import special_values, values

fix_local_constants()  # before any draw: cases must not depend on which modules are imported

__all__ = [
    "NESTED_LAYOUTS",
    "SPARSE_LAYOUTS",
    "TILE_BOUNDARY_SIZES",
    "Case",
    "NoSamples",
    "Placement",
    "broadcastable_shapes",
    "call_variant",
    "claimed_dtypes",
    "copy_exact",
    "cpu_probes",
    "describe_layout",
    "dtypes",
    "fingerprint",
    "is_overlapping",
    "mutually_broadcastable_shapes",
    "nested_components",
    "nested_forms",
    "nested_tensors",
    "opinfo_samples",
    "place",
    "relayouts",
    "same_bits",
    "sample_pool",
    "seeded_globals",
    "shapes",
    "shapes_for",
    "sparse_forms",
    "sparse_tensors",
    "special_values",
    "tensors",
    "values",
]
