"""`torchcts replay --export-script CASE`: a standalone torch-only script that reproduces a case.

For a bug report: the script holds the case's storages (base64), rebuilds every tensor with its
sizes, strides and offset, runs the op as the property did on the device and on CPU (or on the
device twice, for layout invariance), compares, and exits 1 when the failure reproduces. The
script's frame is a jinja2 template (`script_templates/case_script.py.jinja`); this module only
writes the case-specific expressions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from torchcts import dtypes as dtype_names
from torchcts.case_files import CaseFileError, CorpusCase
from torchcts.replay import checked_case

_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("torchcts", "script_templates"),
                                keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
_I = "    "


def export_script(path: Path | str, device: str | None = None) -> str:
    """The reproduction script for the case file at `path` (on `device`, default its own)."""
    from torchcts import oracle
    from torchcts.opinfo_catalog import find_op

    case = checked_case(path)
    op = find_op(case.op)
    dtype = dtype_names.lookup(case.dtype)
    tol = oracle.tolerance(dtype, op, None, case.device_type)
    fn, imports = _callable(op, case)
    if case.backend:
        fn_line = f"FN = torch.compile({fn}, backend={case.backend!r})"
    else:
        fn_line = f"FN = {fn}"
    body, main = _bodies(case, op)
    return _TEMPLATES.get_template("case_script.py.jinja").render(
        case=case, device=device or case.device_type, rtol=tol.rtol, atol=tol.atol,
        failure_line=str(case.failure.get("message", "")).splitlines()[0][:300] if case.failure.get("message") else "",
        imports=f"{imports}{fn_line}\n", storages=[_storage(s, i, case) for i, s in enumerate(case.storages)],
        input=_expr(case.inputs.get("input"), case), args=_expr(case.inputs.get("args", []), case),
        kwargs=_expr(case.inputs.get("kwargs", {"dict": {}}), case), run_body=body, main_body=main,
        compare_strides=case.property in ("inplace", "out") or (case.property == "forward"
                                                                and oracle.strides_defined(op.name)))


def _callable(op: Any, case: CorpusCase) -> tuple[str, str]:
    """(an expression for the op's function form, lines to import what it needs)."""
    import torch

    target: Any = torch
    for part in op.name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    if target is not None and target is op.op:
        return f"torch.{op.name}", ""
    lookup = (f"from torch.testing._internal.common_methods_invocations import op_db  # {op.name} has no public "
              f"torch.{op.name}\nOP = next(o for o in op_db if o.name == {op.name!r} and o.variant_test_name == "
              f"{op.variant_test_name!r})\n")
    return "OP.op", lookup


def _storage(raw: dict[str, Any], index: int, case: CorpusCase) -> str:
    dtype = _dtype(raw.get("dtype"), f"storages[{index}].dtype", case)
    if raw.get("base64") is None:
        return f"torch.zeros({int(raw.get('elements', 0))}, dtype={dtype})"
    return f"storage({dtype}, {int(raw.get('elements', 0))}, {json.dumps(raw['base64'])})"


def _dtype(name: Any, field: str, case: CorpusCase) -> str:
    dtype = dtype_names.lookup(name) if isinstance(name, str) else None
    if dtype is None:
        raise CaseFileError(case.path or case.short_id, field, f"unknown dtype {name!r}")
    return str(dtype)


def _expr(data: Any, case: CorpusCase, field: str = "inputs") -> str:
    """A Python expression rebuilding an encoded value (tensors from `s`, the storages on the device)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return repr(data)
    if isinstance(data, list):
        return "[" + ", ".join(_expr(v, case, field) for v in data) + "]"
    if not isinstance(data, dict) or not data:
        raise CaseFileError(case.path or case.short_id, field, f"unreadable value {data!r}")
    if "tensor" in data:
        return _tensor_expr(data, case, field)
    (kind, payload), = data.items()
    if kind == "int":
        return str(int(payload))
    if kind == "float":
        value = float.fromhex(payload)
        return repr(value) if value == value and abs(value) != float("inf") else f"float({str(value)!r})"
    if kind == "complex":
        return f"complex(float.fromhex({payload[0]!r}), float.fromhex({payload[1]!r}))"
    if kind == "dtype":
        return _dtype(payload, field, case)
    if kind == "device":
        return "torch.device(device)"
    if kind in ("memory_format", "layout"):
        return f"torch.{payload}"
    if kind == "size":
        return f"torch.Size({list(payload)})"
    if kind == "slice":
        return "slice(" + ", ".join(_expr(v, case, field) for v in payload) + ")"
    if kind == "ellipsis":
        return "Ellipsis"
    if kind == "tuple":
        return "(" + "".join(_expr(v, case, field) + ", " for v in payload) + ")"
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_expr(v, case, f'{field}.{k}')}" for k, v in payload.items()) + "}"
    raise CaseFileError(case.path or case.short_id, field, f"unknown value kind {kind!r}")


def _tensor_expr(data: dict[str, Any], case: CorpusCase, field: str) -> str:
    kind = data.get("tensor")
    grad = ".requires_grad_()" if data.get("requires_grad") else ""
    if kind == "strided":
        view = f"s[{int(data['storage'])}].as_strided({list(data['sizes'])}, {list(data['strides'])}, " \
               f"{int(data['storage_offset'])})"
        return view + (".to('meta')" if data.get("device") == "meta" else "") + grad
    if kind == "nested":
        parts = ", ".join(_tensor_expr(c, case, field) for c in data["components"])
        return f"torch.nested.nested_tensor([{parts}], layout=torch.{data['nested_layout']})"
    if kind == "sparse_coo":
        return (f"torch.sparse_coo_tensor({_tensor_expr(data['indices'], case, field)}, "
                f"{_tensor_expr(data['values'], case, field)}, {list(data['sizes'])}, "
                f"is_coalesced={bool(data['coalesced'])})")
    if kind in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        return (f"torch.sparse_compressed_tensor({_tensor_expr(data['compressed_indices'], case, field)}, "
                f"{_tensor_expr(data['plain_indices'], case, field)}, {_tensor_expr(data['values'], case, field)}, "
                f"{list(data['sizes'])}, layout=torch.{kind})")
    raise CaseFileError(case.path or case.short_id, f"{field}.tensor", f"unknown tensor kind {kind!r}")


def _bodies(case: CorpusCase, op: Any) -> tuple[str, str]:
    """(the body of `run(device)`, the body of the main block) for the case's property."""
    call = "FN(input, *args, **kwargs)"
    if case.property == "inplace":
        name = getattr(op.inplace_variant, "__name__", f"{op.name}_")
        run = [f"input, args, kwargs = inputs(device)", f"input.{name}(*args, **kwargs)", "return input"]
    elif case.property == "out":
        run = ["input, args, kwargs = inputs(device)",
               "out = torch.utils._pytree.tree_map_only(torch.Tensor, torch.zeros_like, FN(input, *args, **kwargs))",
               "FN(input, *args, **kwargs, out=out)", "return out"]
    elif case.property == "backward":
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
    elif case.property == "layout":
        run = ["input, args, kwargs = inputs(device)", "if plain:",
               f"{_I}input, args, kwargs = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.contiguous() "
               "if t.layout == torch.strided and not t.is_nested else t, (input, args, kwargs))",
               f"return {call}"]
    else:
        run = ["input, args, kwargs = inputs(device)", f"return {call}"]
    body = "\n".join(f"{_I}{line}" for line in run)
    if case.property == "layout":
        main = ["problem = same(run(DEVICE), run(DEVICE, plain=True), 're-laid-out input, output')", *_verdict()]
    elif case.property == "errors":
        main = ["try:", f"{_I}run('cpu')", "except Exception as exc:",
                f"{_I}print(f'CPU rejects the input: {{type(exc).__name__}}: {{exc}}')", "else:",
                f"{_I}print('CPU accepts this input: nothing to reproduce')", f"{_I}sys.exit(0)",
                "try:", f"{_I}run(DEVICE)", "except Exception as exc:",
                f"{_I}print(f'not reproduced: {{DEVICE}} rejects it too ({{type(exc).__name__}})')", f"{_I}sys.exit(0)",
                "print(f'REPRODUCED: {DEVICE} accepts an input CPU rejects')", "sys.exit(1)"]
    else:
        main = ["expected = run('cpu')", "actual = run(DEVICE)", "problem = same(actual, expected, 'output')"]
        main += _verdict()
    return body, "\n".join(f"{_I}{line}" for line in main)


def _verdict() -> list[str]:
    return ["if problem:", f"{_I}print(f'REPRODUCED on {{DEVICE}}: {{problem}}')", f"{_I}sys.exit(1)",
            "print(f'not reproduced on {DEVICE}: results agree')"]
