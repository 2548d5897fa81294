"""Storing a failing item's minimal case in the corpus, for `run` and `fuzz` alike."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import hypothesis
import torch

import torchcts
from torchcts.cases.codec import CodecError
from torchcts.cases.files import new_case, write_case
from torchcts.cases.reduce import case_elements


def store_failure(context: Any, *, outcome: str, error: str | None, corpus_dir: Path,
                  found: dict[str, Any], replay_flags: str) -> dict[str, Any]:
    """Write the context's kept failing case; the fields a result record gets about it."""
    item = context.item
    sample, error_input, description = context.failing_sample()
    comparison = context.failing_comparison
    failure = {"outcome": outcome, "message": error or ""}
    if comparison is not None:
        failure.update(difference=comparison.message, max_abs_error=comparison.max_abs_error,
                       max_rel_error=comparison.max_rel_error, max_ulp=comparison.max_ulp)
    found = {"item": item.id, "item_seed": context.seed, "torch": torch.__version__,
             "hypothesis": hypothesis.__version__, "torchcts": torchcts.__version__, **found}
    try:
        case = new_case(prop=item.property, op=item.op, variant=item.variant, dtype=item.dtype,
                        device_type=context.target.device_type, backend=context.target.compile_backend,
                        sample=sample, failure=failure, found=found, description=description,
                        error_input=error_input)
    except CodecError as exc:
        return {"counterexample_error": f"the failing case cannot be stored: {exc}"}
    path, new = write_case(corpus_dir, case)
    return {"counterexample": {"path": str(path), "fingerprint": case.fingerprint, "new": new,
                               "elements": case_elements(sample),
                               "replay": f"torchcts replay {shlex.quote(str(path))} {replay_flags}".rstrip()}}
