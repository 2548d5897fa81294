"""How much of the OpInfo database `opinfo_samples` covers in float32, and why the rest is not.

For every OpInfo that declares float32 on CPU: builds its sample pool, checks that CPU accepts
its own samples, draws derandomized cases, and runs each on CPU. An op is covered when at least
one drawn case runs; the others are listed with the reason.

    python benchmarks/opinfo_coverage.py [--examples N] [--ops PATTERN]
"""

from __future__ import annotations

import argparse
import collections
import re
import time
import warnings

import torch
from hypothesis import HealthCheck, given, settings

from torchcts.plan.catalog import op_id, ops_supporting
from torchcts.strategies import call_variant, opinfo_samples, sample_pool

# filter_too_much stays on: a strategy that rejects too many draws shows up as a strategy error.
QUIET = settings(database=None, derandomize=True, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])


def classify(op, examples: int) -> tuple[str, str]:
    """('covered', detail) or (reason, detail) for one op."""
    try:
        pool = sample_pool(op, torch.float32)
    except Exception as exc:
        return "sample_inputs raises", f"{type(exc).__name__}: {exc}"[:120]
    if not pool:
        return "no float32 samples", ""
    own_ok = 0
    for sample in pool[:5]:
        try:
            call_variant(op, "function", sample)
            own_ok += 1
        except Exception:
            pass
    ran, failed, dropped, errors = 0, 0, 0, collections.Counter()

    @settings(QUIET, max_examples=examples)
    @given(opinfo_samples(op, torch.float32))
    def prop(case):
        nonlocal ran, failed, dropped
        dropped += any("dropped" in t for t in case.transforms)
        try:
            call_variant(op, "function", case.sample)
            ran += 1
        except Exception as exc:
            failed += 1
            errors[f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:100]] += 1

    try:
        prop()
    except Exception as exc:
        return "strategy error", f"{type(exc).__name__}: {exc}"[:120]
    if ran:
        worst = f"; CPU rejected {failed}: {errors.most_common(1)[0][0]}" if failed else ""
        return "covered", f"{ran}/{ran + failed} cases ran, {dropped} fell back to the sample layout{worst}"
    if not own_ok:
        return "own samples fail on CPU", errors.most_common(1)[0][0] if errors else ""
    return "drawn cases fail, own samples run", errors.most_common(1)[0][0] if errors else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10, help="cases drawn per op")
    parser.add_argument("--ops", default="", help="regex: only OpInfo ids matching it")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    ops = [op for op in ops_supporting(torch.float32) if re.search(args.ops, op_id(op))]
    started = time.perf_counter()
    results: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    partial_fallbacks = 0
    rejected: list[tuple[str, str]] = []
    for index, op in enumerate(ops, 1):
        reason, detail = classify(op, args.examples)
        results[reason].append((op_id(op), detail))
        partial_fallbacks += reason == "covered" and " 0 fell back" not in detail
        if reason == "covered" and "CPU rejected" in detail:
            rejected.append((op_id(op), detail))
        if index % 50 == 0:
            print(f"  ... {index}/{len(ops)} ops, {time.perf_counter() - started:.0f} s", flush=True)
    covered = len(results.pop("covered", []))
    print(f"float32 OpInfos: {len(ops)}; opinfo_samples yields CPU-valid cases for {covered} "
          f"({covered / max(len(ops), 1):.1%}); {partial_fallbacks} of them had some layouts CPU rejects "
          f"(those cases fell back to the sample's layout); {time.perf_counter() - started:.0f} s")
    print(f"covered ops where some drawn cases are rejected by CPU: {len(rejected)}")
    for name, detail in rejected:
        print(f"  {name}: {detail}")
    for reason, entries in sorted(results.items()):
        print(f"{reason}: {len(entries)}")
        for name, detail in entries:
            print(f"  {name}: {detail}")


if __name__ == "__main__":
    main()
