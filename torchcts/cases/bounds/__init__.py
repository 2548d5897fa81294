"""The bounds of what a scenario case stores: each suite declares them once, draws within them, and the case reader
refuses a stored case outside them.

A scenario suite keeps its parameters as plain values (a sample count, rows and columns, a byte count, a list of
op names) next to a placeholder tensor. Tensors are bounded by `--max-case-bytes` when a case is decoded; plain
values are not, so a 900-byte case file could ask a program for 10**9 samples. Every scenario declares its
parameters as `CaseParams` (a `Bound` per stored value, and rules between values), its strategy draws through the
same bounds (`Bound.strategy()`, or its own strategy within them), and `CaseParams.problem` checks a stored
case before its program runs: a value out of bounds makes the case unreadable, naming the field.

Bounds are plain data (no torch), so docs/corpus.md's table is written from them (`describe`).

The package holds three ideas: the `Bound` interface and the bounds of plain values (`plain`), the bounds of
torch values, tensors and dtypes (`torch_values`), and a scenario's `CaseParams` with the check of a stored case
(`case_params`). Suites import every name from here.
"""

from torchcts.cases.bounds.case_params import CaseParams, Rule, params_for
from torchcts.cases.bounds.plain import Bound, Either, Flag, Floats, Ints, Lists, Mapping, OneOf, Optional, Tuples
from torchcts.cases.bounds.torch_values import Dtypes, Tensors

__all__ = ["Bound", "CaseParams", "Dtypes", "Either", "Flag", "Floats", "Ints", "Lists", "Mapping", "OneOf",
           "Optional", "Rule", "Tensors", "Tuples", "params_for"]
