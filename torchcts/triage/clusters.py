"""Failures grouped by root-cause signature: (op family, kind, condition) -> a cluster.

The signature is what one kernel bug has in common across the items it breaks: the family of the
op, the kind of failure, and the notable features of the shrunk case (layout, size class, special
values, mixed dtypes). The item's own dtype is not in the signature, so one bug seen in float32 and
int32 is one cluster; the dtypes a cluster spans are listed under what differs inside it. A
cluster's representative is its failure with the smallest shrunk case (fewest tensor elements;
failures without a case come last, then those without a repro script).
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

from torchcts.triage.classify import KINDS
from torchcts.triage.conditions import NOTABLE_SIZES, Condition
from torchcts.triage.families import kernel_stem
from torchcts.triage.suspects import PLAIN, Suspect

_DIFFER_FIELDS = ("family", "op", "property", "dtype", "variant", "outcome")
SIZE_FEATURES = frozenset(NOTABLE_SIZES)


@attrs.frozen
class Failure:
    """One failing record, classified, with its condition and what reproduces it."""

    item: str
    property: str
    op: str
    variant: str
    dtype: str
    outcome: str
    kind: str
    evidence: str
    family: str
    condition: Condition
    error_line: str = ""
    case: str | None = None  # the corpus case file, as the record names it
    replay: str | None = None
    repro: str | None = None  # the repro script written for it (crashed and timed_out items)
    suspects: tuple[Suspect, ...] = ()  # the kernels inside the op that saw a feature, or ran (`triage.kernels`)
    leg: str = ""  # the compile leg that first shows it (`engine.blame`: dynamo, aot, backend, ...); "" when not blamed

    @property
    def signature(self) -> tuple[str, str, str]:
        """(family, kind, condition); a case that shows no condition names its op's kernel instead (`families.
        kernel_stem`: `sub` is `add`): the op is then the most specific evidence there is."""
        condition = self.condition
        if condition.known and condition.root is None and condition.kernel is not None:  # a traced kernel
            return (self.family, self.kind, f"{condition.describe()}, op {condition.kernel}")
        if condition.known and not condition.features and condition.root is None:
            return (self.family, self.kind, f"plain, op {kernel_stem(self.op)}")
        return (self.family, self.kind, condition.describe())

    def as_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["condition"] = self.condition.as_json()
        data["suspects"] = [attrs.asdict(s) for s in self.suspects]
        return data


@attrs.frozen
class Cluster:
    family: str
    kind: str
    condition: str
    failures: tuple[Failure, ...]

    @property
    def count(self) -> int:
        return len(self.failures)

    @property
    def representative(self) -> Failure:
        return min(self.failures, key=_smallness)

    def differs(self) -> dict[str, list[str]]:
        """The fields whose values vary inside the cluster, with those values (sorted)."""
        found = {}
        for name in _DIFFER_FIELDS:
            values = sorted({getattr(f, name) for f in self.failures})
            if len(values) > 1:
                found[name] = values
        dtypes = sorted({", ".join(f.condition.dtypes) for f in self.failures if f.condition.dtypes})
        if len(dtypes) > 1:
            found["case dtypes"] = dtypes
        conditions = sorted({f.condition.describe() for f in self.failures})
        if len(conditions) > 1:
            found["condition"] = conditions
        legs = sorted({f.leg or "none" for f in self.failures})
        if len(legs) > 1:
            found["leg"] = legs  # dynamo, aot or the backend: a cluster that spans legs may hold more than one cause
        inputs = sorted({", ".join(f.condition.inputs) or "plain" for f in self.failures
                         if f.condition.inputs is not None})
        if len(inputs) > 1:
            found["input condition"] = inputs  # where the output's layout or a kernel's call stands for the condition
        kernels = sorted({name for f in self.failures for name in f.condition.kernels})
        if kernels:
            found["kernels"] = kernels  # the aten calls that saw the condition (listed even when one)
        return found

    @property
    def legs(self) -> list[str]:
        """The compile legs its failures were blamed on (`engine.blame`), sorted; empty for an eager run."""
        return sorted({f.leg for f in self.failures if f.leg})

    def as_json(self) -> dict[str, Any]:
        return {"family": self.family, "kind": self.kind, "condition": self.condition, "count": self.count,
                "legs": self.legs,
                "representative": self.representative.as_json(), "differs": self.differs(),
                "items": [f.item for f in self.failures]}


def _merge_supersets(by_signature: dict[tuple[str, str, str], list[Failure]]
                     ) -> dict[tuple[str, str, str], list[Failure]]:
    features = {key: frozenset(members[0].condition.features) for key, members in by_signature.items()
                if members[0].condition.known and members[0].condition.features and members[0].condition.root is None}
    # a traced kernel's condition joins one of the same kernel, or one of the family's (no kernel), not another's
    kernel = {key: by_signature[key][0].condition.kernel for key in features}
    specific = {key for key, found in features.items() if not found <= SIZE_FEATURES}  # a size alone explains little
    merged: dict[tuple[str, str, str], list[Failure]] = {}
    for key, members in by_signature.items():
        own = features.get(key)
        smaller = [other for other, theirs in features.items() if own is not None and other[:2] == key[:2]
                   and theirs < own and other in specific and kernel[other] in (None, kernel[key])]
        # the smallest such condition (the same kernel's first, fewest features, then by name): minimal, so nothing
        # smaller holds it
        target = min(smaller, key=lambda other: (kernel[other] != kernel[key], len(features[other]), other)) \
            if smaller else key
        merged.setdefault(target, []).extend(members)
    return merged


def _merge_shared_kernels(by_signature: dict[tuple[str, str, str], list[Failure]]
                          ) -> dict[tuple[str, str, str], list[Failure]]:
    """Signatures of one kind and one condition in different families join when a kernel (`kernel_stem`) has
    failures in both: `amax` (reduction) and `maximum` (elementwise) dropping NaN are max's one NaN rule. The
    joined cluster keeps the family with the most failures; the others are listed under what differs."""
    joinable = [key for key, members in by_signature.items()
                if members[0].condition.known and members[0].condition.features and members[0].condition.root is None]
    stems = {key: {f.condition.kernel or kernel_stem(f.op) for f in by_signature[key]} for key in joinable}
    parent = {key: key for key in joinable}

    def root(key: tuple[str, str, str]) -> tuple[str, str, str]:
        while parent[key] != key:
            key = parent[key]
        return key

    for index, key in enumerate(joinable):
        for other in joinable[index + 1:]:
            if key[1:] == other[1:] and stems[key] & stems[other]:
                parent[root(other)] = root(key)
    groups: dict[tuple[str, str, str], list[tuple[str, str, str]]] = {}
    for key in joinable:
        groups.setdefault(root(key), []).append(key)
    merged = {key: members for key, members in by_signature.items() if key not in parent}
    for keys in groups.values():
        members = [f for key in keys for f in by_signature[key]]
        largest = max(keys, key=lambda key: (len(by_signature[key]), key))
        merged[largest] = members
    return merged


def _by_suspect(failures: list[Failure]) -> list[Failure]:
    """Each failure with suspects (`triage.kernels`) moved to the one that explains it: its kernel family and
    feature replace the op's family and the case's condition (which is kept under `inputs`).

    The fewest explanations that cover every failure: a suspect that is some failure's only one is confirmed
    (that kernel family fails with that feature, whatever the kind of failure); a failure with a confirmed suspect
    takes the one most failures confirm (then the one most failures show, then the one its trace saw first); the
    rest are covered greedily, the suspect most of them show first."""
    members = [f for f in failures if f.suspects]
    sole: dict[tuple[str, str, str], int] = {}
    total: dict[tuple[str, str, str], int] = {}
    for failure in members:
        keys = {s.key for s in failure.suspects}
        for key in keys:
            total[key] = total.get(key, 0) + 1
        if len(keys) == 1:
            sole[failure.suspects[0].key] = sole.get(failure.suspects[0].key, 0) + 1
    chosen: dict[int, Suspect] = {}
    open_ = []
    for failure in members:
        confirmed = [(sole[s.key], total[s.key], -index, s) for index, s in enumerate(failure.suspects)
                     if s.key in sole]
        if confirmed:
            chosen[id(failure)] = max(confirmed, key=lambda entry: entry[:3])[3]
        else:
            open_.append(failure)
    while open_:
        counts: dict[tuple[str, str, str], int] = {}
        for failure in open_:
            for key in {s.key for s in failure.suspects}:
                counts[key] = counts.get(key, 0) + 1
        best = min(counts, key=lambda key: (-counts[key], key))
        rest = []
        for failure in open_:
            match = next((s for s in failure.suspects if s.key == best), None)
            if match is None:
                rest.append(failure)
            else:
                chosen[id(failure)] = match
        open_ = rest
    moved = []
    for failure in failures:
        suspect = chosen.get(id(failure))
        if suspect is None:
            moved.append(failure)
            continue
        condition = failure.condition
        if suspect.stem:  # grouped by the kernel: a plain case, or one whose special values are its condition
            features = () if suspect.feature == PLAIN else condition.features
            condition = attrs.evolve(condition, features=features, kernel=suspect.stem, kernels=suspect.overloads)
        else:  # grouped by the family of the kernels that saw the feature
            inputs = condition.inputs if condition.inputs is not None else condition.features
            condition = attrs.evolve(condition, features=(suspect.feature,), inputs=inputs, kernels=suspect.overloads)
        moved.append(attrs.evolve(failure, family=suspect.family, condition=condition))
    return moved


def _smallness(failure: Failure) -> tuple[bool, int, bool, str]:
    elements = failure.condition.elements
    return (elements is None, elements if elements is not None else 0, failure.repro is None, failure.item)


def group(failures: Iterable[Failure]) -> tuple[Cluster, ...]:
    """The clusters of `failures`, largest first (then by kind's order in KINDS, family and condition).

    A signature whose condition holds another's of the same family and kind, and more (`large, storage
    offset` beside `storage offset`), joins that one: the fewer features already explain it, and the extra
    one is listed under what differs. Only a condition with more than a size class (empty, large) takes
    others in; unknown and plain conditions join nothing and take no one in."""
    by_signature: dict[tuple[str, str, str], list[Failure]] = {}
    for failure in _by_suspect(list(failures)):
        by_signature.setdefault(failure.signature, []).append(failure)
    by_signature = _merge_shared_kernels(_merge_supersets(by_signature))
    clusters = [Cluster(family, kind, condition, tuple(sorted(members, key=lambda f: f.item)))
                for (family, kind, condition), members in by_signature.items()]
    return tuple(sorted(clusters, key=lambda c: (-c.count, KINDS.index(c.kind) if c.kind in KINDS else len(KINDS),
                                                 c.family, c.condition)))
