"""Storing a failing item's minimal case in the corpus, for `run` and `fuzz` alike.

A missing kernel is one finding however many items hit it: its case is stored once per overload,
dispatch key and device type, in a file named after them (`missing_kernel_path`); the first item to
hit it writes the file, later ones point at it (`new` false). Creating that file is atomic and never
replaces one, so parallel workers agree on the first.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import hypothesis
import torch

import torchcts
from torchcts.cases.codec import CodecError
from torchcts.disk import WriteError, writing
from torchcts.cases.files import (
    CaseFileError, CorpusCase, load_case, module_name_problem, new_case, save_case, write_case,
)
from torchcts.cases.reduce import case_elements
from torchcts.plan import registry


def store_failure(context: Any, *, outcome: str, error: str | None, corpus_dir: Path,
                  found: dict[str, Any], replay_flags: str, missing_kernel: Any = None,
                  backend_import: str | None = None) -> dict[str, Any]:
    """Write the context's kept failing case (for a `missing_kernel`, unless its overload has a case
    already); the fields a result record gets about it. `backend_import` is the manifest's module that
    registered the device: an exported script imports it."""
    item = context.item
    sample, error_input, description = context.failing_sample()
    comparison = context.failing_comparison
    failure = {"outcome": outcome, "message": error or ""}
    if comparison is not None:
        failure.update(difference=comparison.message, max_abs_error=comparison.max_abs_error,
                       max_rel_error=comparison.max_rel_error, max_ulp=comparison.max_ulp)
    if missing_kernel is not None:
        failure["missing_kernel"] = missing_kernel.as_json()
    found = {"item": item.id, "item_seed": context.seed, "torch": torch.__version__,
             "hypothesis": hypothesis.__version__, "torchcts": torchcts.__version__, **found}
    try:
        case = new_case(prop=item.property, op=item.op, variant=item.variant, dtype=item.dtype,
                        device_type=context.target.device_type, backend=context.target.compile_backend,
                        sample=sample, failure=failure, found=found, description=description,
                        error_input=error_input, scenario_params=_declared_params(item),
                        compile=context.target.compile.as_json() if context.target.compile is not None else None,
                        # a name a case file may not hold (a non-ASCII identifier) is left out, not stored to fail
                        backend_import=backend_import if module_name_problem(backend_import) is None else None)
    except CodecError as exc:
        return {"counterexample_error": f"the failing case cannot be stored: {exc}"}
    if missing_kernel is None:
        path, new = write_case(corpus_dir, case)
    else:
        path = missing_kernel_path(corpus_dir, case.device_type, missing_kernel)
        case, new = _write_once(path, case)
    if ".." in Path(path).parts:  # `--corpus-dir ../x`: readers refuse '..' in a recorded path, so record it whole
        path = Path(os.path.abspath(path))
    return {"counterexample": {"path": str(path), "fingerprint": case.fingerprint, "new": new,
                               "elements": case_elements(sample) if new else _elements(case),
                               "replay": f"torchcts replay {shlex.quote(str(path))} {replay_flags}".rstrip()}}


def _declared_params(item: Any) -> Any:
    """The named parameters a scenario item's suite declares (its case is stored by name), or None."""
    try:
        spec = registry.get(item.property)
    except registry.RegistryError:
        return None
    return spec.items.case_params(item.op) if spec.scenario else None


def missing_kernel_path(corpus_dir: Path | str, device_type: str, kernel: Any) -> Path:
    """Where the case of a missing kernel is kept: `missing-kernel-<device type>-<key>-<overload>.json`
    (`aten::add.out` written `aten.add.out`)."""
    name = f"missing-kernel-{device_type}-{kernel.dispatch_key}-{kernel.overload.replace('::', '.')}"
    return Path(corpus_dir) / (re.sub(r"[^\w.-]", "_", name) + ".json")


def _write_once(path: Path, case: CorpusCase) -> tuple[CorpusCase, bool]:
    """(the case the file holds, whether it is this one, just written). A file there already wins; one
    that cannot be read is replaced."""
    if path.exists():
        try:
            return load_case(path), False
        except CaseFileError:
            save_case(path, case)
            return case, True
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        save_case(temporary, case)
    except WriteError as exc:  # a full disk: named by the file the case was for, not the temporary one
        raise WriteError(path, exc.reason) from None
    try:
        os.link(temporary, path)  # atomic, and fails when another process created the file first
    except FileExistsError:
        temporary.unlink(missing_ok=True)
        return _write_once(path, case)
    except OSError:  # a file system without hard links: last writer wins, atomically
        with writing(path):
            os.replace(temporary, path)
        return case, True
    temporary.unlink(missing_ok=True)
    return case, True


def _elements(case: CorpusCase) -> int | None:
    """Tensor elements of a stored case's inputs (None when they cannot be decoded)."""
    try:
        return case_elements(case.sample())
    except CaseFileError:
        return None
