"""`torchcts coverage materialize`: the dispatch property's generated cases as corpus-format files to review and replay.

For each generated overload (`torchcts.coverage.generated`), draws cases from its schema in a fixed
order (a seed from the overload's name), keeps N spread over the first 4N that CPU's kernel runs, and writes each as
a corpus case of property `dispatch` (its scenario, float32), status `fixed`: a case that should
pass, so `torchcts replay DIR --device D` reports one that fails on D as a regression (exit 1). The
same torch, Hypothesis and TorchCTS write the same files, byte for byte. torch is imported inside the
command. Exit codes: 0 written, 2 bad input (an option, an --ops regex that matches no overload).
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import re
from pathlib import Path
from typing import Any

import click

from torchcts.cli.number_types import IntRange
from torchcts.cli.options import OutputFolder, fail

DEFAULT_OUTPUT = Path("results") / "coverage" / "generated-cases"
MAX_PER_OVERLOAD = 100
SPREAD = 4  # accepted cases drawn per case written: every SPREAD-th is kept, so the cases are not all tiny
TRIES_PER_CASE = 20  # drawn argument sets per case wanted, before giving up on an overload


def materialize(output: Path, per_overload: int, ops: str | None = None) -> dict[str, Any]:
    """Write the cases; {"written": n, "overloads": n, "without_cases": [overload, ...]}."""
    import hypothesis
    import torch

    import torchcts
    from torchcts.cases.files import new_case, write_case
    from torchcts.coverage.generated import generated_scenarios
    from torchcts.coverage.generated_compute import draw_accepted, overload_seed
    from torchcts.coverage.dispatch_calls import accepted_on_cpu, overload_cases

    pattern = re.compile(ops) if ops else None
    chosen = {scenario: name for scenario, name in generated_scenarios().items()
              if pattern is None or pattern.search(name) or pattern.search(scenario)}
    if not chosen:
        raise ValueError(f"--ops {ops!r} matches no generated overload (names like aten.add.Tensor, or scenarios)")
    found = {"date": None, "how": "torchcts coverage materialize", "torch": torch.__version__,
             "hypothesis": hypothesis.__version__, "torchcts": torchcts.__version__}
    written, without = 0, []
    for scenario, name in sorted(chosen.items()):
        pool, last = draw_accepted(overload_cases(name, torch.float32, None, scenario), per_overload * SPREAD,
                                   accepted_on_cpu, seed=overload_seed(name), tries=per_overload * TRIES_PER_CASE)
        cases = pool[::max(1, len(pool) // per_overload)][:per_overload]  # the simplest case, then spread out
        if not cases:
            without.append(f"{name} ({last or 'no case drawn'})")
        for index, case in enumerate(cases):
            stored = new_case(prop="dispatch", op=scenario, variant="scenario", dtype="float32", device_type="cpu",
                              backend=None, sample=case.sample, failure={},
                              found={**found, "overload": name, "index": index}, description=case.transforms[0])
            write_case(output, stored.with_status("fixed"))
            written += 1
    return {"written": written, "overloads": len(chosen), "without_cases": without}


@click.command("materialize")
@click.option("--output", type=OutputFolder(), default=DEFAULT_OUTPUT, show_default=True,
              help="Folder the case files are written to (one JSON file per case, named by its fingerprint).")
@click.option("--per-overload", "per_overload", type=IntRange(1, MAX_PER_OVERLOAD), default=3,
              show_default=True,
              help="Cases written per generated overload (spread over the first 4N that CPU's kernel runs).")
@click.option("--ops", metavar="REGEX", help="Only overloads (aten.add.Tensor) or scenarios (add_tensor) matching "
                                             "this regular expression.")
def materialize_command(output: Path, per_overload: int, ops: str | None) -> None:
    """Write the dispatch property's generated cases as corpus case files.

    Each generated overload (docs/coverage/generated.md: relevant, reached by no OpInfo, arguments
    drawable from its schema) gets up to N deterministic cases that CPU's kernel accepts, stored as
    corpus cases of property `dispatch` with status `fixed` (expected to pass). Review them, keep
    them in version control, and replay them on a backend with `torchcts replay DIR --device D`: a
    case that fails there is reported as a regression. Exit codes: 0 written, 2 bad input.
    """
    if ops is not None:
        try:
            re.compile(ops)
        except re.error as exc:
            fail(f"--ops: not a regular expression ({exc})")
    try:
        summary = materialize(output, per_overload, ops)
    except ValueError as exc:
        fail(str(exc))
    click.echo(f"wrote {summary['written']} cases of {summary['overloads']} overloads to {output}")
    for line in summary["without_cases"]:
        click.echo(f"warning: no case CPU's kernel accepts: {line}", err=True)
