"""`torchcts replay --export-script CASE`: a standalone torch-only script that reproduces a case.

For a bug report: the script imports the case's `backend_import` module (the manifest's where the
case records none), holds the case's storages (base64), rebuilds every tensor with its sizes,
strides and offset, runs the op as the property did on the device and on CPU (or on the device
twice, for layout invariance), compares, and exits 1 REPRODUCED (a device that raises where CPU
does not included), 0 not reproduced, 2 could not run (the module does not import, the device is
not available, CPU itself raises), each one line (`script_templates/could_not_run.py.jinja`). The
script's frame is a jinja2 template (`script_templates/case_script.py.jinja`); this module only
writes the case-specific expressions. A scenario property without a program (suite code, not a torch
call) and a property whose check it cannot re-create are refused naming the property.

A case file is untrusted data, so nothing in it reaches the script as code. The template never
sees the case: it gets docstring text (`_inert`: printable ASCII, every quote, backslash and other
character escaped, so it reads as itself and cannot end the docstring) and code built by
`ValueWriter` (`cases.export_values`) from checked values only: integers by type, strings and
floats as literals, dtypes, layouts and memory formats by name from torch's own tables, the op from
the OpInfo catalog, the compile backend and device names from their allowed forms, the module name
(checked by `load_case`, or the manifest's here) as a string literal. Anything else is a `CaseFileError`
naming the file and the field. As a second line of defense the rendered script is parsed and must
use only its own vocabulary of names, attributes and imports.

A scenario property's case exports where its suite states the scenario as a program
(`ScenarioItems.programs`): the script (`script_templates/scenario_script.py.jinja`) holds the
program's checked source (`cases.export_program`), runs it on CPU and on the device and compares
the results; its vocabulary is the template's plus the names the program's own source uses.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import jinja2

from torchcts import dtypes as dtype_names
from torchcts.cases.files import CaseFileError, CorpusCase, module_name_problem
from torchcts.cases.export_compile import compile_call
from torchcts.cases.export_program import SCRIPT_ATTRIBUTES, SCRIPT_IMPORTS, SCRIPT_NAMES, scenario_code
from torchcts.cases.export_values import ValueWriter as _Writer, float_literal as _float, show as _show
from torchcts.core.case_limits import CaseLimits
from torchcts.engine import error_cause, oracle
from torchcts.cases.replay_items import checked_case, holds_error_input
from torchcts.plan import registry
from torchcts.plan.catalog import find_op

_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("torchcts.cases", "script_templates"),
                                keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
_I = "    "
_DEVICE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# Properties whose check the script re-creates by name (others are read from the registry: an in-place or
# out= variant, or OpInfo error inputs); a property that is none of these is not exportable.
_NAMED_CHECKS = ("forward", "backward", "layout")
_DESCRIPTION_CHARS, _FAILURE_CHARS, _SHORT_CHARS, _MESSAGE_CHARS = 4000, 300, 100, 400
# The script's own vocabulary (template and generated code); case values add names from torch's tables only.
_IMPORTS = {(None, "base64"), (None, "importlib"), (None, "re"), (None, "sys"), (None, "torch"),
            ("torch.testing._internal.common_methods_invocations", "op_db")}
_NAMES = {"ATOL", "AssertionError", "BACKEND_IMPORT", "DEVICE", "ERROR_REGEX", "Ellipsis", "Exception", "FN",
          "ORACLE_FN", "INPLACE_FN", "fn", "oracle",
          "IndexError", "NotImplementedError", "OP", "RTOL", "RuntimeError", "STORAGES", "TypeError", "ValueError",
          "__name__", "a", "check_device", "compared", "could_not_run", "cpu_error", "importlib", "one_line", "re",
          "rejection_problem", "specific", "str", "text", "why",
          "actual", "any", "args", "base64", "bytearray", "complex", "cotangents", "data", "device", "dtype", "e",
          "enumerate", "exc", "expected", "float", "g", "grads", "i", "input", "inputs", "isinstance", "kwargs",
          "leaves", "len", "list", "n", "next", "o", "op_db", "out", "outputs", "plain", "print", "problem", "raw",
          "run", "s", "same", "slice", "storage", "sys", "t", "torch", "tuple", "type", "what", "x", "y", "zip"}
# compile_cause.py.jinja (the op's refusal behind torch.compile's wrappers) and, in a scenario script, cpus_own_refusal
_CAUSE_NAMES = {"BaseException", "COMPILER_MODULES", "DISPATCH", "MAX_DEPTH", "OP_CODE", "OP_RAISED_BREAKS",
                "TORCH_ROOT", "TRACERS", "cause_of", "filename", "first", "frames", "getattr", "inner", "is_a",
                "is_compiler_error", "klass", "module", "name", "path", "raised_by_traced_op", "range", "relative",
                "seen", "tb", "torch_relative", "unwrapped"}
_CAUSE_ATTRIBUTES = {"__cause__", "__context__", "__file__", "__module__", "__mro__", "__name__", "__traceback__",
                     "append", "co_filename", "f_code", "inner_exception", "replace", "rsplit", "startswith",
                     "tb_frame", "tb_next"}
_OWN_REFUSAL_NAMES = {"IndexError", "REFERENCE_PROGRAM", "TypeError", "ValueError", "cause", "cpus_own_refusal",
                      "first_line", "leaf", "names", "object", "raised", "recorded", "reference", "specific"}
_OWN_REFUSAL_ATTRIBUTES = {"splitlines", "strip", "tree_leaves"}
_NAMES |= _CAUSE_NAMES
_ATTRIBUTES = {"Generator", "Size", "Tensor", "__name__", "_pytree", "argv", "as_strided", "assert_close", "autograd",
               "error", "import_module", "join", "search", "split",
               "b64decode", "clone", "compile", "contiguous", "cpu", "detach", "device", "dtype", "empty", "exit",
               "float64", "frombuffer", "grad", "inplace_variant", "is_complex", "is_floating_point", "is_nested",
               "layout", "manual_seed", "name", "nested", "nested_tensor", "numel", "op", "rand", "requires_grad",
               "requires_grad_", "shape", "sparse_compressed_tensor", "sparse_coo_tensor", "stride", "strided",
               "testing", "to", "tree_leaves", "tree_map_only", "type", "uint8", "utils", "variant_test_name", "view",
               "zeros", "zeros_like"} | _CAUSE_ATTRIBUTES


def export_script(path: Path | str, device: str | None = None, limits: CaseLimits = CaseLimits(),
                  manifest_backend_import: str | None = None) -> str:
    """The reproduction script for the case file at `path` (on `device`, default its own).

    The script imports the case's `backend_import` module first, or where the case records none (a case
    stored before cases recorded it) `manifest_backend_import`, the manifest's. The case is read and
    decoded within `limits`, as a replay would; the script builds no more."""
    try:
        return _export(checked_case(path, limits), device, limits, manifest_backend_import)
    except CaseFileError as exc:  # one line of ASCII, whatever the case's keys and values hold
        message = str(exc).split(f": {exc.field}: ", 1)[-1]
        raise CaseFileError(_ascii_line(str(exc.path)), _ascii_line(exc.field),
                            _ascii_line(message[:_MESSAGE_CHARS])) from None


def _export(case: CorpusCase, device: str | None, limits: CaseLimits, manifest_backend_import: str | None) -> str:
    writer = _Writer(case)
    # the user's manifest wins over the case's (untrusted) name: a case file never picks a module the user has
    # not chosen when a manifest names one
    backend_import = manifest_backend_import or case.backend_import
    problem = None if backend_import is None else module_name_problem(backend_import)
    if problem is not None:  # load_case checked the case's; this is the manifest's
        writer.fail("--manifest backend_import" if manifest_backend_import else "backend_import", problem)
    if not _DEVICE.fullmatch(case.device_type):
        writer.fail("device_type", f"{_show(case.device_type)} is not a device type (like cpu, cuda, cuda:1)")
    if device is not None and not (isinstance(device, str) and _DEVICE.fullmatch(device)):
        writer.fail("--device", f"{_show(device)} is not a device (like cpu, cuda, cuda:1)")
    kind = _script_kind(case)
    template, names, imports = "case_script.py.jinja", frozenset(), frozenset()
    try:
        if kind == "scenario":  # the suite's program, pasted from its checked source (`cases.export_program`)
            code, program = scenario_code(registry.get(case.property), case, device or case.device_type, writer)
            template, names = "scenario_script.py.jinja", SCRIPT_NAMES | program.names
            writer.names.update(SCRIPT_ATTRIBUTES | program.attributes)
            imports = SCRIPT_IMPORTS | {(None, module) for module in program.modules}
            code.update(_own_refusal_code(case, writer))
            if code["compiled"]:
                names |= _CAUSE_NAMES | _OWN_REFUSAL_NAMES
        else:
            code = _code(case, kind, find_op(case.op), device or case.device_type, writer)
        code["backend_import"] = ascii(backend_import)  # a checked module name, as a literal (or None)
        case.sample(limits)  # the replay's own checks too: sizes within limits, views within storages, sparse
    except RecursionError:
        writer.fail("inputs", "nested too deeply")
    script = _TEMPLATES.get_template(template).render(text=_text(case, device, backend_import), code=code)
    problem = _vocabulary_problem(script, writer.names, names, imports)
    if problem:  # a case value got past the checks: refuse rather than hand out code
        writer.fail("(script)", f"{problem}; not exported")
    return script


def _own_refusal_code(case: CorpusCase, writer: "_Writer") -> dict[str, Any]:
    """A compile scenario script's slots for telling CPU's own refusal (`cpus_own_refusal`, as
    `engine.programs.device_result`): the unwrapper's rules and the program under torch.compile(backend="eager")."""
    import attrs

    if not case.backend:
        return {"compiled": False}
    reference, attributes = compile_call(attrs.evolve(case, backend="eager"), "PROGRAM")
    writer.names.update(attributes | _CAUSE_ATTRIBUTES | _OWN_REFUSAL_ATTRIBUTES)
    return {"compiled": True, "cause": error_cause.rules_as_literals(), "reference_program": reference}


