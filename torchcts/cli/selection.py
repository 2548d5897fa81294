"""What a command selects of a manifest's claims: --level, --dtype, --ops and --property, and the plan they give.

Property names come from the property registry (`torchcts.plan.registry`). Loading it imports
torch and every property module, so it happens only when a command needs it: when it checks a
--property value, or when `--help` of a command that takes --property is printed; never when
this module is imported (`torchcts --help` and `torchcts report` stay fast).
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

from pathlib import Path
from typing import Any, Callable, Iterable

import click

from torchcts.cli.completion import CAPABILITY_NAMES, complete_dtypes, complete_properties
from torchcts.cli.number_types import IntRange
from torchcts.cli.options import LazyChoice, apply, fail

ANY_LEVEL = IntRange(1, 8)


class PropertyOption(click.Option):
    """--property NAME: its help lists the registered properties, read from the registry when help is shown."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from torchcts.plan.registry import RegistryError

        record = super().get_help_record(ctx)
        try:
            names = _registered_names()
        except RegistryError:  # a broken install: the command itself will say so
            names = ()
        if record is None or not names:
            return record
        return record[0], f"{record[1]} One of: {', '.join(names)}."


def _registered_names(extra_dirs: Iterable[Path] = ()) -> tuple[str, ...]:
    """The names of every registered property (built in, plus the suites in `extra_dirs`), by level then name."""
    from torchcts.plan import registry

    registry.load(extra_dirs)
    return registry.names()


DTYPE_HELP = ("Claim these dtypes for every op in this run, even where the manifest does not (recorded in run.json's "
              "`claims`, shown in the report); the dtypes the manifest claims that are not named are deselected. "
              "Repeatable; float32, torch.bfloat16, ...")
LEVEL_HELP = ("The run's depth, replacing the manifest's semantic_level for this run (deeper or shallower); items "
              "above it are level_filtered.")


def selection_options(level_help: str = LEVEL_HELP, dtype_help: str = DTYPE_HELP,
                      property_help: str = "Only these properties; repeatable.") -> Callable:
    """--level, --dtype, --ops and --property, as run, fuzz and show-skips take them."""
    return apply(
        click.option("--level", type=ANY_LEVEL, help=level_help),
        click.option("--dtype", "dtypes", multiple=True, shell_complete=complete_dtypes, help=dtype_help),
        click.option("--ops", multiple=True, help="Only OpInfos (and scenarios) whose name matches this regex; "
                                                  "repeatable."),
        click.option("--property", "properties", multiple=True, cls=PropertyOption,
                     shell_complete=complete_properties, help=property_help),
    )


def _checked_shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--shard K/N, checked at parse time: a one-line error naming --shard and the form (exit 2)."""
    from torchcts.core.shards import ShardError, format_shard, parse_shard

    if value is None:
        return None
    try:
        return format_shard(parse_shard(value))
    except ShardError as exc:
        fail(str(exc))


def shard_option() -> Callable:
    """--shard K/N: only the items of shard K of N (by a hash of each item id; the rest recorded deselected)."""
    return click.option("--shard", metavar="K/N", callback=_checked_shard, expose_value=True,
                        help="Run only shard K of N (1 <= K <= N <= 1000): the items whose id hashes to K, the same "
                             "split on every machine and unchanged when ops are added; the others are recorded "
                             "deselected. Each shard is a complete run folder; `torchcts report --merge DIR ...` "
                             "joins them into one report.")


def _capability_names() -> tuple[str, ...]:
    from torchcts.manifest.vocabulary import CAPABILITIES

    return tuple(CAPABILITIES)


class CapabilityChoice(LazyChoice):
    """A capability name; an unknown one is one line with the closest names (exit 2), not click's usage text."""

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        if value in self.choices:
            return value
        if ctx is not None and ctx.resilient_parsing:  # shell completion: never exit
            self.fail(f"{value!r} is not a capability", param, ctx)
        from torchcts.plan.selection import SelectionError, check_capabilities

        try:
            check_capabilities([value])
        except SelectionError as exc:
            fail(str(exc))
        return value


def capability_option(help: str) -> Callable:
    """--capability NAME (repeatable): a capability a manifest may claim; completed without importing torch."""
    return click.option("--capability", "capabilities", multiple=True, metavar="NAME",
                        type=CapabilityChoice(_capability_names, complete=CAPABILITY_NAMES), help=help)


def only_capabilities(plan: Any, capabilities: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """(the plan narrowed to the items of properties that test one of `capabilities`, those properties' names).

    A property tests its own capability and those it also proves (`forward` also tests ieee754).
    No capability: the plan unchanged. The registry is loaded (plan_for loaded it)."""
    if not capabilities:
        return plan, ()
    import attrs

    from torchcts.plan import registry

    names = registry.testing(capabilities)
    return attrs.evolve(plan, items=tuple(i for i in plan.items if i.property in names),
                        accounting=tuple(a for a in plan.accounting if a.item.property in names)), names


def claims_beyond_file(manifest: Any, level: int | None, dtypes: tuple[str, ...]) -> str:
    """What `--level` and `--dtype` claim beyond the manifest file (`plan.effective`), as one line; "" when nothing
    (the options were checked by `plan_for`)."""
    from torchcts.plan.effective import run_claims
    from torchcts.plan.selection import Selection
    from torchcts.run_setup.checks import dtypes_option

    return run_claims(manifest, Selection(level=level, dtypes=dtypes_option(list(dtypes)))).summary_line()


def plan_for(manifest_path: Path, level: int | None, dtypes: tuple[str, ...], ops: tuple[str, ...],
             properties: tuple[str, ...]) -> tuple[Any, Any]:
    """(the plan of a run with this selection, the manifest); exits 2 on a bad manifest or selection."""
    from torchcts.manifest import ManifestError, load_manifest
    from torchcts.plan.build import build_plan
    from torchcts.plan.registry import RegistryError
    from torchcts.plan.selection import Selection, SelectionError, check_properties
    from torchcts.run_setup.checks import dtypes_option
    from torchcts.run_setup.errors import SessionError

    try:
        manifest, _ = load_manifest(manifest_path)
        chosen_dtypes = dtypes_option(list(dtypes))
        known = _registered_names(manifest.custom_test_dirs) if properties else ()
        selection = Selection(level=level, dtypes=chosen_dtypes, op_patterns=ops,
                              properties=check_properties(properties, known))
        return build_plan(manifest, selection), manifest
    except ManifestError as exc:
        fail(exc.render())
    except (SessionError, SelectionError) as exc:
        fail(str(exc))
    except RegistryError as exc:
        fail(f"custom_test_dirs: {exc}")
