"""A scenario's program as source for `torchcts replay --export-script` (`cases.export`).

A scenario property states each scenario as a torch-only program (`torchcts.engine.programs`),
registered in `ScenarioItems.programs`. The exporter pastes the program's own source into the
reproduction script, so the program must be what it claims: a plain module-level function (no
closure, no decorator, not a lambda or a method) whose source is one `def`, that imports nothing,
declares no globals, touches no dunder attribute but `__name__`, and whose free names are `torch`,
`math` (bound to those modules where it was defined) and builtins other than those reaching files,
imports, code or namespaces (`UNSAFE_BUILTINS`). Anything else is refused naming the
property and the scenario. The program is installed, trusted code; this check keeps the pasted
source honest (it runs as the script's code) and gives the script's vocabulary check its names.
The case's values never pass through here: they reach the script through `ValueWriter` only.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap
from typing import Any

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.cases.export_compile import compile_call
from torchcts.cases.export_values import float_literal
from torchcts.cases.files import CaseFileError
from torchcts.engine import oracle

MODULES = {"torch": torch, "math": math}
# Builtins a program may not use: those that reach files, the terminal, imports, code objects or the
# interpreter's namespaces (every other builtin is pure Python: types, exceptions, getattr, len, ...).
UNSAFE_BUILTINS = frozenset({
    "__build_class__", "__import__", "__loader__", "__spec__", "breakpoint", "compile", "copyright", "credits",
    "delattr", "eval", "exec", "exit", "globals", "help", "input", "license", "locals", "memoryview", "open",
    "print", "quit", "setattr", "vars"})
SAFE_BUILTINS = frozenset(name for name in dir(builtins) if name not in UNSAFE_BUILTINS
                          and not (name.startswith("__") and name != "__name__"))
SAFE_DUNDER_ATTRIBUTES = frozenset({"__name__", "__qualname__"})  # type(exc).__name__: an error's kind
_REFUSED_NODES = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef, ast.AsyncFunctionDef,
                  ast.Await, ast.Yield, ast.YieldFrom)


@attrs.frozen
class ProgramSource:
    """A checked program: its source, its name, and the names, attributes and modules its code uses."""

    name: str
    source: str
    names: frozenset[str]
    attributes: frozenset[str]
    modules: tuple[str, ...]  # of MODULES, in that order: what the script imports besides torch


def program_source(spec: Any, scenario: str, where: str) -> ProgramSource:
    """The checked source of the program `spec` (a scenario PropertySpec) registers for `scenario`.

    Refused (`CaseFileError` on field "property", naming the property) when the scenario has no
    program, or its program is not a plain module-level torch-only function."""
    def refuse(why: str) -> CaseFileError:
        return CaseFileError(where, "property", f"{spec.name} scenario {scenario}: {why}; not exported "
                                                "(reproduce it with torchcts replay FILE --device D --manifest M)")

    program = spec.items.programs.get(scenario)
    if program is None:
        raise CaseFileError(where, "property", f"{spec.name} is a scenario property without a program for "
                                               f"{scenario} (ScenarioItems.programs): its check is suite code, not "
                                               "a torch call; reproduce it with torchcts replay FILE --device D "
                                               "--manifest M")
    if not inspect.isfunction(program) or program.__name__ == "<lambda>":
        raise refuse(f"the program {program!r} is not a function defined with def")
    if program.__qualname__ != program.__name__ or program.__code__.co_freevars:
        raise refuse(f"the program {program.__qualname__} is not a module-level function (a closure or nested)")
    try:
        source = textwrap.dedent(inspect.getsource(program))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError) as exc:
        raise refuse(f"the source of {program.__name__} cannot be read ({type(exc).__name__})") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != program.__name__ or tree.body[0].decorator_list:
        raise refuse(f"the source of {program.__name__} is not one undecorated def")
    problem = _code_problem(tree.body[0], program)
    if problem:
        raise refuse(problem)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | {program.__name__}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    free = _free_names(tree.body[0])
    return ProgramSource(program.__name__, source.rstrip() + "\n", frozenset(names), frozenset(attributes),
                         tuple(m for m in MODULES if m != "torch" and m in free))


def _code_problem(function: ast.FunctionDef, program: Any) -> str | None:
    """What in the program's code is more than torch-only code, or None."""
    for node in ast.walk(function):
        if isinstance(node, _REFUSED_NODES):
            return f"{program.__name__} uses {type(node).__name__.lower()} (line {node.lineno})"
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr not in SAFE_DUNDER_ATTRIBUTES:
            return f"{program.__name__} uses the attribute {node.attr} (line {node.lineno})"
        if isinstance(node, ast.Name) and node.id.startswith("__") and node.id != "__name__":
            return f"{program.__name__} uses the name {node.id} (line {node.lineno})"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_BUILTINS
                and any(isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("__")
                        for a in node.args[1:2])):
            return f"{program.__name__} reaches a dunder attribute through {node.func.id} (line {node.lineno})"
    parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs,
                                  *filter(None, (function.args.vararg, function.args.kwarg)))}
    shadowing = sorted((_bound_names(function) - parameters) & UNSAFE_BUILTINS)
    if shadowing:  # a name bound in an inner scope (lambda, comprehension) would hide a builtin everywhere below
        return f"{program.__name__} binds the builtin name {shadowing[0]}; rename it"
    for name in sorted(_free_names(function)):
        if name in MODULES:
            if program.__globals__.get(name) is not MODULES[name]:
                return f"{program.__name__} uses {name}, which is not the {name} module where it is defined"
        elif name not in SAFE_BUILTINS:
            return (f"{program.__name__} uses the name {name}, which is neither a local, torch, math nor a "
                    f"builtin that stays inside Python (no files, imports, code or namespaces)")
        elif name in program.__globals__ and program.__globals__[name] is not getattr(builtins, name, None):
            return (f"{program.__name__} uses {name}, which its module defines over the builtin: the script "
                    "would run the builtin")
    return None


_ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr"})


def _bound_names(function: ast.FunctionDef) -> set[str]:
    """Every name the function binds anywhere: parameters, assignments, loop and comprehension targets, lambdas."""
    bound: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.FunctionDef) and node is not function:
            bound.add(node.name)
    return bound


def _free_names(function: ast.FunctionDef) -> set[str]:
    """Names the function reads that nothing inside it binds (its parameters, assignments, loops, ...)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and node is not function:
            if isinstance(node, ast.FunctionDef):
                bound.add(node.name)
    return loaded - bound


# The scenario script's own vocabulary (scenario_script.py.jinja); the program adds its names and attributes,
# case values only names from torch's own tables (ValueWriter.names).
SCRIPT_NAMES = frozenset({
    "AssertionError", "BACKEND_IMPORT", "check_device", "could_not_run", "importlib", "one_line", "str", "text",
    "why", "DEVICE", "DEVICE_PROGRAM", "EXACT", "any", "Exception", "ITEM_DTYPE", "bad", "index",
    "first_bit_difference", "list", "nan", "repr", "PROGRAM", "STORAGES", "TOLERANCES",
    "__name__", "a", "abs", "actual", "actual_leaves", "actual_spec", "args", "atol", "base64", "bool",
    "bytearray", "complex", "data", "device", "differs", "dtype", "e", "elements", "enumerate", "exc", "expected",
    "expected_leaves", "expected_spec", "float", "i", "input", "inputs", "int", "isinstance", "kwargs", "len",
    "n", "print", "problem", "program", "raw", "rtol", "run", "s", "same", "slice", "storage", "sys", "t",
    "tolerance", "torch", "tuple", "type", "where", "x", "y", "zip", "Ellipsis"})
SCRIPT_ATTRIBUTES = frozenset({
    "import_module", "join", "split", "Size", "Tensor", "__name__", "_pytree", "any", "argv", "double", "is_complex", "is_floating_point", "isnan",
    "item", "nonzero", "resolve_conj", "resolve_neg", "signbit", "view_as_real", "as_strided", "assert_close", "b64decode", "clone", "compile",
    "cpu", "detach", "device", "dtype", "empty", "exit", "float64", "frombuffer", "get", "layout", "nested",
    "nested_tensor", "numel", "requires_grad_", "shape", "sparse_compressed_tensor", "sparse_coo_tensor",
    "stride", "strided", "testing", "to", "tree_flatten", "type", "uint8", "utils", "view", "zeros"})
SCRIPT_IMPORTS = frozenset({(None, "base64"), (None, "importlib"), (None, "sys"), (None, "torch")})


def scenario_code(spec: Any, case: Any, device: str, writer: Any) -> tuple[dict[str, Any], ProgramSource]:
    """The scenario template's code slots for `case` (a checked CorpusCase of scenario property `spec`)."""
    program = program_source(spec, case.op, case.path or case.short_id)
    if program.name in SCRIPT_NAMES:
        raise CaseFileError(case.path or case.short_id, "property",
                            f"{spec.name} scenario {case.op}: the program's name {program.name} is one the "
                            "script itself defines; not exported")
    dtype = writer.dtype(case.dtype, "dtype")
    tolerances = []
    for candidate in dtype_names.CLAIMABLE_DTYPES:
        tol = oracle.tolerance(candidate, None, None, case.device_type)
        if tol.rtol or tol.atol:
            writer.names.add(dtype_names.canonical_name(candidate))
            tolerances.append(f"{candidate}: ({float_literal(tol.rtol)}, {float_literal(tol.atol)})")
    on_device = "DEVICE_PROGRAM = PROGRAM"
    if case.backend:
        call, attributes = compile_call(case, "PROGRAM")
        writer.names.update(attributes)
        on_device = f"DEVICE_PROGRAM = {call}"
    inputs = case.positional_inputs()  # a scenario case's named parameters, in the program's order
    code = {"device": ascii(device), "dtype": str(dtype), "tolerances": tolerances,
            "exact": str(getattr(spec.items, "comparison", "tolerance") == "bits"),
            "modules": list(program.modules), "program": program.source, "name": program.name,
            "device_program": on_device,
            "storages": [writer.storage(s, i) for i, s in enumerate(case.storages)],
            "input": writer.value(inputs.get("input"), "inputs.input"),
            "args": writer.value(inputs.get("args", []), "inputs.args"),
            "kwargs": writer.value(inputs.get("kwargs", {"dict": {}}), "inputs.kwargs")}
    return code, program