def _script_kind(case: CorpusCase) -> str:
    """What the script runs for the case's property: scenario, inplace, out, errors, or a name in `_NAMED_CHECKS`."""
    spec = registry.get(case.property)
    where = case.path or case.short_id
    if spec.scenario:  # exportable where the suite states the scenario as a program (`program_source` refuses)
        return "scenario"
    if spec.variant in ("inplace", "out"):
        return spec.variant
    if holds_error_input(case):
        return "errors"
    if case.property in _NAMED_CHECKS:
        return case.property
    raise CaseFileError(where, "property", f"export supports {', '.join(_NAMED_CHECKS)}, in-place and out= variant "
                                           f"properties and error-input properties (draws=False); "
                                           f"{case.property} is not exportable")


def _code(case: CorpusCase, kind: str, op: Any, device: str, writer: "_Writer") -> dict[str, Any]:
    """The template's code slots: literals and expressions, each written from checked values."""
    tol = oracle.tolerance(dtype_names.lookup(case.dtype), op, None, case.device_type)
    fn, inplace, imports = _callable(op, case, kind)
    writer.names.update(op.name.split("."), re.findall(r"input\.(\w+)\(", inplace))
    # FN is what the device runs, ORACLE_FN what CPU's reference runs: the eager op, also for a compile case (on cpu
    # both run on one device, and only the compiled function may differ)
    fn_line = f"FN = {fn}\nORACLE_FN = FN"
    compiled_inplace = ""
    if case.backend:
        call, attributes = compile_call(case, "ORACLE_FN")
        writer.names.update(attributes)
        fn_line = f"ORACLE_FN = {fn}\nFN = {call}"
        if kind == "inplace":  # the in-place call itself is what the engine compiles
            call, _ = compile_call(case, f"lambda input, *args, **kwargs: {inplace}")
            compiled_inplace = f"INPLACE_FN = {call}"
            fn_line += f"\n{compiled_inplace}"
    run_body, main_body = _bodies(kind, inplace, compiled_inplace=bool(compiled_inplace))
    return {"device": ascii(device), "rtol": _float(tol.rtol), "atol": _float(tol.atol),
            "imports": f"{imports}{fn_line}\n", "run_body": run_body, "main_body": main_body,
            "storages": [writer.storage(s, i) for i, s in enumerate(case.storages)],
            "input": writer.value(case.inputs.get("input"), "inputs.input"),
            "args": writer.value(case.inputs.get("args", []), "inputs.args"),
            "kwargs": writer.value(case.inputs.get("kwargs", {"dict": {}}), "inputs.kwargs"),
            "compare_strides": repr(kind in ("inplace", "out") or (
                kind == "forward" and oracle.strides_defined(op.name))),
            "errors": kind == "errors", "error_regex": _error_regex(case) if kind == "errors" else "''",
            # a compile case's errors check compares the op's refusal behind torch.compile's wrappers, as the engine
            "compiled": kind == "errors" and bool(case.backend), "cause": error_cause.rules_as_literals()}


