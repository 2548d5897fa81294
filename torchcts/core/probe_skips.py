"""The `skip_ops` reason `torchcts init --probe` writes for an op whose items hit missing kernels, and reading it
back: "no kernel for aten::trunc, aten::trunc.out".

A draft manifest moves such ops out of the run; the report must still show them as missing kernels (per overload,
with the ops they block), not as a policy choice. Both sides use this one format. Torch-free: the report reads it.
"""

from __future__ import annotations

import re

PREFIX = "no kernel for "
_OVERLOAD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")
MAX_OVERLOADS = 64  # per reason: a hand-written reason is bounded before it is split


def probe_reason(overloads: list[str] | tuple[str, ...]) -> str:
    """The skip_ops reason for an op whose items hit these missing kernels."""
    return PREFIX + ", ".join(overloads)


def missing_overloads(reason: object) -> tuple[str, ...]:
    """The overloads a skip_ops reason names when it is a probe's missing-kernel reason, else (). The reason may come
    from a result file (untrusted): anything but `PREFIX` followed by overload names is not one."""
    if not isinstance(reason, str) or not reason.startswith(PREFIX) or len(reason) > 100 * MAX_OVERLOADS:
        return ()
    names = [part.strip() for part in reason[len(PREFIX):].split(",")][:MAX_OVERLOADS]
    return tuple(n for n in names if _OVERLOAD.fullmatch(n))  # a name that is not an overload drops alone
