"""What an aten overload's schema says it writes: the tensors an in-place or `out=` call mutates, and the ones it
returns. The faulty device reads them to keep its wrappers' metadata in step with their CPU data and to return the
very tensors an in-place call mutated."""

from __future__ import annotations

from typing import Any


def written_tensors(func, args: tuple, kwargs: dict) -> list[Any]:
    """Every tensor the schema writes (`Tensor(a!) self`, `out=`, and each of a `Tensor(a!)[] out` list)."""
    found = []
    for position, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = kwargs[argument.name] if argument.name in kwargs else (
            args[position] if position < len(args) else None)
        found += list(value) if isinstance(value, (list, tuple)) else [value]
    return found


def mutated_outputs(func, args: tuple, kwargs: dict) -> Any:
    """For in-place and out= overloads, the argument tensors they return; otherwise None."""
    schema = func._schema
    written = [r.alias_info for r in schema.returns]
    if not written or not all(a is not None and a.is_write for a in written):
        return None
    by_alias = {}
    for position, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = kwargs[argument.name] if argument.name in kwargs else (
            args[position] if position < len(args) else None)
        for alias in argument.alias_info.after_set:
            by_alias[alias] = value
    outputs = tuple(by_alias.get(next(iter(a.after_set)), None) for a in written)
    if any(o is None for o in outputs):
        return None
    return outputs[0] if len(outputs) == 1 else outputs