def _error_regex(case: CorpusCase) -> str:
    """The errors check's message regex as a literal: the case's OpInfo regex where it names no device or kernel
    and the case ran on eager kernels (torch.compile's tracing words its checks its own way), else ''."""
    # the suites, hypothesis and the strategies: only an error-input case needs them
    from torchcts.properties.suites.errors import names_no_backend

    regex = case.inputs.get("error_regex", "")
    if not isinstance(regex, str):
        _Writer(case).fail("inputs.error_regex", f"expected a string, got {_show(regex)}")
    return ascii(regex if case.backend is None and names_no_backend(regex) else "")


def _text(case: CorpusCase, device: str | None, backend_import: str | None) -> dict[str, str]:
    """The docstring's fields, each made inert (`_inert`)."""
    message = case.failure.get("message")
    failure = (_plain(message).splitlines() or [""])[0][:_FAILURE_CHARS] if message else ""
    description = case.description[:_DESCRIPTION_CHARS].splitlines()
    fields = {"short_id": case.short_id, "property": case.property, "op": case.op, "variant": case.variant,
              "dtype": dtype_names.canonical_name(dtype_names.lookup(case.dtype)), "device_type": case.device_type,
              "backend": case.backend or "", "device": device or case.device_type,
              "backend_import": backend_import or "",
              "torch": _plain(case.found.get("torch", "?")),
              # the compile leg that first showed it (`engine.blame`): dynamo, aot, backend, ...
              "leg": case.failure.get("leg") if isinstance(case.failure.get("leg"), str) else ""}
    return {**{key: _inert(value[:_SHORT_CHARS if key != "backend_import" else None])
               for key, value in fields.items()},
            "description": "\n".join(_inert(line) for line in description), "failure": _inert(failure)}


