"""Suspects: the kernels a traced case (`triage.kernels`) points at, for grouping failures by them.

Each (family of a call's kernel, feature it saw) is a suspect; where a case shows no layout a call
could see, each kernel its op ran is one (`PLAIN`), and so where its special values are its
condition (`VALUES`, values are not traced). `clusters` picks one suspect per failure.
"""

from __future__ import annotations

import attrs

from torchcts.triage.families import kernel_stem, op_family
from torchcts.triage.kernels import Trace


@attrs.frozen
class Suspect:
    """A kernel family that saw a feature, or (with a `stem`) one kernel a plain case (`feature` PLAIN) or one
    whose special values are its condition (VALUES) ran; `overloads` are the calls (for the reader)."""

    family: str
    feature: str
    overloads: tuple[str, ...] = ()
    stem: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.family, self.feature, self.stem)


PLAIN = "plain"  # the feature of a plain case's suspects: each computing kernel it called
VALUES = "values"  # the feature of suspects of a case whose special values are its condition: each kernel it called


def suspects(trace: Trace, with_dtypes: bool) -> tuple[Suspect, ...]:
    """The (kernel family, feature) pairs the calls of `trace` show, in the order first seen; `mixed dtypes` only
    `with_dtypes` (inside composite ops mixed operands are routine; they point at promotion only where the
    failure is a dtype or the case itself mixes dtypes)."""
    found: dict[tuple[str, str], list[str]] = {}
    for overload, tensors, features in trace.calls:
        family = kernel_family(overload, tensors)
        for feature in features:  # a call without one is no suspect here (`kernel_suspects`)
            if feature != "mixed dtypes" or with_dtypes:
                names = found.setdefault((family, feature), [])
                if overload not in names:
                    names.append(overload)
    return tuple(Suspect(family, feature, tuple(names)) for (family, feature), names in found.items())


def kernel_suspects(trace: Trace, feature: str = PLAIN) -> tuple[Suspect, ...]:
    """Each kernel (`families.kernel_stem` of the overload: `sub` is `add`) the calls of `trace` ran, with its
    family, in the order first called, as a suspect of `feature` (PLAIN or VALUES): where a case shows no layout
    a call could see, a composite op's bug is in one of them. Conversions (`_to_copy`, `copy_`) are the glue of
    composite ops: suspects only where nothing else ran."""
    found: dict[tuple[str, str], list[str]] = {}
    for overload, tensors, _ in trace.calls:
        stem = kernel_stem(overload.removeprefix("aten."))
        names = found.setdefault((kernel_family(stem, tensors), stem), [])  # `minimum` is a reduction like `min`
        if overload not in names:
            names.append(overload)
    computing = {key: names for key, names in found.items() if key[0] != "conversion"}
    return tuple(Suspect(family, feature, tuple(names), stem) for (family, stem), names in (computing or found).items())


def kernel_family(overload: str, tensors: int) -> str:
    """The family (`families.op_family`) of an aten overload's name ("aten.sub.Tensor") or a kernel stem, leading
    underscores of internal kernels dropped (`_log_softmax` is a reduction like `log_softmax`)."""
    name = overload.removeprefix("aten.").split(".")[0]
    family = op_family(name, None, tensors)
    if family.startswith("elementwise") and name.startswith("_"):
        family = op_family(name.lstrip("_"), None, tensors)
    return family
