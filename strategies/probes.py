"""How drawing probes the op on CPU: in this process by default, or by a runner the caller installs.

Drawing runs the op on CPU to validate a transformed case and to choose a size change. Where
torch's CPU kernel is known to crash or hang on some cases (the harness's known-crash ledger),
the caller installs a runner that probes in a forked child (`cpu_probes`), so a probe that kills
its process costs one probe, not the run. The strategies know nothing of the ledger.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator

# runner(work, sample): True when work() returned, False when it raised, None when its process died
# or hung; `sample` (the SampleInput work runs the op on) lets a runner isolate only some probes
ProbeRunner = Callable[[Callable[[], None], Any], "bool | None"]


def run_in_process(work: Callable[[], None], sample: Any = None) -> bool | None:
    """The default runner: True when `work()` returns, False when it raises."""
    try:
        work()
    except Exception:
        return False
    return True


_runner: contextvars.ContextVar[ProbeRunner] = contextvars.ContextVar("cpu_probe_runner", default=run_in_process)


@contextlib.contextmanager
def cpu_probes(runner: ProbeRunner) -> Iterator[None]:
    """Run the CPU probes drawing makes with `runner` inside this block.

    A case whose probe died or hung (None) is kept as drawn: the check, itself isolated, meets the
    crash in the CPU oracle and accounts it."""
    token = _runner.set(runner)
    try:
        yield
    finally:
        _runner.reset(token)


def probe(work: Callable[[], None], sample: Any) -> bool | None:
    """`work()` (the op on `sample`) under the installed runner: True (it returned), False (it raised),
    None (its process died or hung)."""
    return _runner.get()(work, sample)