def _inert(text: str) -> str:
    """`text` as docstring text that reads as itself and cannot end the docstring or its line.

    Printable ASCII stays; quotes and backslashes are escaped, every other character (newlines,
    NUL, line separators, terminal escapes, non-ASCII) becomes its Python escape.
    """
    return _ascii_line(text, escape="\"\\")


def _ascii_line(text: str, escape: str = "") -> str:
    """`text` as one line of printable ASCII: other characters, and those in `escape`, as Python escapes."""
    return "".join("\\" + ch if ch in escape else ch if " " <= ch <= "~" else ascii(ch)[1:-1] for ch in text)


def _plain(value: Any) -> str:
    """A text field as text (a non-string is shown, not converted: its `str` may be unbounded)."""
    return value if isinstance(value, str) else _show(value)


def _callable(op: Any, case: CorpusCase, kind: str) -> tuple[str, str, str]:
    """(the op's function form, the in-place call for `inplace` cases, lines importing what they need)."""
    import torch

    if not _DOTTED_NAME.fullmatch(op.name):  # the catalog's names are torch's own; never paste anything else
        raise CaseFileError(case.path or case.short_id, "op", f"OpInfo name {_show(op.name)} is not a name")
    target: Any = torch
    for part in op.name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    public = target is not None and target is op.op
    inplace = ""
    if kind == "inplace":
        if op.inplace_variant is None:
            raise CaseFileError(case.path or case.short_id, "property",
                                f"{case.property} is in-place, but {op.name} has no in-place variant "
                                f"in this torch")
        variant = op.inplace_variant
        name = getattr(variant, "__name__", None)  # a Tensor method, or a lambda or partial
        method = isinstance(name, str) and name.isidentifier() and getattr(torch.Tensor, name, None) is variant
        inplace = f"input.{name}(*args, **kwargs)" if method else "OP.inplace_variant(input, *args, **kwargs)"
    if public and not inplace.startswith("OP."):
        return f"torch.{op.name}", inplace, ""
    lookup = (f"from torch.testing._internal.common_methods_invocations import op_db  # {op.name}: "
              f"{'the in-place variant is' if public else 'no public torch.' + op.name + ' function; it is'} "
              f"taken from torch's OpInfo\nOP = next(o for o in op_db if o.name == {ascii(op.name)} and "
              f"o.variant_test_name == {ascii(op.variant_test_name)})\n")
    return f"torch.{op.name}" if public else "OP.op", inplace, lookup


