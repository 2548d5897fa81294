"""Recognising a missing kernel: the device raised because it has no kernel for an operator overload.

DESIGN.md says outcomes come from exception types, and this module keeps to that: the outcome is
decided by the type (the dispatcher raises `NotImplementedError` for an overload with no kernel
for the dispatch key it reached; a Python backend's `__torch_dispatch__` that returns
`NotImplemented` makes torch raise `TypeError`). The message text is read here, and only here, to
name the kernel (which overload, which dispatch key); besides this, only `targets.unavailable` reads
messages (meta's data-dependent outputs). The forms torch produces are data (`PATTERNS`), one row
each; a message no row matches is not a missing kernel (an unrelated `NotImplementedError` a kernel
raises stays a backend error). Forms that do not name their dispatch key take the device's.

Where the dispatcher can be asked cheaply, the finding is checked against it: an overload that has
a kernel registered for that very dispatch key (`torch._C._dispatch_has_kernel_for_dispatch_key`)
was not missing, so a kernel that raises a dispatcher-like message about itself is not mislabelled.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import attrs


@attrs.frozen
class MissingKernel:
    """An overload as the dispatcher names it ("aten::add.out") and the dispatch key it had no kernel for."""

    overload: str
    dispatch_key: str

    def describe(self) -> str:
        return f"missing kernel {self.overload} ({self.dispatch_key})"

    def as_json(self) -> dict[str, str]:
        return {"overload": self.overload, "dispatch_key": self.dispatch_key}


@attrs.frozen
class Pattern:
    """One form of torch's missing-kernel error: the exception types that carry it, and a regex with groups
    `overload` and `key` (or a fixed `dispatch_key`, or `DEVICE_KEY`: the device's own key).
    `packet_name`: the overload is printed the Python way (`aten.zero_.default`) and is rewritten the
    dispatcher's way (`aten::zero_`). `verify` False: the error comes from a kernel registered for the
    key on purpose (checking for one proves nothing)."""

    name: str
    types: tuple[type, ...]
    regex: re.Pattern[str]
    dispatch_key: str | None = None
    packet_name: bool = False
    verify: bool = True


_OVERLOAD = r"(?P<overload>[A-Za-z_][\w]*::[\w.]+)"
DEVICE_KEY = "<device>"  # a form that does not name its dispatch key: it is the device's (`device_key`)

PATTERNS: tuple[Pattern, ...] = (
    # the dispatcher (c10 OperatorEntry::reportError): CUDA, XLA, HPU, PrivateUse1 (named as renamed), Sparse*, ...
    Pattern("dispatcher", (NotImplementedError,),
            re.compile(rf"Could not run '{_OVERLOAD}' with arguments from the '(?P<key>\w+)' backend")),
    # the Meta fallback (aten/src/ATen/core/MetaFallbackKernel.cpp): no Meta kernel and no fake impl
    Pattern("meta", (NotImplementedError,),
            re.compile(rf"^{_OVERLOAD}: attempted to run this operator with Meta tensors, but there was no "
                       r"fake impl or Meta kernel registered"), dispatch_key="Meta"),
    # the MPS error fallback (aten/src/ATen/mps/MPSFallback.mm) without PYTORCH_ENABLE_MPS_FALLBACK
    Pattern("mps", (NotImplementedError,),
            re.compile(rf"The operator '{_OVERLOAD}' is not currently implemented for the MPS device"),
            dispatch_key="MPS"),
    # torch.library.custom_op without register_fake, run on meta tensors (its Meta kernel raises this)
    Pattern("custom_op_fake", (RuntimeError,),
            re.compile(rf"There was no fake impl registered for <CustomOpDef\({_OVERLOAD}\)>"), dispatch_key="Meta",
            verify=False),
    # the default of an op torch leaves to out-of-tree backends (aten/src/ATen/native/Convolution.cpp:
    # convolution_overrideable, convolution_backward_overrideable), not overridden by the backend
    Pattern("overrideable", (NotImplementedError,),
            re.compile(r"^(?P<overload>\w+_overrideable) not implemented\. You are likely triggering this with tensor "
                       r"backend other than CPU/CUDA/MKLDNN"), dispatch_key=DEVICE_KEY),
    # a Python backend whose __torch_dispatch__ returned NotImplemented (torch/_tensor / python_arg_parser)
    Pattern("torch_dispatch", (TypeError,),
            re.compile(r"Multiple dispatch failed for '(?:torch\._ops\.)?(?P<overload>[A-Za-z_]\w*\.[\w.]+)'; "
                       r"all __torch_dispatch__ handlers returned NotImplemented"),
            dispatch_key="Python", packet_name=True),
)


def find(exc: BaseException, device_type: str | None = None) -> MissingKernel | None:
    """The missing kernel `exc` (or an exception it was raised from) reports, or None. `device_type`: the
    device that raised it, for the forms that do not name their dispatch key."""
    for link in _chain(exc):
        found = parse(link, device_type)
        if found is not None:
            return found
    return None


def parse(exc: BaseException, device_type: str | None = None) -> MissingKernel | None:
    """The missing kernel one exception reports: a `PATTERNS` row whose types and regex match, not
    contradicted by the dispatcher; None otherwise."""
    message = str(exc)
    for pattern in PATTERNS:
        if not isinstance(exc, pattern.types):
            continue
        match = pattern.regex.search(message)
        if match is None:
            continue
        overload = match.group("overload")
        if pattern.packet_name:
            overload = dispatcher_name(overload)
        elif "::" not in overload:
            overload = f"aten::{overload}"
        if pattern.dispatch_key == DEVICE_KEY:
            if device_type is None:
                continue
            key = device_key(device_type)
        else:
            key = pattern.dispatch_key or canonical_key(match.group("key"))
        if pattern.verify and has_own_kernel(overload, key):
            return None  # a registered kernel raised this text itself: not a missing kernel
        return MissingKernel(overload, key)
    return None


def dispatcher_name(packet_name: str) -> str:
    """`aten.zero_.default` -> `aten::zero_`, `aten.add.out` -> `aten::add.out` (how the dispatcher names overloads)."""
    namespace, _, rest = packet_name.partition(".")
    name, _, overload = rest.partition(".")
    return f"{namespace}::{name}" + (f".{overload}" if overload and overload != "default" else "")


def canonical_key(name: str) -> str:
    """A dispatch key as torch spells it. The dispatcher prints PrivateUse1 under the backend's name
    ("tiny", "Sparsetiny"); those are mapped back to "PrivateUse1", "SparsePrivateUse1"."""
    import torch

    known = _key_name(name)
    if known is not None:
        return known
    renamed = torch._C._get_privateuse1_backend_name()
    if renamed and renamed in name:
        known = _key_name(name.replace(renamed, "PrivateUse1"))
        if known is not None:
            return known
    return name


def device_key(device_type: str) -> str:
    """The backend dispatch key of a device type: `cuda` -> CUDA, `meta` -> Meta, a renamed PrivateUse1
    backend -> PrivateUse1 (the device type itself when torch knows no such key)."""
    for candidate in (device_type.upper(), device_type.capitalize()):
        known = _key_name(candidate)
        if known is not None:
            return known
    return canonical_key(device_type)


def has_own_kernel(overload: str, key: str) -> bool:
    """Whether the dispatcher has a kernel registered for exactly this overload and key (fallbacks and
    alias keys are not kernels of the overload). False when it cannot say (an unknown key or overload)."""
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(overload, key))
    except Exception:  # noqa: BLE001 - not a dispatch key torch knows ("Python" is), an op not loaded
        return False


def _key_name(name: str) -> str | None:
    """The name of the dispatch key torch parses `name` as ("TINY" is PrivateUse1 renamed), or None."""
    import torch

    try:
        key = torch._C._parse_dispatch_key(name)  # None for a name torch does not know
    except Exception:  # noqa: BLE001 - older torch raises instead
        return None
    return None if key is None else key.name


def _chain(exc: BaseException, limit: int = 8) -> Iterator[BaseException]:
    """`exc`, then what it was explicitly raised from (`raise ... from`: a wrapper such as torch.compile's), at
    most `limit` links. The implicit `__context__` is not followed: a backend that catches a missing kernel and
    raises its own rejection (a ValueError for a bad input) has handled it."""
    seen: set[int] = set()
    link: Any = exc
    while link is not None and id(link) not in seen and len(seen) < limit:
        seen.add(id(link))
        yield link
        link = link.__cause__
