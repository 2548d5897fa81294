"""A run's seed and draw settings: --seed, --hypothesis-seed, --derandomize and profiles over the manifest's block."""

from __future__ import annotations

import random
import sys

from torchcts.arguments import MAX_SEED, shown
from torchcts.ascii_numbers import ascii_int
from torchcts.engine.hypothesis_profile import (
    DrawSettings, ProfileError, named_profile, register_manifest_profile, resolve)
from torchcts.hash_seed import HASH_SEED
from torchcts.manifest import Manifest
from torchcts.manifest.model import HypothesisSettings
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest


def run_seed(request: RunRequest, seed: int | None, manifest: Manifest | None,
             profile_derandomizes: bool = False) -> tuple[int | None, bool]:
    """(the run's seed or None, derandomized): --seed (or --hypothesis-seed), else a named profile's
    derandomize=True, else the manifest's hypothesis.seed, else random; None with --derandomize or the
    manifest's hypothesis.derandomize (which ignores its seed)."""
    derandomize = request.derandomize
    if derandomize and seed is not None:
        raise SessionError("--seed (or --hypothesis-seed) and --derandomize exclude each other: derandomized "
                           "seeds come from item ids")
    if derandomize is None and seed is None and profile_derandomizes:
        return None, True
    if seed is None and derandomize is None and manifest is not None and not manifest.hypothesis.derandomize:
        seed = manifest.hypothesis.seed  # the manifest's seed (or None) stands in for --seed
    if derandomize is None and manifest is not None:  # an explicit --seed overrides the manifest's
        derandomize = manifest.hypothesis.derandomize and seed is None
    if derandomize:
        return None, True
    return (seed if seed is not None else random.SystemRandom().randrange(2**32)), False


def hypothesis_seed(request: RunRequest, seed: int | None) -> int | None:
    """The run's seed with Hypothesis's `--hypothesis-seed N` (its pytest plugin's option), which acts like
    `--seed N`: TorchCTS seeds every item from it. Given with another --seed, both must agree."""
    given = request.hypothesis_seed
    if given is None:
        return seed
    try:
        value = ascii_int(str(given))  # not int(): it takes full-width and other Unicode digits
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise SessionError(f"--hypothesis-seed must be an integer from 0 to {MAX_SEED} (TorchCTS seeds every item "
                           f"from it, like --seed), got {shown(given)}")
    if seed is not None and seed != value:
        raise SessionError(f"--seed {seed} and --hypothesis-seed {value} disagree; give one of them")
    return value


def draw_settings(request: RunRequest, manifest: Manifest | None, max_examples: int | None) -> DrawSettings:
    """The Hypothesis settings the run's items draw with (`torchcts.engine.hypothesis_profile`): the manifest's
    block, a profile named by --hypothesis-profile or HYPOTHESIS_PROFILE over it, the flags over both."""
    block = manifest.hypothesis if manifest is not None else HypothesisSettings()
    if manifest is None:
        register_manifest_profile(block)
    try:
        profile, named_by = named_profile(request.hypothesis_profile)
    except ProfileError as exc:
        raise SessionError(str(exc)) from None
    return resolve(block, profile=profile, named_by=named_by, max_examples=max_examples,
                   verbosity=request.hypothesis_verbosity, show_statistics=bool(request.hypothesis_show_statistics))


def hash_seed_warning(derandomize: bool) -> str | None:
    """A derandomized run under a random hash seed may draw other cases (`torchcts.hash_seed`)."""
    if not derandomize or not sys.flags.hash_randomization:  # the interpreter's state (`python -E` ignores the variable)
        return None
    return (f"PYTHONHASHSEED is not {HASH_SEED}: OpInfo samples that iterate sets (meshgrid) may differ from other "
            f"derandomized runs; set PYTHONHASHSEED={HASH_SEED} (the torchcts command does)")
