"""The condition a failure's shrunk case shows: dtypes, layout, size class, special values.

A stored corpus case describes the minimal failing inputs exactly (docs/corpus.md). It is read with
the corpus's own safe reader (`torchcts.cases.files.load_case`, bounded, never executing anything)
and decoded into tensors within `CaseLimits`, as a replay would; the condition is then read off the
tensors and the plain arguments:

- layout: `non-contiguous`, `storage offset`, `expanded` (a zero stride on a dimension longer than 1),
  `channels_last`, `channels_last_3d`, a sparse layout, `nested`;
- size class: `empty` (a tensor with no element), `scalar` (0-d tensors only), `small` (at most
  `LARGE` elements), `large`; only `empty` and `large` are features (`NOTABLE_SIZES`);
- special values: `nan`, `inf`, `-0`, `subnormal` in floating tensors or Python floats, `int extremes`
  (an integer tensor value in the outer quarter of its dtype's range; the top quarter when unsigned),
  `wide int scalar` (a Python int outside int32), `float scalar` (a Python float meeting an integer or
  bool tensor);
- dtypes: `mixed dtypes` when the case's tensors do not share one dtype;
- output layout (`output_features`): the layout of the failing output as the op makes it from the
  case (`kernels.trace_case`: on the CPU, each call sized on meta first): `output storage offset`,
  `output expanded`, `output non-contiguous`. A wrong output that is a view at an offset, or plain
  inputs with a view, expanded or strided output, point at the device's view or readback machinery,
  not at the op's kernel: the output's layout then replaces the inputs' features (kept in
  `Condition.inputs`).

`Condition.features` holds what is notable; the signature groups on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import attrs

from torchcts.core.case_limits import CaseLimits

LARGE = 1024  # elements: past one tile of a typical kernel (the faulty device's tile_sum bug fires above it)
SIZE_CLASSES = ("empty", "scalar", "small", "large")
# Shrinking makes a case as small as it can while it fails: a 0-d or small case is what any bug that does not need
# size shrinks to, so only the sizes it could not shrink past (empty, large) say something about the bug.
NOTABLE_SIZES = ("empty", "large")


@attrs.frozen
class Condition:
    """What a shrunk case shows; `source` says where it was read (a case file) or why nothing was."""

    features: tuple[str, ...] = ()
    size_class: str | None = None
    dtypes: tuple[str, ...] = ()
    tensors: int | None = None  # tensors among the case's inputs (for elementwise unary/binary)
    elements: int | None = None  # tensor elements in the case (the representative is the smallest)
    source: str = "no stored case"
    known: bool = False  # whether a case was read
    root: str | None = None  # what stands for the condition where the record names the cause (a missing overload)
    inputs: tuple[str, ...] | None = None  # the inputs' own features, where the output's layout replaced them
    kernels: tuple[str, ...] = ()  # the aten calls inside the op that saw `features` (`triage.kernels`)
    kernel: str | None = None  # the kernel (stem) it is grouped under: a plain case, or one of special values

    def describe(self) -> str:
        if self.root is not None:
            return self.root
        return ", ".join(self.features) if self.features else ("plain" if self.known else "unknown")

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def unknown(why: str) -> Condition:
    return Condition(source=why)


def case_condition(path: Path, limits: Any = None) -> tuple[Condition, Any, Any]:
    """(the condition of the case file at `path`, the loaded `CorpusCase`, its decoded sample); CaseFileError when
    it cannot be read."""
    from torchcts.cases.files import load_case  # torch: only a stored case's condition needs it

    limits = limits or CaseLimits()
    case = load_case(path, limits)
    sample = case.sample(limits)
    return sample_condition(sample.input, sample.args, sample.kwargs, source=f"case {path}"), case, sample


def sample_condition(input: Any, args: Any, kwargs: Any, source: str = "case") -> Condition:
    """The condition of decoded inputs (tensors, Python numbers, containers of them)."""
    import torch

    tensors: list[Any] = []
    scalars: list[Any] = []
    for value in _leaves((input, args, kwargs)):
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, (bool, int, float, complex)):
            scalars.append(value)
    features: list[str] = []
    dtypes = tuple(sorted({str(t.dtype).removeprefix("torch.") for t in tensors}))
    if len(dtypes) > 1:
        features.append("mixed dtypes")
    for t in tensors:
        features += layout_features(t) + _special(t)
    integer_tensor = any(not (t.is_floating_point() or t.is_complex()) for t in tensors)
    for value in scalars:
        features += _scalar(value, integer_tensor)
    size = _size_class(tensors)
    if size in NOTABLE_SIZES:
        features.append(size)
    elements = sum(_numel(t) for t in tensors)
    return Condition(tuple(sorted(set(features))), size, dtypes, len(tensors), elements, source, True)


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    if depth > 32:  # decoded cases are depth-bounded already; this bounds the walk independently
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    else:
        yield value


def _numel(t: Any) -> int:
    import torch

    if t.is_nested:
        return sum(c.numel() for c in t.unbind())
    if t.layout != torch.strided:
        return int(t._nnz()) if hasattr(t, "_nnz") else 0
    return t.numel()


def layout_features(t: Any) -> list[str]:
    """The layout features of one tensor (the module docstring's list)."""
    import torch

    if t.is_nested:
        return ["nested"]
    if t.layout != torch.strided:
        return [str(t.layout).removeprefix("torch.")]
    if t.numel() <= 1:
        return ["storage offset"] if t.storage_offset() else []
    found = []
    if t.storage_offset():
        found.append("storage offset")
    if any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape)):
        found.append("expanded")
    elif not t.is_contiguous():
        if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
            found.append("channels_last")
        elif t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
            found.append("channels_last_3d")
        else:
            found.append("non-contiguous")
    return found


