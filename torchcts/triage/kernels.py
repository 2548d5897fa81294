"""The op of a failing case called on it, call by call: which aten kernels ran and what they saw.

A composite op reaches the device as the aten calls it decomposes into (`trapz` is `sub`, `add`,
`mul`, `sum`; `l1_loss` is `sub`, `abs`, `mean`), and the condition a bug needs may exist only
inside it: `gradient` slices its plain input into views at an offset and subtracts them. Grouping
such failures by the op's own family scatters one kernel's bug over every family that calls it.
So the OpInfo op is called on the decoded case on the CPU under a dispatch mode that notes, for
every aten call that computes (views are skipped), the features of its tensor arguments that a bug
may need: layout (`non-contiguous`, `storage offset`, `expanded`, `channels_last`), `empty`,
`large`, `mixed dtypes` (`triage.suspects` makes suspects of them). The mode sits
where `torchcts.engine.dispatch_trace` does, below CompositeImplicitAutograd, so it sees the calls
a backend is asked to run. The case is untrusted: triage traces it in a forked child capped in
address space and time (`trace_isolated`: a kernel may crash or work without bound on what a case
asks), and inside it every call is first run on meta copies; the trace stops at a call past its
`TraceLimits` (output elements of one call and of all, calls dispatched), at an orthogonal
polynomial of a degree over 10,000 (its CPU kernel loops that often per element), or at one meta
cannot answer, unless its inputs bound its output (`equal`, `item`, `nonzero`).
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from typing import Any

import attrs

from torchcts.isolation.fork import run_forked
from torchcts.triage.conditions import LARGE, layout_features

# imports inside functions: torch and what loads it (plan.catalog, strategies): only a traced case needs them

CALL_FEATURES = frozenset({"non-contiguous", "storage offset", "expanded", "channels_last", "channels_last_3d",
                           "empty", "large", "mixed dtypes"})
# Kernels whose CPU time grows with an argument's value (an orthogonal polynomial's degree: a loop per element)
_LOOPING = re.compile(r"_polynomial_")
MAX_LOOP_ARGUMENT = 10_000
# Ops meta cannot answer (their output depends on values) and whose output their inputs bound
DATA_DEPENDENT = frozenset({"_local_scalar_dense", "equal", "is_nonzero", "nonzero", "masked_select",
                            "unique", "_unique", "_unique2", "unique_consecutive", "unique_dim", "argwhere",
                            "allclose", "_assert_async"})


@attrs.frozen
class TraceLimits:
    """Bounds on tracing one case: a hostile case cannot make triage allocate, loop or run without bound."""

    call_elements: int = 1 << 22  # output elements one call may make (sized on meta before the CPU runs it)
    total_elements: int = 1 << 24  # output elements all calls together may make
    calls: int = 20_000  # aten calls dispatched, views included (a Python loop inside an op runs calls)
    recorded: int = 2000  # computing calls kept
    # `trace_isolated`: what its child may use beyond the memory it starts with, and how long it may take (work
    # inside one kernel and its scratch buffers are not sized: a convolution's unfold, a pooling window)
    memory_bytes: int = 2 << 30
    timeout_s: float = 30.0


@attrs.frozen
class Trace:
    """What calling an op on a case showed: the layout features (`conditions.layout_features`) of each of its
    flattened outputs (() for one that is not a dense tensor; None where the op raised or was stopped), its
    computing aten calls as (overload, tensor arguments, features), and why it stopped early ("" if it did not)."""

    outputs: tuple[tuple[str, ...], ...] | None
    calls: tuple[tuple[str, int, tuple[str, ...]], ...]
    stopped: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"outputs": self.outputs, "calls": self.calls, "stopped": self.stopped}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Trace":
        outputs = data["outputs"]
        return cls(None if outputs is None else tuple(tuple(found) for found in outputs),
                   tuple((str(name), int(tensors), tuple(features)) for name, tensors, features in data["calls"]),
                   str(data["stopped"]))


def trace_isolated(op_name: str, sample: Any, limits: TraceLimits = TraceLimits()) -> Trace:
    """`trace_case` in a forked child (`isolation.fork`) with `limits.memory_bytes` of address space beyond its
    start and `limits.timeout_s`: a case whose op crashes natively (a kernel reading out of bounds), exhausts
    memory or runs on inside one kernel ends the child, not triage. Its trace is then empty and says why."""
    from torchcts.plan.catalog import find_op

    try:
        find_op(op_name)  # here: the op database is loaded once, in this process, and each child inherits it
    except KeyError:
        return Trace(None, (), f"{op_name} is not in the catalog")
    _warm_up()

    def work() -> dict[str, Any]:
        _cap_memory(limits.memory_bytes)
        return trace_case(op_name, sample, limits).as_json()

    result = run_forked(work, limits.timeout_s)
    if result.status == "finished":
        return Trace.from_json(result.answer)
    return Trace(None, (), f"calling {op_name} on the case: {result.describe()}")


@functools.cache
def _warm_up() -> None:
    """Trace one fixed `add` here: a process's first trace sets up meta dispatch and the mode (~0.15 s), which
    each forked child would otherwise pay again."""
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    trace_case("add", SampleInput(torch.ones(2), args=(torch.ones(2),)))


def _cap_memory(extra: int) -> None:
    """Limit this process's address space to what it has now plus `extra` bytes (Linux; elsewhere no cap)."""
    try:
        import resource

        with open("/proc/self/statm") as statm:
            current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted = current + extra
        resource.setrlimit(resource.RLIMIT_AS, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    except (ImportError, OSError, ValueError):
        pass


def trace_case(op_name: str, sample: Any, limits: TraceLimits = TraceLimits()) -> Trace:
    """Call the OpInfo `op_name` (a catalog id: no name from a file is evaluated) on CPU copies of the decoded
    `sample` (the case's tensors stay as decoded: an op may write into its input), its warnings silenced, inside
    the recorder, which sizes every call on meta before the CPU runs it (`check_size`) and stops the op past
    `limits`. An op not in the catalog makes no call; one that raises or is stopped keeps the calls before.
    It runs in this process; triage uses `trace_isolated`."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    from torchcts.plan.catalog import find_op
    from torchcts.strategies import copy_exact

    try:
        op = find_op(op_name)
    except KeyError:
        return Trace(None, (), f"{op_name} is not in the catalog")

    def copied(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.layout == torch.strided and not value.is_nested:
            return copy_exact(value.detach())
        return value

    recorder = _recorder(limits)
    outputs, stopped = None, ""
    try:
        args, kwargs = tree_map(copied, (sample.input, *sample.args)), tree_map(copied, dict(sample.kwargs))
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("ignore")  # the op's deprecation and user warnings are not triage's output
            leaves = tree_flatten(op(*args, **kwargs))[0]
        outputs = tuple(tuple(layout_features(leaf)) if isinstance(leaf, torch.Tensor) and not leaf.is_nested
                        and leaf.layout == torch.strided else () for leaf in leaves)
    except TraceStopped as exc:
        stopped = f"stopped: {exc}"
    except Exception as exc:  # noqa: BLE001 - an error input, memory refused: the calls before it are the trace
        stopped = f"raised {type(exc).__name__}"
    return Trace(outputs, tuple(recorder.calls), stopped)


def _call_features(tensors: list[Any]) -> tuple[str, ...]:
    import torch

    features: set[str] = set()
    for t in tensors:
        if t.layout == torch.strided and not t.is_nested:
            features.update(f for f in layout_features(t) if f in CALL_FEATURES)
            if t.numel() == 0:
                features.add("empty")
            elif t.numel() > LARGE:
                features.add("large")
    if len({t.dtype for t in tensors}) > 1:
        features.add("mixed dtypes")
    return tuple(sorted(features))


def _recorder(limits: TraceLimits) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Recorder(TorchDispatchMode):
        """Notes (overload, tensor arguments, their features) of every aten call that is not a view; runs each
        within `limits` (TraceStopped past them)."""

        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[str, int, tuple[str, ...]]] = []
            self.dispatched = 0
            self.elements = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's signature
            kwargs = kwargs or {}
            self.dispatched += 1
            if self.dispatched > limits.calls:
                raise TraceStopped(f"over {limits.calls} calls")
            view = _is_view(func)
            if len(self.calls) < limits.recorded and getattr(func, "namespace", None) == "aten" and not view:
                tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
                self.calls.append((str(func), len(tensors), _call_features(tensors)))
            if not view:
                self.elements += check_size(func, args, kwargs, limits.call_elements)
                if self.elements > limits.total_elements:
                    raise TraceStopped(f"over {limits.total_elements} output elements in all")
            return func(*args, **kwargs)

    return Recorder()


class TraceStopped(Exception):
    """A call the trace does not run on the CPU: past its `TraceLimits`, or not answerable on meta."""


def check_size(func: Any, args: tuple, kwargs: dict, limit: int = TraceLimits().call_elements) -> int:
    """The output elements `func` makes from `args`, found by running it on meta copies first (nothing is
    allocated); TraceStopped when that is more than `limit`, or when meta cannot answer and the op is not one
    whose output its inputs bound (`DATA_DEPENDENT`: then their elements are the answer)."""
    import torch
    from torch.utils._pytree import tree_leaves, tree_map

    from torchcts.strategies import copy_exact

    def on_meta(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if value.layout != torch.strided or value.is_nested:
                raise TraceStopped(f"{func}: a {value.layout} tensor")
            return copy_exact(value.detach(), "meta")
        return value

    if _LOOPING.search(func.__name__) and _largest_number((args, kwargs)) > MAX_LOOP_ARGUMENT:
        raise TraceStopped(f"{func}: a degree over {MAX_LOOP_ARGUMENT}")
    try:
        outputs = func(*tree_map(on_meta, args), **tree_map(on_meta, kwargs))
    except TraceStopped:
        raise
    except Exception as exc:  # noqa: BLE001 - no meta answer: only an op its inputs bound runs on the CPU
        if func.__name__.split(".")[0] not in DATA_DEPENDENT:
            raise TraceStopped(f"{func}: no meta answer") from exc
        outputs = args
    elements = sum(t.numel() for t in tree_leaves(outputs) if isinstance(t, torch.Tensor))
    if elements > limit:
        raise TraceStopped(f"{func}: {elements} output elements")
    return elements


def _largest_number(values: Any) -> float:
    """The largest magnitude among the numbers and real tensor elements in `values` (NaN counts as 0)."""
    import torch
    from torch.utils._pytree import tree_leaves

    largest = 0.0
    for leaf in tree_leaves(values):
        if isinstance(leaf, torch.Tensor) and leaf.numel() and not leaf.is_complex() and leaf.dtype != torch.bool:
            largest = max(largest, float(leaf.detach().double().nan_to_num(0.0).abs().max()))
        elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and leaf == leaf:
            largest = max(largest, abs(float(leaf)))
    return largest


def _is_view(func: Any) -> bool:
    returns = func._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write
