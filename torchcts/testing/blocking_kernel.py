"""A backend kernel that never returns, for tests of how Ctrl-C and SIGTERM end a run.

Importing this module (as a manifest's `backend_import`, only ever in a subprocess: it changes CPU for the whole
process; the names tests need are in `torchcts.testing.blocking`, which has no side effect) replaces CPU's
`aten::logaddexp` kernel with one that blocks for an hour, as a deadlocked kernel would. Once the calling thread is asleep in the blocking
call (Linux: its /proc state; elsewhere as it begins), a thread creates the file named by
$TORCHCTS_TEST_BLOCK_STARTED (when set), so a test knows the run is inside the kernel and sends its signal
then, never after a fixed sleep. (A signal that came before the call would run its Python handler at the
next bytecode, masked or not: the process-wide flag is checked by the main thread.)
$TORCHCTS_TEST_BLOCK_HOW chooses how it blocks:

- `sleep` (the default): `time.sleep`, which a signal's Python handler interrupts at once.
- `masked`: with SIGINT, SIGTERM and SIGHUP blocked in the calling thread, as a native call that masks
  signals (or retries its wait on EINTR) does: the process's Python handlers cannot run until it returns.
- `swallow`: catches every exception (KeyboardInterrupt included) and goes on sleeping, as backend code
  with a bare `except:` around a retry loop does.

With $TORCHCTS_TEST_BLOCK_HOW=`wrong` it blocks nothing: every second call answers one more than it should,
so the device's call and the oracle's of a case disagree, a run finds a failure and stores its case (the case a
test then replays with a blocking kernel).

Only `logaddexp` changes (select it with `--ops ^logaddexp$`); CPU is the run's device and its oracle
alike, so whichever of them calls it first blocks.
"""

from __future__ import annotations

import os
import warnings

import torch

from torchcts.testing.blocking import BLOCK_S, HOW_ENV, HOWS, OP, STARTED_ENV, block  # noqa: F401


def _logaddexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """What CPU's kernel computes, without calling it (it is this one now)."""
    high = torch.maximum(a, b)
    return torch.where(torch.isinf(high) & (a == b), high, high + torch.log1p(torch.exp(-torch.abs(a - b))))


_calls = [0]


def blocking_logaddexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if os.environ.get(HOW_ENV) == "wrong":
        _calls[0] += 1
        return _logaddexp(a, b) + _calls[0] % 2
    block()
    return _logaddexp(a, b)


_library = torch.library.Library("aten", "IMPL")  # kept alive for the life of the process
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": the point of this module
    _library.impl("logaddexp", blocking_logaddexp, "CPU")
