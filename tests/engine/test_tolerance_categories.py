"""Every tolerance category a manifest accepts changes a real comparison (vocabulary.TOLERANCE_READERS).

For each accepted category, READERS names comparisons that read it, with the categories the code gives them (the op
tables of `engine.oracle`, the suites' own `CATEGORIES`). A float32 result 5% off CPU's fails each of them under the
dtype's tolerance; a manifest override of that category alone makes it pass, and an override of a category the
comparison does not name leaves it failing. A category added to the vocabulary without a reader here fails
`test_every_accepted_category_has_a_reader`.
"""

from __future__ import annotations

import pytest
import torch

from torchcts.engine import oracle
from torchcts.engine.context import CaseContext
from torchcts.engine.targets import Target
from torchcts.manifest import parse_manifest, vocabulary
from torchcts.plan.build import PlanItem
from torchcts.plan.catalog import find_op
from torchcts.properties.suites import (compile_modules, gradient_checkpointing, module_hooks, optimizers,
                                        quantized_decoders, training)

OP_OF = {"elementwise": "add", "reduction": "sum", "matmul": "mm", "conv": "nn.functional.conv2d",
         "norm": "nn.functional.layer_norm", "sdpa": "nn.functional.scaled_dot_product_attention",
         "loss": "nn.functional.mse_loss", "linalg": "linalg.det", "fft": "fft.fft"}

# category -> [(what, op name or None for a scenario, the comparison's categories as the code gives them, compiled)]
READERS: dict[str, list[tuple[str, str | None, tuple[str, ...] | None, bool]]] = {
    "default": [("a scenario's comparison", None, None, False), ("add's results", "add", None, False)],
    **{cat: [(f"{op}'s results", op, None, False)] for cat, op in OP_OF.items()},
    "matmul_backward": [("mm's gradients", "mm", oracle.gradient_categories(oracle.category("mm")), False)],
    "backward": [("add's gradients", "add", oracle.gradient_categories(oracle.category("add")), False),
                 ("mm's gradients", "mm", oracle.gradient_categories(oracle.category("mm")), False),
                 ("training", None, training.CATEGORIES, False),
                 ("gradient_checkpointing", None, gradient_checkpointing.CATEGORIES, False),
                 ("module_hooks", None, module_hooks.CATEGORIES, False)],
    "optimizer": [("foreach/fused optimizers", None, optimizers.CATEGORIES, False)],
    "compile": [("compile_modules", None, compile_modules.CATEGORIES, False),
                ("mm's results under --compile", "mm", None, True)],
    "quant_decode": [],  # the decoder suite's own comparison: test_quant_decode_override_allows_more_than_one_ulp
}
CASES = [(category, *reader) for category, readers in READERS.items() for reader in readers]


def test_every_accepted_category_has_a_reader():
    assert list(READERS) == list(vocabulary.TOLERANCE_CATEGORIES)
    assert not set(vocabulary.REFUSED_TOLERANCE_CATEGORIES) & set(vocabulary.TOLERANCE_CATEGORIES)


def _manifest(category: str, tolerance: dict[str, float]):
    raw = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
           "capabilities": {"inference": True}, "tolerance_overrides": {f"{category}:float32": tolerance}}
    return parse_manifest(raw)[0]


def _context(op_name: str | None, manifest, compiled: bool) -> CaseContext:
    op = find_op(op_name) if op_name is not None else None
    item = PlanItem("forward", op_name or "scenario", "function", "float32", 1)
    return CaseContext(item, op, torch.float32, Target("cpu", "eager" if compiled else None), manifest, 8, 1, 0)


def _matches(op_name: str | None, categories: tuple[str, ...] | None, compiled: bool, manifest) -> bool:
    """Whether a float32 result 5% off CPU's passes the engine's comparison (`CaseContext.assert_matches`)."""
    expected = torch.linspace(1.0, 2.0, 8)
    try:
        _context(op_name, manifest, compiled).assert_matches(expected * 1.05, expected, categories=categories)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("category, what, op_name, categories, compiled", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_an_override_of_the_category_changes_the_comparison(category, what, op_name, categories, compiled):
    assert not _matches(op_name, categories, compiled, None), f"{what} passes without an override"
    assert _matches(op_name, categories, compiled, _manifest(category, {"rtol": 0.1})), what
    unread = next(c for c in vocabulary.TOLERANCE_CATEGORIES
                  if c != "default" and c not in (categories or ()) and c != oracle.category(op_name or "")
                  and not (compiled and c == "compile"))
    assert not _matches(op_name, categories, compiled, _manifest(unread, {"rtol": 0.1})), (what, unread)


def test_the_most_specific_category_wins_in_the_engine():
    raw = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
           "capabilities": {"inference": True},
           "tolerance_overrides": {"float32": {"rtol": 0.1}, "backward:float32": {"rtol": 0.0, "atol": 0.0}}}
    manifest = parse_manifest(raw)[0]
    gradients = oracle.gradient_categories(oracle.category("add"))
    assert _matches("add", None, False, manifest)  # add's results: default's rtol
    assert not _matches("add", gradients, False, manifest)  # its gradients: backward's, tighter
    tol = oracle.tolerance(torch.float32, find_op("add"), manifest, "cpu", gradients)
    assert (tol.rtol, tol.atol, tol.source) == (0.0, 0.0, "manifest")


def test_quant_decode_override_allows_more_than_one_ulp():
    expected = torch.tensor([1.0, 2.0, 0.0])
    got = torch.tensor([1.05, 2.0, 0.0])  # far beyond one ULP of float32
    decoding = _manifest("quant_decode", {"rtol": 0.1}).tolerance_override(quantized_decoders.CATEGORIES,
                                                                            torch.float32)
    assert quantized_decoders.beyond_one_ulp(got, expected, torch.float32).tolist() == [True, False, False]
    assert not quantized_decoders.beyond_one_ulp(got, expected, torch.float32, decoding).any()
    unread = _manifest("backward", {"rtol": 0.1}).tolerance_override(quantized_decoders.CATEGORIES, torch.float32)
    assert unread is None
    nan = torch.tensor([float("nan")])
    assert quantized_decoders.beyond_one_ulp(torch.tensor([1.0]), nan, torch.float32, decoding).all()


def test_each_suite_hands_its_categories_to_every_comparison_it_makes():
    """The tables above read each suite's CATEGORIES; this ties them to the suites' own calls, so a suite that stopped
    passing them (its comparisons falling back to the op's category) fails here."""
    import ast
    import inspect

    for module in (training, gradient_checkpointing, module_hooks, optimizers,
                   compile_modules, quantized_decoders):
        # a suite on the scenario table compares through its rows' `Tolerance(categories=...)`
        calls = [node for node in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(node, ast.Call)
                 and (isinstance(node.func, ast.Attribute) and node.func.attr in ("assert_matches", "tolerance_override")
                      or isinstance(node.func, ast.Name) and node.func.id == "Tolerance")]
        assert calls, module.__name__
        for call in calls:
            name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
            given = {k.arg: k.value for k in call.keywords}.get("categories") if name != "tolerance_override" \
                else (call.args[0] if call.args else None)
            assert isinstance(given, ast.Name) and given.id == "CATEGORIES", (module.__name__, call.lineno)