def _bodies(kind: str, inplace: str, compiled_inplace: bool = False) -> tuple[str, str]:
    """(the body of `run(device, plain, oracle)`, the body of the main block) for the kind of check (`_script_kind`).
    `oracle` runs CPU's reference: the eager op, where the device runs a compiled one."""
    call = "fn(input, *args, **kwargs)"
    if kind == "inplace":
        run = ["input, args, kwargs = inputs(device)"]
        run += [f"if oracle:", f"{_I}{inplace}", "else:", f"{_I}INPLACE_FN(input, *args, **kwargs)"] \
            if compiled_inplace else [inplace]
        run.append("return input")
    elif kind == "out":
        run = ["input, args, kwargs = inputs(device)",
               "out = torch.utils._pytree.tree_map_only(torch.Tensor, torch.zeros_like, fn(input, *args, **kwargs))",
               "fn(input, *args, **kwargs, out=out)", "return out"]
    elif kind == "backward":
        run = ["input, args, kwargs = inputs(device)",
               "leaves = [t for t in torch.utils._pytree.tree_leaves([input, args, kwargs])",
               "          if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]",
               "for t in leaves:", f"{_I}t.requires_grad_(True)",
               f"outputs = [t for t in torch.utils._pytree.tree_leaves({call}) if isinstance(t, torch.Tensor) "
               "and t.requires_grad]",
               "cotangents = [(torch.rand(o.shape, generator=torch.Generator().manual_seed(i), dtype=torch.float64)"
               " * 4 - 2).to(o.dtype).to(o.device) for i, o in enumerate(outputs)]",
               "grads = torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)",
               "return [o.detach() for o in outputs] + [torch.zeros_like(x) if g is None else g "
               "for x, g in zip(leaves, grads)]"]
    elif kind == "layout":
        run = ["input, args, kwargs = inputs(device)", "if plain:",
               f"{_I}input, args, kwargs = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.contiguous() "
               "if t.layout == torch.strided and not t.is_nested else t, (input, args, kwargs))",
               f"return {call}"]
    else:
        run = ["input, args, kwargs = inputs(device)", f"return {call}"]
    if kind != "inplace":
        run.insert(0, "fn = ORACLE_FN if oracle else FN")
    body = "\n".join(f"{_I}{line}" for line in run)
    cpu_raises = ["except Exception as exc:",
                  f"{_I}could_not_run(f'CPU itself raises on this case: {{one_line(exc)}}')"]
    device_raises = ["except Exception as exc:",
                     f"{_I}print(f'REPRODUCED on {{DEVICE}}: it raises where CPU does not: {{one_line(exc)}}')",
                     f"{_I}sys.exit(1)"]
    if kind == "layout":  # both runs are the device's; CPU must run the case both ways for it to mean anything
        main = ["try:", f"{_I}run('cpu', oracle=True)", f"{_I}run('cpu', plain=True, oracle=True)", *cpu_raises,
                "try:", f"{_I}problem = same(run(DEVICE), run(DEVICE, plain=True), 're-laid-out input, output')",
                *device_raises, *_verdict()]
    elif kind == "errors":  # as the errors property: the device must reject the input as CPU does
        main = ["try:", f"{_I}run('cpu', oracle=True)", "except Exception as exc:", f"{_I}cpu_error = exc", "else:",
                f"{_I}could_not_run('CPU accepts this error input; the case needs CPU to reject it')",
                "try:", f"{_I}run(DEVICE)", "except Exception as exc:",
                f"{_I}problem = rejection_problem(cpu_error, exc)",
                f"{_I}if problem:",
                f"{_I}{_I}print(f'REPRODUCED on {{DEVICE}}: it rejects the input differently: {{problem}} "
                f"({{one_line(exc)}}; CPU: {{one_line(cpu_error)}})')", f"{_I}{_I}sys.exit(1)",
                f"{_I}print(f'not reproduced on {{DEVICE}}: it rejects the input as CPU does ({{one_line(exc)}})')",
                f"{_I}sys.exit(0)",
                "print(f'REPRODUCED on {DEVICE}: it accepts an input CPU rejects ({one_line(cpu_error)})')",
                "sys.exit(1)"]
    else:
        main = ["try:", f"{_I}expected = run('cpu', oracle=True)", *cpu_raises,
                "try:", f"{_I}problem = same(run(DEVICE), expected, 'output')", *device_raises, *_verdict()]
    return body, "\n".join(f"{_I}{line}" for line in main)


