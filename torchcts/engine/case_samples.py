"""What the engine derives from a case without running it: its fingerprint and its twins (same metadata, other
values; same values, plain layout), used to key cases and to tell data-dependent CPU rejections apart."""

from __future__ import annotations

from typing import Any

import torch

from torchcts.strategies import Case, copy_exact, fingerprint


def case_fingerprint(case: Any) -> str:
    """A case's fingerprint: a strategies Case's own, an OpInfo ErrorInput's, or that of a scenario's drawn value."""
    if isinstance(case, Case):
        return case.fingerprint
    if hasattr(case, "sample_input") and hasattr(case, "error_type"):  # an OpInfo ErrorInput
        return fingerprint(case.sample_input, case.error_type.__name__)
    return fingerprint(case)


def filled_twin(sample: Any, value: int) -> Any:
    """The sample with every dense tensor's elements set to `value`: same metadata, other data."""
    def filled(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_nested:
            return t
        twin = copy_exact(t)
        with torch.no_grad():
            twin.fill_(value)
        return twin

    return sample.transform(filled)


def contiguous_twin(sample: Any) -> Any:
    """The sample with every dense tensor copied contiguous: same values, plain layout."""
    def plain(t: Any) -> Any:  # SampleInput.transform also hands over dtypes
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_nested:
            return t
        return copy_exact(t.contiguous())

    return sample.transform(plain)
