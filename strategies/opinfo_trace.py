"""Measured OpInfo reach: the aten overloads each OpInfo's own samples dispatch, and which call did it.

Name mapping (`mapping`) says what an OpInfo is meant to reach; many OpInfos reach more than their
names spell (`nn.functional.conv2d` reaches `aten.convolution`, `fft.fft` reaches `aten._fft_r2c`,
`nn.functional.cross_entropy`'s gradient `aten.nll_loss_backward`). Here every OpInfo's CPU samples
(`sample_pool`, up to `SAMPLES_PER_DTYPE` per dtype, in float32, int64 and complex64 where it declares
them, else its first dtype by name) run under a `TorchDispatchMode` as the function, in-place and out= variants and, where the
OpInfo is differentiable, backward with the samples' floating tensors as leaves. The mode sees what
reaches the backend (below autograd and CompositeImplicitAutograd), so the audit credits an OpInfo
property with an overload its samples dispatched (docs/coverage/audit.md, "Traced").

It runs CPU's kernels on every sample (a minute or two), too slow for an audit that must take
seconds, so the answer for the installed torch is packaged (`opinfo_trace.json`), written by `python
-m torchcts.strategies.opinfo_trace --refresh`; a test re-traces a few OpInfos and compares. Each
overload also keeps up to `DONORS_PER_OVERLOAD` donor calls (OpInfo id, dtype, sample index, phase):
where a sample's call reached it, which the `dispatch` property reuses for overloads whose schema
alone gives no call CPU accepts (`strategies/traced_calls.py`). It lives with the strategies, which
replay those calls; coverage reads it.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.utils._pytree import tree_leaves

from torchcts.disk import write_atomic
from torchcts.plan.catalog import all_ops, op_id
from torchcts.strategies.opinfo_pool import sample_pool
from torchcts.strategies.variants import call_variant

PACKAGED = Path(__file__).with_name("opinfo_trace.json")
MAX_PACKAGED_BYTES = 8 * 2**20
SAMPLES_PER_DTYPE = 32
DONORS_PER_OVERLOAD = 3
TRACED_DTYPES = ("float32", "int64", "complex64")
PHASES = ("function", "inplace", "out", "backward")  # the variant a call was made as ("backward": autograd's)


class TraceFileError(Exception):
    """The packaged trace cannot be read: the message names the file and what is wrong."""


# -- tracing -----------------------------------------------------------------------------------------

def _recorder_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        """Calls `seen(name)` for each aten overload dispatched inside; runs every op unchanged."""

        def __init__(self, seen: Callable[[str], None]):
            super().__init__()
            self.seen = seen

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's signature
            if getattr(func, "namespace", None) == "aten":
                self.seen(str(func))
            return func(*args, **(kwargs or {}))

    return Recorder


def gradient_leaves(sample: Any) -> tuple[Any, list[Any]]:
    """(a copy of `sample` whose floating and complex tensors are fresh leaves requiring grad, those leaves)."""
    leaves: list[Any] = []

    def leaf(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
            fresh = t.detach().clone().requires_grad_(True)
            leaves.append(fresh)
            return fresh
        return t.clone() if isinstance(t, torch.Tensor) else t

    return sample.transform(leaf), leaves


def run_phase(op: Any, sample: Any, phase: str, mode: Any) -> None:
    """Run one sample as `phase` with `mode` entered around what the phase dispatches (backward: the
    gradient only). Raises what the op raises."""
    if phase != "backward":
        copy = sample.transform(lambda t: t.clone() if isinstance(t, torch.Tensor) else t)
        with mode:
            call_variant(op, phase, copy)
        return
    placed, leaves = gradient_leaves(sample)
    result = placed.output_process_fn_grad(op(placed.input, *placed.args, **placed.kwargs))
    outputs = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad]
    if outputs and leaves:
        with mode:
            torch.autograd.grad(outputs, leaves, [torch.ones_like(t) for t in outputs], allow_unused=True)


def phases(op: Any, dtype: Any) -> tuple[str, ...]:
    """The phases an OpInfo's samples run as in `dtype`."""
    found = ["function"]
    if op.inplace_variant is not None:
        found.append("inplace")
    if op.supports_out:
        found.append("out")
    if op.supports_autograd and (dtype.is_floating_point or dtype.is_complex) \
            and dtype in op.supported_backward_dtypes("cpu"):
        found.append("backward")
    return tuple(found)


def trace_op(op: Any, samples_per_dtype: int = SAMPLES_PER_DTYPE) -> Iterator[tuple[str, str, int, str]]:
    """(overload, dtype name, sample index, phase) for the first call of each overload in each of the op's
    traced dtypes, samples and phases; a call the op raises on still counts what it dispatched before."""
    recorder = _recorder_class()
    supported = op.supported_dtypes("cpu")
    names = [name for name in TRACED_DTYPES if getattr(torch, name) in supported]
    if not names and supported:  # an OpInfo of other dtypes only (bool, float16): its first, by name
        names = [min(str(d).removeprefix("torch.") for d in supported)]
    for dtype_name in names:
        dtype = getattr(torch, dtype_name)
        try:
            pool = sample_pool(op, dtype)[:samples_per_dtype]
        except Exception:  # noqa: BLE001 - an OpInfo whose sample function raises reaches nothing by trace
            continue
        for index, sample in enumerate(pool):
            for phase in phases(op, dtype):
                seen: list[str] = []
                try:
                    run_phase(op, sample, phase, recorder(seen.append))
                except Exception:  # noqa: BLE001 - what it dispatched before it raised was dispatched
                    pass
                for name in dict.fromkeys(seen):
                    yield name, dtype_name, index, phase


