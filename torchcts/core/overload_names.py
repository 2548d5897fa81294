"""The spelling of aten overload names, `str(OpOverload)`: "aten.add.Tensor", "aten.add_.Tensor".

One regex for every reader of names from files (exclusions, audit.json, evidence stores, a property's
`overloads=`); kept free of torch imports so `coverage report` and `coverage check`'s reading stay light.
"""

from __future__ import annotations

import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"  # a packet or an overload name
OVERLOAD_NAME = re.compile(rf"aten\.{IDENT}\.{IDENT}")  # "aten.<packet>.<overload>": use fullmatch


def split_name(name: str) -> tuple[str, str]:
    """("add_", "Tensor") of "aten.add_.Tensor"."""
    _, packet, overload = name.split(".", 2)
    return packet, overload
