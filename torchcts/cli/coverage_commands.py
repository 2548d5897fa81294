"""`torchcts coverage ...`: the coverage audit's commands; each module under `torchcts.coverage` does the work.

Artifacts go to ./results/coverage/ unless told otherwise. Exit codes: 0 done (warnings printed),
1 the check found what its flags make fatal (unknowns under --fail-on-unknown), 2 bad input (a
malformed file, named with its entry).
"""

from __future__ import annotations

import click


@click.group("coverage")
def coverage() -> None:
    """Audit which aten overloads the evidence covers, and which were never tested.

    `inventory` lists the installed torch's overloads, `audit` gives each backend-relevant one a
    status, `check` validates an audit, `report` renders it; docs/coverage/ explains the policy.
    """


from torchcts.cli.coverage_evidence import collect_backend_evidence  # noqa: E402 - after the group it joins

coverage.add_command(collect_backend_evidence)

from torchcts.cli.coverage_inventory import inventory  # noqa: E402 - after the group it joins

coverage.add_command(inventory)

from torchcts.cli import coverage_audit  # noqa: E402 - after the group it joins

for _command in (coverage_audit.audit, coverage_audit.report, coverage_audit.check, coverage_audit.non_unique_audit):
    coverage.add_command(_command)

from torchcts.cli.coverage_materialize import materialize_command  # noqa: E402 - after the group it joins

coverage.add_command(materialize_command)