def compute(ops: Iterable[Any] | None = None, progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The content of the packaged file: per OpInfo id, the overloads each phase reached; per overload its donors."""
    ops = tuple(all_ops() if ops is None else ops)
    reach: dict[str, dict[str, set[str]]] = {}
    donors: dict[str, list[list[Any]]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for count, op in enumerate(ops, 1):
            identity = op_id(op)
            for name, dtype_name, index, phase in trace_op(op):
                reach.setdefault(identity, {}).setdefault(phase, set()).add(name)
                found = donors.setdefault(name, [])
                if len(found) < DONORS_PER_OVERLOAD and not any(d[0] == identity and d[3] == phase for d in found):
                    found.append([identity, dtype_name, index, phase])
            if count % 50 == 0:
                progress(f"{count}/{len(ops)} OpInfos traced")
    return {"opinfos": {k: {p: sorted(v) for p, v in sorted(phases_.items())} for k, phases_ in sorted(reach.items())},
            "donors": dict(sorted(donors.items()))}


def write_packaged(content: dict[str, Any], path: Path = PACKAGED) -> None:
    import torchcts  # the version only; a leaf, imported where it is written

    reached = {name for phases_ in content["opinfos"].values() for found in phases_.values() for name in found}
    metadata = {"torch": torch.__version__, "torchcts": torchcts.__version__, "samples_per_dtype": SAMPLES_PER_DTYPE,
                "dtypes": list(TRACED_DTYPES), "opinfos": len(content["opinfos"]), "overloads": len(reached)}
    write_atomic(path, json.dumps({"metadata": metadata, **content}, indent=0, sort_keys=True) + "\n")


# -- reading the packaged answer ----------------------------------------------------------------------

def _name_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) and n.startswith("aten.") for n in value)


@functools.cache
def packaged() -> dict[str, Any]:
    """The packaged trace, checked: {"metadata", "opinfos", "donors"}; TraceFileError names what is wrong."""
    try:
        with open(PACKAGED, "rb") as handle:
            text = handle.read(MAX_PACKAGED_BYTES + 1)
    except OSError as exc:
        raise TraceFileError(f"{PACKAGED}: unreadable: {exc.strerror or exc}") from None
    if len(text) > MAX_PACKAGED_BYTES:
        raise TraceFileError(f"{PACKAGED}: unreadable: over the limit of {MAX_PACKAGED_BYTES // 2**20} MiB for a "
                             "packaged OpInfo trace")
    try:
        data = json.loads(text)
    except ValueError as exc:  # not JSON, not UTF-8
        raise TraceFileError(f"{PACKAGED}: unreadable: {exc}") from None
    opinfos = data.get("opinfos") if isinstance(data, dict) else None
    if not isinstance(opinfos, dict) or not all(
            isinstance(found, dict) and all(p in PHASES and _name_list(v) for p, v in found.items())
            for found in opinfos.values()):
        raise TraceFileError(f"{PACKAGED}: `opinfos` must map OpInfo ids to {{phase: [overload names]}}, "
                             f"phases {', '.join(PHASES)}")
    donors = data.get("donors")
    if not isinstance(donors, dict) or not all(
            isinstance(found, list) and all(isinstance(d, list) and len(d) == 4 and isinstance(d[0], str)
                                            and isinstance(d[1], str) and d[1].isidentifier() and isinstance(d[2], int) and d[3] in PHASES
                                            for d in found) for found in donors.values()):
        raise TraceFileError(f"{PACKAGED}: `donors` must map overload names to [[OpInfo id, dtype, sample index, "
                             "phase], ...]")
    return {"metadata": dict(data.get("metadata") or {}), "opinfos": opinfos, "donors": donors}


def traced_reach() -> dict[str, dict[str, tuple[str, ...]]]:
    """OpInfo id -> phase -> the overloads its samples dispatched (the packaged trace)."""
    return {identity: {phase: tuple(found) for phase, found in by_phase.items()}
            for identity, by_phase in packaged()["opinfos"].items()}


if __name__ == "__main__":  # python -m torchcts.strategies.opinfo_trace --refresh
    if sys.argv[1:] != ["--refresh"]:
        sys.exit("usage: python -m torchcts.strategies.opinfo_trace --refresh  (re-trace every OpInfo and package it)")
    torch.set_num_threads(1)  # a refresh runs thousands of tiny kernels: threads only cost
    write_packaged(compute(progress=lambda line: print(line, flush=True)))
