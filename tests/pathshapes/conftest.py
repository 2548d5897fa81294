"""Small path-shapes corpora for the tests, handed out by the `kit` fixture (test modules cannot import each other)."""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any

import pytest


def tensor(*shape: int, dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"shape": list(shape), "dtype": dtype, **extra}


def case(case_id: str, op: str = "add", args: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"id": case_id, "op": op, "args": args if args is not None else [tensor(4, 8), tensor(4, 8)],
            "kwargs": {}, "tier": "tiny", "level": 2, "budget": 2, **fields}


def family(name: str, *cases: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 1, "family": name, "description": f"{name} test cases", "cases": list(cases)}


def write_corpus(folder: Path, *families: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for body in families:
        (folder / f"{body['family']}.json").write_text(json.dumps(body), encoding="utf-8")
    return folder


def good_family() -> dict[str, Any]:
    """A valid family: a pointwise add, a channels_last depthwise conv, a transposed matmul."""
    return family(
        "toy",
        case("toy.add"),
        case("toy.depthwise.channels_last", "conv2d",
             [tensor(1, 8, 10, 10, layout="channels_last"), tensor(8, 1, 3, 3, layout="channels_last"), None],
             kwargs={"padding": 1, "groups": 8}, level=5),
        case("toy.matmul.transposed", "matmul", [tensor(16, 40), tensor(40, 24, layout="transposed")]),
    )


def with_case(body: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    """A copy of a family whose case `index` has `changes` (None removes the field)."""
    body = copy.deepcopy(body)
    for key, value in changes.items():
        if value is None:
            body["cases"][index].pop(key, None)
        else:
            body["cases"][index][key] = value
    return body


@pytest.fixture
def kit() -> types.SimpleNamespace:
    """The helpers above: `kit.case(...)`, `kit.write_corpus(folder, ...)`, ..."""
    return types.SimpleNamespace(tensor=tensor, case=case, family=family, write_corpus=write_corpus,
                                 good_family=good_family, with_case=with_case)
