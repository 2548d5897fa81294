"""The OpInfo-case modules after their split: old import paths still work, each module stays small,
and a size change that picks no change leaves the sample untouched."""

from __future__ import annotations

import pathlib

import torch

import torchcts.strategies as strategies
from torchcts.plan.catalog import find_op
from torchcts.strategies import opinfo_pool, samples
from torchcts.strategies.sample_sizes import size_changed


def test_names_other_modules_import_from_samples_still_resolve():
    from torchcts.strategies.samples import Case, NoSamples, call_variant, cpu_pinned_paths, opinfo_samples, sample_pool

    assert (Case, NoSamples, call_variant, opinfo_samples, sample_pool) == (
        strategies.Case, strategies.NoSamples, strategies.call_variant, strategies.opinfo_samples, strategies.sample_pool)
    assert cpu_pinned_paths is opinfo_pool.cpu_pinned_paths
    assert samples._pools is opinfo_pool._pools  # tests clear the pool cache through samples._pools
    assert all(hasattr(strategies, name) for name in strategies.__all__)


def test_every_strategies_module_is_under_400_lines():
    folder = pathlib.Path(strategies.__file__).parent
    sizes = {path.name: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    assert sizes and all(lines <= 400 for lines in sizes.values()), sizes


def test_size_change_zero_is_no_change():
    op = find_op("add")
    sample = opinfo_pool.sample_pool(op, torch.float32)[0]
    assert size_changed(op, "function", torch.float32, sample, 0, True, True) == (sample, "")
    assert size_changed(op, "function", torch.float32, sample, 5 * 7, True, True) == (sample, "")  # 35 % 5 == 0