def _special(t: Any) -> list[str]:
    import torch

    if t.is_nested or t.layout != torch.strided or t.numel() == 0 or t.device.type == "meta":
        return []
    if t.is_complex():
        t = torch.view_as_real(t)
    found = []
    if t.is_floating_point():
        x = t.detach().to(torch.float64) if t.dtype.itemsize < 8 else t.detach()
        if bool(x.isnan().any()):
            found.append("nan")
        if bool(x.isinf().any()):
            found.append("inf")
        if bool(((x == 0) & x.signbit()).any()):
            found.append("-0")
        finfo = torch.finfo(t.dtype)
        if bool(((x != 0) & (x.abs() < finfo.tiny)).any()):
            found.append("subnormal")
    elif t.dtype != torch.bool:
        info = torch.iinfo(t.dtype)
        quarter = (int(info.max) - int(info.min)) // 4
        # int64 holds every narrower integer exactly; uint64 (no comparison kernels on CPU) is compared as float64
        x = t.detach().to(torch.float64 if t.dtype == torch.uint64 else torch.int64)
        low = info.min < 0 and bool((x <= int(info.min) + quarter).any())  # unsigned: small values are not extreme
        if low or bool((x >= int(info.max) - quarter).any()):
            found.append("int extremes")
    return found


def _scalar(value: Any, integer_tensor: bool) -> list[str]:
    import math

    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return ["wide int scalar"] if not -2**31 <= value < 2**31 else []
    if isinstance(value, complex):
        value = value.real if value.imag == 0 else value.imag
    found = ["float scalar"] if integer_tensor else []
    if math.isnan(value):
        found.append("nan")
    elif math.isinf(value):
        found.append("inf")
    elif value == 0 and math.copysign(1.0, value) < 0:
        found.append("-0")
    elif value != 0 and abs(value) < 2.2250738585072014e-308:
        found.append("subnormal")
    return found


def _size_class(tensors: list[Any]) -> str | None:
    if not tensors:
        return None
    numels = [_numel(t) for t in tensors]
    if any(n == 0 for n in numels):
        return "empty"
    if all(t.dim() == 0 for t in tensors if not t.is_nested):
        return "scalar"
    return "large" if max(numels) > LARGE else "small"


OUTPUT_LAYOUTS = {"storage offset": "output storage offset", "expanded": "output expanded",
                  "non-contiguous": "output non-contiguous"}
OUTPUT_OFFSET = OUTPUT_LAYOUTS["storage offset"]
_OUTPUT_INDEX = re.compile(r"^output (\d{1,6}):", re.ASCII)  # bounded: the text comes from a case file


def output_features(outputs: Any, difference: Any) -> tuple[str, ...]:
    """The output layout features (`OUTPUT_LAYOUTS`) of the output a failure names in `difference` ("output 1:
    ..."; every output when it names none), from `outputs`, the layout features of the op's flattened outputs on
    its case (`kernels.Trace.outputs`; None when there are none)."""
    layouts = list(outputs or ())
    found = _OUTPUT_INDEX.match(difference) if isinstance(difference, str) else None
    if found is not None and int(found.group(1)) < len(layouts):
        layouts = [layouts[int(found.group(1))]]
    return tuple(sorted({OUTPUT_LAYOUTS[f] for features in layouts for f in features if f in OUTPUT_LAYOUTS}))
