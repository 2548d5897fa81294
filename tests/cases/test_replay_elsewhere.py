"""A replay runs a case on the device it names, or says it did not: a case found on one device type and replayed
on another is `elsewhere` like a case found under another compile backend (its verdict line says where it was found
and where it ran, it is never a regression, and --update-status leaves its status alone)."""

from __future__ import annotations

import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import new_case, write_case
from torchcts.cases.replay import verdicts


def _stored(folder, device_type: str, status: str = "fixed"):
    case = new_case(prop="forward", op="abs", variant="function", dtype="float32", device_type=device_type,
                    backend=None, sample=SampleInput(torch.tensor([-1.0, 2.0])),
                    failure={"outcome": "failed", "message": "stored"}, found={})
    path = write_case(folder, case.with_status(status))[0]
    return {"item": "replay::forward::abs", "outcome": "failed", "error": "AssertionError: differs",
            "case": {"path": str(path), "status": status, "unreadable": None}}


def test_a_case_replayed_on_another_device_type_is_elsewhere_and_no_regression(tmp_path):
    (verdict,) = verdicts([_stored(tmp_path, "faulty")], device="cpu")
    assert verdict.other_device and verdict.elsewhere and verdict.still_failing and not verdict.regression
    assert verdict.where() == "found on faulty without torch.compile; replayed on cpu, eager (no torch.compile)"


def test_a_case_replayed_on_its_own_device_type_is_judged_as_usual(tmp_path):
    (verdict,) = verdicts([_stored(tmp_path, "faulty")], device="faulty:0")
    assert not verdict.other_device and not verdict.elsewhere and verdict.regression


def test_an_unknown_replay_device_changes_nothing(tmp_path):
    (verdict,) = verdicts([_stored(tmp_path, "faulty")])
    assert not verdict.elsewhere and verdict.regression
