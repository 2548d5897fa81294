"""Seeded bugs for the autocast suite (properties/suites/autocast.py).

A backend's autocast is a table of ops and casts, written by hand: an op left out of the table runs
in whatever dtype it is given, and a table written for one autocast dtype can be skipped for the
other. Both act at the device's autocast step (`faulty.autocast`), which sees (op, class) and the
dtype the policy chose.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import AUTOCAST_STEP, Bug


def _is_baddbmm(func, args, kwargs) -> bool:
    return args[0] == "baddbmm"


def _no_cast(func, args, kwargs, dtype):
    return None


def _float32_class_under_bfloat16(func, args, kwargs) -> bool:
    return args[1] == "float32" and torch.get_autocast_dtype("faulty") == torch.bfloat16


BUGS = (
    Bug("autocast_skips_baddbmm", (AUTOCAST_STEP,), "baddbmm runs under autocast",
        "its inputs are not cast to the autocast dtype: it stays in float32 (an op left out of the policy)",
        _is_baddbmm, _no_cast, suite="autocast"),
    Bug("autocast_float32_ops_stay_bfloat16", (AUTOCAST_STEP,),
        "an op of the float32 class runs under autocast in bfloat16",
        "its inputs are not cast to float32 (the float32 list applied under float16 only)",
        _float32_class_under_bfloat16, _no_cast, suite="autocast"),
)
