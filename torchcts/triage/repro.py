"""Torch-only repro scripts for crashed and timed-out items.

Three sources, best first:

1. the item's own stored case (its record's `counterexample`): the corpus export
   (`torchcts.cases.export.export_script`) writes the script, with every value a checked literal;
2. a crash case for the same property, op, dtype and device type in the corpus (`torchcts fuzz`'s
   crash hunt stores the case that killed its child): exported the same way;
3. otherwise no case exists (an isolated item died inside Hypothesis, before any case could be kept),
   and the script sweeps the OpInfo's own sample inputs for the op and dtype on the device, one at a
   time, printing each before it runs: the process dying, or a sample running past `TIMEOUT_S`
   (faulthandler then prints the stack and exits 1), reproduces it, and the last line printed names
   the sample.

Nothing from a record reaches a script as code: the op is looked up in the OpInfo catalog and written
as its catalog name and variant (checked names, as `ascii` literals), the dtype by its torch name,
the device from its allowed form; text from records (item id, error line) goes into the docstring
made inert (printable ASCII, quotes and backslashes escaped). The rendered script is parsed and must
import only `faulthandler`, `sys`, `torch` and torch's op database.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Any

import attrs

from torchcts.disk import write_atomic
from torchcts.triage.families import OPINFO_PROPERTIES

# imports inside functions: torch and what loads it (cases, dtypes, plan.catalog): only a repro script needs it

_DEVICE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_VARIANT = re.compile(r"[A-Za-z0-9_]*")
_IMPORTS = {"faulthandler", "sys", "torch", "torch.testing._internal.common_methods_invocations"}
TIMEOUT_S = 60

_SWEEP = '''\
"""Reproduce TorchCTS item {item} ({outcome}) with torch alone.

No case was stored for it: the process running the item {died} before a failing case could be
kept. This script runs every OpInfo sample input of {op_text} in {dtype} on DEVICE, one at a time,
printing each before it runs. The process dying (a crash), or a sample running past TIMEOUT_S
seconds (a hang: the stack is printed and the script exits 1), reproduces it; the last sample
printed is the one. Exits 0 when every sample finished.
Observed: {error}

Run: python this_script.py [DEVICE]   (default {device_text}).
For the faulty device: TORCHCTS_FAULTY=1 TORCHCTS_FAULTY_BUGS=<the run's bugs> python this_script.py
"""
import faulthandler
import sys

import torch
from torch.testing._internal.common_methods_invocations import op_db

DEVICE = sys.argv[1] if len(sys.argv) > 1 else {device}
OP_NAME, OP_VARIANT, DTYPE, INPLACE = {name}, {variant}, torch.{dtype_name}, {inplace}
TIMEOUT_S = {timeout}

OP = next(o for o in op_db if o.name == OP_NAME and o.variant_test_name == OP_VARIANT)
FN = OP.inplace_variant if INPLACE else OP.op
torch.manual_seed(0)
for i, sample in enumerate(OP.sample_inputs("cpu", DTYPE)):
    shapes = [tuple(t.shape) for t in [sample.input, *sample.args, *sample.kwargs.values()]
              if isinstance(t, torch.Tensor)]
    sample = sample.transform(lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t)
    print(f"sample {{i}}: tensors of shapes {{shapes}}, kwargs {{sorted(sample.kwargs)}}", flush=True)
    faulthandler.dump_traceback_later(TIMEOUT_S, exit=True)
    try:
        FN(sample.input, *sample.args, **sample.kwargs)
    except Exception as exc:
        print(f"  raised {{type(exc).__name__}}", flush=True)
    faulthandler.cancel_dump_traceback_later()
print(f"not reproduced on {{DEVICE}}: every sample finished")
'''


@attrs.frozen
class Repro:
    path: Path | None
    source: str  # "stored case", "corpus crash case", "OpInfo sample sweep", or why none was written


def script_name(item: str) -> str:
    """A file name for an item's script: its id with anything but letters, digits, `.`, `_`, `-` replaced,
    cut to 100 characters, and a hash of the whole id (hostile or long ids stay distinct and safe)."""
    digest = hashlib.sha256(item.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', item)[:100].lstrip('.')}-{digest}.py"


def write_repro(failure: Any, folder: Path, device: str | None, case_path: Path | None,
                corpus_case: Path | None) -> Repro:
    """Write the repro script of a crashed or timed-out `failure` into `folder`; which source it used, or why none."""
    from torchcts.cases.files import CaseFileError

    device = device if isinstance(device, str) and _DEVICE.fullmatch(device) else None
    problems = []
    for path, source in ((case_path, "stored case"), (corpus_case, "corpus crash case")):
        if path is None:
            continue
        try:
            from torchcts.cases.export import export_script

            return _save(folder, failure.item, export_script(path, device), f"{source} {path}")
        except (CaseFileError, KeyError) as exc:
            problems.append(f"{source}: {_inert(str(exc))[:200]}")
    try:
        text = sweep_script(failure, device)
    except ValueError as exc:
        return Repro(None, "; ".join(problems + [str(exc)]))
    return _save(folder, failure.item, text, "OpInfo sample sweep (no stored case)")


def _save(folder: Path, item: str, text: str, source: str) -> Repro:
    path = write_atomic(folder / script_name(item), text.encode("ascii"))  # WriteError: a full disk
    return Repro(path, source)


def sweep_script(failure: Any, device: str | None) -> str:
    """The sample-sweep script for `failure` (an OpInfo item); ValueError says why there is none."""
    from torchcts import dtypes as dtype_names
    from torchcts.plan.catalog import find_op

    if failure.property not in OPINFO_PROPERTIES:
        raise ValueError(f"property {_inert(failure.property)[:60]} runs scenarios, not OpInfo samples: no sweep")
    try:
        op = find_op(failure.op)
        dtype = dtype_names.lookup(failure.dtype)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"no sweep: {_inert(str(exc))[:200]}") from None
    dtype_name = dtype_names.canonical_name(dtype)
    if not (_NAME.fullmatch(op.name) and _VARIANT.fullmatch(op.variant_test_name) and dtype_name.isidentifier()):
        raise ValueError(f"no sweep: the catalog's names for {_inert(failure.op)[:60]} are not plain names")
    inplace = failure.variant == "inplace" and op.inplace_variant is not None
    died = "hung and was killed" if failure.outcome == "timed_out" else "died"
    text = _SWEEP.format(
        item=_inert(failure.item)[:200], outcome=_inert(failure.outcome)[:20], died=died,
        op_text=_inert(failure.op)[:100], dtype=dtype_name, error=_inert(failure.error_line)[:300],
        device_text=device or "cpu", device=ascii(device or "cpu"), name=ascii(op.name),
        variant=ascii(op.variant_test_name), dtype_name=dtype_name, inplace=repr(inplace), timeout=TIMEOUT_S)
    _check(text)
    return text


def _check(text: str) -> None:
    """Refuse a script that imports anything but its own modules (a second line of defense)."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {node.module or ""}
        else:
            continue
        if not names <= _IMPORTS:
            raise ValueError(f"no sweep: the script would import {sorted(names)}")


def _inert(text: str) -> str:
    """`text` as docstring text: printable ASCII, quotes and backslashes escaped, anything else as an escape."""
    return "".join("\\" + ch if ch in "\"\\" else ch if " " <= ch <= "~" else ascii(ch)[1:-1] for ch in str(text))
