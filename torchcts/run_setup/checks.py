"""Every option a user types, checked before the manifest loads, the backend imports or a folder is made.

A typo costs nothing: each check raises a one-line `SessionError` that names the option and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.arguments import MAX_EXAMPLES, MAX_SEED, input_file_problem, output_folder_problem, shown
from torchcts.cases.corpus_default import default_corpus_dir
from torchcts.plan import registry
from torchcts.plan.build import Selection, SelectionError
from torchcts.plan.selection import check_capabilities, check_properties, check_shard
from torchcts.results.files import ResultFileError
from torchcts.results.last_failed import read_last_failed
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest


def checked_options(request: RunRequest, *, defer_properties: bool = False) -> tuple[Selection, int | None, int | None]:
    """(selection, --seed, --max-examples) after checking every option a user types; SessionError names the bad one.

    Runs before the manifest loads and before anything is written, so a typo costs nothing: output
    folders must be creatable and writable, input files regular files, numbers in range, `--property`
    names registered by the installed suites (`defer_properties`: checked once the manifest's
    `custom_test_dirs` are loaded too)."""
    try:
        selection = Selection(level=request.level, dtypes=dtypes_option(request.dtypes),
                              op_patterns=tuple(request.ops or ()),
                              shard=check_shard(request.shard),
                              capabilities=check_capabilities(request.capabilities),
                              last_failed=last_failed_from(request.last_failed_from))
        if not defer_properties:
            selection = attrs.evolve(selection, properties=check_properties(request.properties,
                                                                            [p.name for p in registry.load()]))
    except SelectionError as exc:
        raise SessionError(str(exc)) from None
    seed, max_examples = request.seed, request.max_examples
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise SessionError(f"--seed must be an integer from 0 to {MAX_SEED} (2**64 - 1), got {shown(seed)}")
    if max_examples is not None and not 1 <= max_examples <= MAX_EXAMPLES:
        raise SessionError(f"--max-examples must be an integer from 1 to {MAX_EXAMPLES}, got {shown(max_examples)}")
    timeout = request.item_timeout
    if timeout is not None and not timeout >= 1:  # also NaN
        raise SessionError(f"--item-timeout must be at least 1 second, got {timeout}")
    folders = [("--results-dir", request.results_dir)]
    if not request.replay:  # a replay writes no counterexamples
        given = request.corpus_dir  # the raw string where given: Path("") would read as "."
        folders.append(("--corpus-dir", given if given is not None else str(corpus_dir(request))))
    for name, folder in folders:
        problem = output_folder_problem(folder)
        if problem is not None:
            raise SessionError(f"{name} {shown(str(folder))}: {problem}")
    ledger = request.known_crashes
    problem = input_file_problem(ledger) if ledger is not None else None
    if problem is not None:
        raise SessionError(f"--known-crashes: {problem}")
    return selection, seed, max_examples


def corpus_dir(request: RunRequest) -> Path:
    """--corpus-dir as given, or the default (`./corpus`, never the curated corpus TorchCTS ships)."""
    given = request.corpus_dir
    return Path(given) if given is not None else default_corpus_dir(Path(request.results_dir))


def dtypes_option(names: list[str] | None) -> tuple[torch.dtype, ...] | None:
    """--dtype values (repeated, or comma-separated) as torch dtypes; SessionError names one TorchCTS does not test."""
    if not names:
        return None
    chosen = []
    for name in names:
        for part in name.split(","):
            dtype = dtype_names.lookup(part.strip())
            if dtype is None or dtype not in dtype_names.CLAIMABLE_DTYPES:
                raise SessionError(f"--dtype {shown(part)} is not a dtype TorchCTS tests; "
                                   f"choose from {', '.join(dtype_names.claimable_names())}")
            chosen.append(dtype)
    return tuple(chosen)


def last_failed_from(folder: str | None) -> Any:
    """--last-failed-from RUN_FOLDER: the outcomes of that earlier run (`torchcts.results.last_failed`), read
    through the bounded reader; a folder that cannot be used, or where nothing failed, is a SessionError."""
    if folder is None:
        return None
    if not str(folder).strip() or not Path(folder).is_dir():
        raise SessionError(f"--last-failed-from {shown(str(folder))}: "
                           f"{'no such folder' if str(folder).strip() else 'empty'}; name a run folder "
                           "(results/<run-id>/)")
    try:
        last = read_last_failed(folder)
    except ResultFileError as exc:
        raise SessionError(f"--last-failed-from: {exc}") from None
    if not last.failed:
        raise SessionError(f"--last-failed-from {folder}: no item failed, errored, crashed or timed out in "
                           f"{last.run_id}; nothing to rerun")
    return last


def with_properties(selection: Selection, names: list[str] | None) -> Selection:
    """The selection with its checked `--property` names (registered ones, custom suites included). With
    `--capability` too, the run takes the properties in both: none in common is a SessionError."""
    try:
        selection = attrs.evolve(selection, properties=check_properties(names, registry.capability_map()))
    except SelectionError as exc:
        raise SessionError(str(exc)) from None
    if selection.properties and selection.capabilities:
        if not any(registry.get(name).tests(selection.capabilities) for name in selection.properties):
            testing = ", ".join(registry.testing(selection.capabilities)) or "no registered property"
            raise SessionError(f"--property {' '.join(selection.properties)} and --capability "
                               f"{' '.join(selection.capabilities)} have no property in common (the capability is "
                               f"tested by {testing})")
    return selection
