"""With no bug on, the faulty device gives CPU's answers on every float32 OpInfo sample (or says why not)."""

import collections

import pytest
import torch

from torchcts.testing.faulty.agreement import EXPLAINED, check_agreement

pytestmark = pytest.mark.slow  # runs long in-process (minutes on a busy machine; see tests/conftest.py, test tiers)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_every_float32_opinfo_sample_agrees_with_cpu_or_is_explained():
    report = check_agreement(dtype=torch.float32)
    assert report.ops > 600 and report.samples > 10_000
    unexplained = collections.defaultdict(list)
    for d in report.disagreements:
        kind, _reason = EXPLAINED.get(d.op, (None, None))
        if kind is None or (kind == "rounding" and not d.rounding_only):
            unexplained[d.op].append(f"sample {d.sample_index}: {d.problem}")
    assert not unexplained, dict(unexplained)
