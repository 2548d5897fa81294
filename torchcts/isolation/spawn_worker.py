"""A spawned worker: `python -u -m torchcts.isolation.spawn_worker REQUESTS_FD ANSWERS_FD PARENT_PID`.

Started by `isolation.spawn`, it first leaves Ctrl-C, SIGTERM and SIGHUP to the parent and arranges to die
with it, turns faulthandler on (a crash's Python stack lands in the output the parent keeps), and reads its
start (the first request line: the entry point, its JSON payload, the parent's `sys.path`). It takes the
parent's `sys.path`, imports the entry point's module and calls the function with the payload once: what it
returns handles each later request (the function may end the worker instead: its exit status is what the
parent reports). Then it says it is ready and serves, one request line each, answering each with the
handler's JSON; a handler that raises is answered with its traceback (`raised`), and the worker serves on.
An empty line or the parent closing the pipe ends it. Its stdout and stderr are the parent's file.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any, Callable

from torchcts.isolation.fork import detach_from_run


def main(argv: list[str]) -> int:
    requests_fd, answers_fd, parent = (int(arg) for arg in argv[1:4])
    detach_from_run(parent)
    faulthandler.enable(all_threads=False)
    started = time.monotonic()
    requests = os.fdopen(requests_fd, "rb")
    line = requests.readline()
    if not line.strip():
        return 0
    start = json.loads(line)
    sys.path[:] = list(start["sys_path"])  # what the parent imported the backend and the suites from
    handler = entry_point(start["entry"])(start["payload"])
    send(answers_fd, {"ready": os.getpid(), "startup_s": round(time.monotonic() - started, 3)})
    for line in requests:
        if not line.strip():
            break
        send(answers_fd, serve(handler, json.loads(line)))
    return 0


def entry_point(name: str) -> Callable[[Any], Callable[[dict[str, Any]], dict[str, Any]]]:
    """The function `package.module:function` names."""
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def serve(handler: Callable[[dict[str, Any]], dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The handler's answer, or the traceback of what it raised (the parent makes that a harness error)."""
    try:
        return handler(request)
    except Exception:  # noqa: BLE001 - the worker keeps serving; the caller's result says what raised
        return {"raised": traceback.format_exc()}


def send(fd: int, message: dict[str, Any]) -> None:
    """One JSON line, written whole (records hold NaN as JSON's NaN, other values as their text, as forked
    children send them)."""
    view = memoryview((json.dumps(message, default=str) + "\n").encode())
    while view:
        written = os.write(fd, view)
        view = view[written:]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
