"""What travels between a run and its spawned item workers (`engine.spawned_items`): JSON only, no pickle.

A worker (`isolation.spawn`, started with the entry point `engine.spawned_item_worker:serve_items`) gets
a `WorkerSetup` as its payload (the manifest's path and fingerprint, the device, its `DeviceSetup` entry
and the environment that setup asks for): what it needs to import torch, the backend and the suites once. Each item then comes as one
request line, `{"item": ..., "settings": ..., "seed": ..., "max_examples": ...}`: the item (`item_json`,
a `PlanItem` or `ReplayItem`) and the engine's settings described field by field (`settings_json`),
rebuilt in the worker (`settings_values`, `spawned_item_worker.settings_from`) over the manifest it
loaded itself. Settings travel with every item, so a front end that changes them per item (fuzz's seeds
and targeting) is served by the same worker. The isolation policy keeps what a worker needs for an
item's crash-prone cases (the rules, the device, torch's version, whether forking is allowed); a worker
never isolates a whole item again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import ReplayItem
from torchcts.crashes.ledger import CrashRule
from torchcts.engine.compile_target import CompileSpec
from torchcts.engine.hypothesis_profile import DrawSettings
from torchcts.engine.targets import Target
from torchcts.isolation.policy import IsolationPolicy
from torchcts.engine.device_setup import DeviceSetup
from torchcts.plan.items import PlanItem

ITEM_KINDS = {"plan": PlanItem, "replay": ReplayItem}
# EngineSettings fields that are not plain JSON, each with its describe and rebuild functions (below);
# `manifest` is the worker's own (loaded from the setup's path), `target` is rebuilt from its parts
_NOT_JSON = ("manifest", "target", "corpus_dir", "isolation", "case_limits", "draw", "device_setup")


class SpawnMessageError(Exception):
    """An item or settings that cannot be described for a spawned worker: the message names the field."""


@attrs.frozen
class WorkerSetup:
    """What a spawned item worker starts from (its payload); equal setups share a pool (`spawn.pool_for`)."""

    manifest: str | None  # the manifest file the parent loaded (None: a replay without one)
    manifest_hash: str | None  # its fingerprint then: a worker loading a changed file refuses to serve
    device: str
    device_setup: DeviceSetup | None  # the run's setup of its device (`device_setup.DeviceSetup`), run in the worker
    # what that setup adds to the worker's environment, as the parent has it now (a test may switch the faulty
    # device's bugs by hand): equal setups share a pool, so another state starts other workers
    device_environment: tuple[tuple[str, str], ...] = ()
    # the run's claims where they differ from the file's (`plan.effective`): its depth and the dtypes it claims for
    # every op; the worker applies them to the file it loads, so `manifest_hash` is the run's effective fingerprint
    level: int | None = None
    whole_dtypes: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Any) -> "WorkerSetup":
        manifest = settings.manifest
        source = getattr(manifest, "source", None) if manifest is not None else None
        if manifest is not None and source is None:
            raise SpawnMessageError("a spawned worker loads the run's manifest from its file; this manifest has "
                                    "no `source` path")
        return cls(manifest=str(source) if source is not None else None,
                   manifest_hash=manifest.fingerprint() if manifest is not None else None,
                   device=settings.target.device, device_setup=settings.device_setup,
                   device_environment=tuple(sorted(settings.device_setup.environment_now(settings.target.device)
                                                   .items())) if settings.device_setup is not None else (),
                   level=manifest.semantic_level if manifest is not None else None,
                   whole_dtypes=tuple(c.name for c in manifest.dtype_claims if c.claimed and c.op_pattern is None)
                   if manifest is not None else ())

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "WorkerSetup":
        return cls(manifest=data.get("manifest"), manifest_hash=data.get("manifest_hash"), device=data["device"],
                   device_setup=_device_setup_from(data.get("device_setup")),
                   device_environment=tuple(tuple(pair) for pair in data.get("device_environment", ())),
                   level=data.get("level"), whole_dtypes=tuple(data.get("whole_dtypes", ())))

    def environment(self) -> dict[str, str]:
        """The worker's environment variables over the parent's (`spawn.WorkerStart`): what the device's setup
        asked for."""
        return dict(self.device_environment)


def item_json(item: Any) -> dict[str, Any]:
    for kind, cls in ITEM_KINDS.items():
        if type(item) is cls:
            return {"kind": kind, "fields": attrs.asdict(item, recurse=False)}
    raise SpawnMessageError(f"a spawned worker runs PlanItem and ReplayItem items, not {type(item).__name__}")


def item_from(data: dict[str, Any]) -> Any:
    fields = dict(data["fields"])
    if data["kind"] == "replay" and fields.get("problem") is not None:
        fields["problem"] = tuple(fields["problem"])
    return ITEM_KINDS[data["kind"]](**fields)


def settings_json(settings: Any) -> dict[str, Any]:
    """The engine's settings as JSON (`settings_from` rebuilds them); SpawnMessageError names a field that is
    not JSON and has no description here."""
    import json

    described: dict[str, Any] = {}
    for field in attrs.fields(type(settings)):
        value = getattr(settings, field.name)
        if field.name == "manifest":
            continue
        if field.name in _NOT_JSON:
            described[field.name] = _DESCRIBE[field.name](value)
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise SpawnMessageError(f"EngineSettings.{field.name} ({type(value).__name__}) cannot travel to a "
                                    "spawned worker as JSON") from None
        described[field.name] = value
    return described


def settings_values(data: dict[str, Any]) -> dict[str, Any]:
    """The engine's settings but the manifest, each rebuilt from `settings_json`'s description (the worker's own
    manifest completes them: `spawned_item_worker.settings_from`)."""
    values = dict(data)
    for name in _NOT_JSON:
        if name in values:
            values[name] = _REBUILD[name](values[name])
    return values


def _policy_json(policy: Any) -> dict[str, Any] | None:
    """What a worker needs of the isolation policy: the rules for crash-prone cases, never whole items
    (a policy of another type, a test's, travels as None)."""
    if not isinstance(policy, IsolationPolicy):
        return None
    return {"rules": [attrs.asdict(rule) for rule in policy.rules], "device_type": policy.device_type,
            "torch_version": list(policy.torch_version), "timeout_s": policy.timeout_s, "can_fork": policy.can_fork}


def _policy_from(data: dict[str, Any] | None) -> IsolationPolicy | None:
    if data is None:
        return None
    rules = tuple(CrashRule(**_tuples(rule)) for rule in data["rules"])
    return IsolationPolicy(rules=rules, device_type=data["device_type"], torch_version=tuple(data["torch_version"]),
                           timeout_s=data["timeout_s"], can_fork=data["can_fork"])


def _device_setup_from(data: dict[str, Any] | None) -> DeviceSetup | None:
    return None if data is None else DeviceSetup(**data)


def _draw_from(data: dict[str, Any] | None) -> Any:
    return None if data is None else DrawSettings(**_tuples(data))


def _tuples(data: dict[str, Any]) -> dict[str, Any]:
    """attrs.asdict made tuples lists; the frozen classes hold tuples."""
    return {key: tuple(value) if isinstance(value, list) else value for key, value in data.items()}


_DESCRIBE = {
    "target": lambda target: {"device": target.device,
                              "compile": None if target.compile is None else target.compile.as_json()},
    "corpus_dir": lambda path: None if path is None else str(path),
    "isolation": _policy_json,
    "case_limits": lambda limits: attrs.asdict(limits),
    "draw": lambda draw: None if draw is None else attrs.asdict(draw),
    "device_setup": lambda setup: None if setup is None else attrs.asdict(setup),
}


def _target_from(data: dict[str, Any]) -> Any:
    return Target(data["device"], None if data["compile"] is None else CompileSpec.from_json(data["compile"]))


_REBUILD = {
    "target": _target_from,
    "corpus_dir": lambda path: None if path is None else Path(path),
    "isolation": _policy_from,
    "case_limits": lambda data: CaseLimits(**data),
    "draw": _draw_from,
    "device_setup": _device_setup_from,
}