def _verdict() -> list[str]:
    return ["if problem:", f"{_I}print(f'REPRODUCED on {{DEVICE}}: {{problem}}')", f"{_I}sys.exit(1)",
            "print(f'not reproduced on {DEVICE}: results agree')", "sys.exit(0)"]


def _vocabulary_problem(script: str, extra: set[str], names: frozenset[str] = frozenset(),
                        imports: frozenset[tuple[str | None, str]] = frozenset()) -> str | None:
    """What in `script` is not the template's own code (imports, names, attributes; `extra` attributes also
    allowed). `names` and `imports`, when given, are the scenario template's and its program's instead."""
    allowed_names, allowed_imports = names or _NAMES, imports or _IMPORTS
    allowed_attributes = frozenset() if names else _ATTRIBUTES
    try:
        tree = ast.parse(script)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"it would not be valid Python ({type(exc).__name__}: {_show(str(exc))})"
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found = {(getattr(node, "module", None), alias.name) for alias in node.names}
            if not found <= allowed_imports:
                return f"it would import {_show(sorted(name for _, name in found))}, which the template does not"
        elif isinstance(node, ast.Name) and node.id not in allowed_names:
            return f"it would use the name {_show(node.id)}, which the template does not"
        elif isinstance(node, ast.Attribute) and node.attr not in allowed_attributes and node.attr not in extra:
            return f"it would use the attribute {_show(node.attr)}, which the template does not"
    return None
