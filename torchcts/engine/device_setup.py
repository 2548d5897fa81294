"""A device's own setup in a worker process, chosen by the run's setup and run by the engine by name.

A device that registers itself (the faulty test device) must be set up in every worker process (spawned item
workers, fuzz workers) as in the run's process; the engine names no device, so the run's setup
(`run_setup.device.worker_device_setup`) hands it the functions to call, by their "module:function" names,
which travel to a spawned worker in its JSON payload (`spawn_messages.WorkerSetup`).
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from torchcts.isolation.spawn_worker import entry_point


@attrs.frozen
class DeviceSetup:
    """How a worker process readies a device the way the run's process did, for a device that registers itself
    (the run's setup chooses it; the engine names no device): `entry` ("module:function") is called with the
    device in the worker before the suites load; `environment` ("module:function", or None) is called with the
    device in the run's process when a worker starts, and answers the variables the worker's environment adds."""

    entry: str
    environment: str | None = None

    @classmethod
    def of(cls, entry: Callable[[str], Any], environment: Callable[[str], dict[str, str]] | None = None) -> "DeviceSetup":
        def name(function: Callable[..., Any]) -> str:
            return f"{function.__module__}:{function.__qualname__}"

        return cls(name(entry), None if environment is None else name(environment))

    def environment_now(self, device: str) -> dict[str, str]:
        """The variables a worker started now adds to its environment (the run's process's state, such as switches
        a test turned by hand)."""
        return dict(entry_point(self.environment)(device)) if self.environment is not None else {}

    def ready(self, device: str) -> None:
        """In the worker: the device's setup."""
        entry_point(self.entry)(device)
