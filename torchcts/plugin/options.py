"""A pytest session's TorchCTS options as the run-setup input (`torchcts.run_setup.request.RunRequest`).

Everything that turns options into a run lives in `torchcts.run_setup`, without pytest; this module only
reads pytest's config: the plugin's own options (`--device` is stored as `torchcts_device`), Hypothesis's
pytest options that TorchCTS honours, and the session's pytest-xdist role.
"""

from __future__ import annotations

import attrs
import pytest

from torchcts.plugin import distributed
from torchcts.run_setup.request import CONTROLLER, WORKER, RunRequest
from torchcts.run_setup.start import RunStart, start_run as start_requested_run

# RunRequest fields read from the plugin's options (dest `torchcts_<field>`); the others come from pytest itself
_PLUGIN_FIELDS = tuple(field.name for field in attrs.fields(RunRequest)
                       if not field.name.startswith("hypothesis_")
                       and field.name not in ("collect_only", "role", "joined", "workers"))


def run_request(config: pytest.Config) -> RunRequest:
    """The run-setup input of this pytest session's options."""
    role = distributed.role(config)
    return RunRequest(
        **{name: config.getoption(f"torchcts_{name}") for name in _PLUGIN_FIELDS},
        hypothesis_seed=config.getoption("hypothesis_seed", None),  # absent when Hypothesis's plugin is disabled
        hypothesis_profile=config.getoption("hypothesis_profile", None),
        hypothesis_verbosity=config.getoption("hypothesis_verbosity", None),
        hypothesis_show_statistics=bool(config.getoption("hypothesis_show_statistics", False)),
        collect_only=bool(config.getoption("collectonly", False)), role=role,
        joined=distributed.joined_run(config) if role == WORKER else None,
        workers=_worker_count(config) if role == CONTROLLER else 1)


def start_run(config: pytest.Config) -> RunStart:
    """`run_setup.start.start_run` with this session's options; SessionError for bad input, AuditDone for an audit."""
    return start_requested_run(run_request(config))


def _worker_count(config: pytest.Config) -> int:
    """How many pytest-xdist workers a controller starts (`-n`, after `auto` is resolved)."""
    return len(config.getoption("tx", None) or ()) or 1
