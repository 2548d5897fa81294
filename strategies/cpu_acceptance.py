"""Whether torch's CPU kernel accepts a case: the check behind `opinfo_samples(validate=True)`.

A transform can make a case the CPU itself rejects (`Tensor.view` needs compatible strides);
drawing then falls back to the untransformed sample, if CPU accepts that. Every such run goes
through `torchcts.strategies.probes`, so a caller that expects CPU crashes runs it in a forked
child.
"""

from __future__ import annotations

import collections
from typing import Any

from torchcts.strategies import probes
from torchcts.strategies.sample_walk import copied
from torchcts.strategies.variants import call_variant

_VERDICT_CACHE_SIZE = 4096


def runs_on_cpu(op: Any, variant: str, sample: Any) -> bool | None:
    """Whether CPU accepts the case (True), rejects it (False), or died or hung on it (None)."""
    def call() -> None:
        call_variant(op, variant, copied(sample))

    return probes.probe(call, sample)


_original_verdicts: collections.OrderedDict[tuple, bool | None] = collections.OrderedDict()


def original_runs(op: Any, variant: str, sample: Any, key: tuple) -> bool:
    """Whether CPU accepts the untransformed sample (remembered per `key`: pool, variant and index)."""
    if key not in _original_verdicts:
        _original_verdicts[key] = runs_on_cpu(op, variant, sample)
        if len(_original_verdicts) > _VERDICT_CACHE_SIZE:
            _original_verdicts.popitem(last=False)
    return _original_verdicts[key] is True
