"""The spawned pool knows no callers: a worker started with an entry point (`module:function`) and a JSON payload
serves requests with what the function returns. A toy entry point (no torch) shows the pool's accounting: an
answer, a handler that raises, a worker that aborts, one that hangs past its timeout, and one whose start
refuses; a dead or hung worker is replaced, and nothing outlives `close_pools`."""

from __future__ import annotations

import signal
import textwrap

import pytest

from torchcts.isolation import spawn
from torchcts.isolation.spawn import SpawnError, WorkerStart

pytestmark = pytest.mark.slow  # every test starts worker interpreters

HANG_TIMEOUT_S = 3  # only ever given to the request that sleeps for an hour
ANSWER_TIMEOUT_S = 300  # a safety net: the other requests answer at once

ECHO = '''
import os
import time


def start(payload):
    if payload.get("refuse"):
        print("the toy worker refuses to start", flush=True)
        raise SystemExit(5)
    prefix = payload["prefix"]

    def handle(request):
        if request.get("abort"):
            print("the toy worker aborts now", flush=True)
            os.abort()
        if request.get("raise"):
            raise ValueError("a request the toy handler cannot take")
        if request.get("hang"):
            time.sleep(3600)
        return {"echo": prefix + request["text"], "variable": os.environ.get("TORCHCTS_TOY_VARIABLE"),
                "pid": os.getpid()}

    return handle
'''


@pytest.fixture
def toy_entry(tmp_path, monkeypatch):
    (tmp_path / "toy_spawn_entry.py").write_text(textwrap.dedent(ECHO))
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker takes the parent's sys.path
    yield "toy_spawn_entry:start"
    spawn.close_pools()


def test_a_worker_serves_what_its_entry_point_returns_and_is_replaced_after_it_dies(toy_entry):
    start = WorkerStart.of(toy_entry, {"prefix": "> "}, {"TORCHCTS_TOY_VARIABLE": "given"})
    pool = spawn.pool_for(start)
    assert spawn.pool_for(WorkerStart.of(toy_entry, {"prefix": "> "}, {"TORCHCTS_TOY_VARIABLE": "given"})) is pool

    first = pool.run({"text": "one"}, ANSWER_TIMEOUT_S)
    assert first.status == "finished" and first.answer["echo"] == "> one" and first.answer["variable"] == "given"
    (worker,) = pool.workers
    assert worker.served == 1 and first.answer["pid"] == worker.pid
    assert pool.run({"text": "two"}, ANSWER_TIMEOUT_S).answer["pid"] == worker.pid  # one worker, many requests

    with pytest.raises(SpawnError, match="ValueError: a request the toy handler cannot take"):
        pool.run({"raise": True}, ANSWER_TIMEOUT_S)
    assert pool.workers == [worker]  # a handler that raised leaves its worker serving

    aborted = pool.run({"abort": True}, ANSWER_TIMEOUT_S)
    assert aborted.status == "crashed" and aborted.signal_name == "SIGABRT"
    assert "Fatal Python error" in aborted.output_tail and "toy_spawn_entry.py" in aborted.output_tail  # its stack
    assert pool.workers == [] and worker.process.returncode == -signal.SIGABRT

    hung = pool.run({"hang": True}, HANG_TIMEOUT_S)
    assert hung.status == "timed_out" and hung.duration_s >= HANG_TIMEOUT_S
    assert pool.started == 2 and pool.workers == []

    after = pool.run({"text": "three"}, ANSWER_TIMEOUT_S)
    assert after.answer["echo"] == "> three" and pool.started == 3
    last = pool.workers[0]
    spawn.close_pools()
    assert last.process.returncode is not None and not spawn._pools


def test_an_entry_point_that_ends_the_worker_is_a_spawn_error_with_its_status_and_output(toy_entry):
    pool = spawn.pool_for(WorkerStart.of(toy_entry, {"refuse": True}))
    with pytest.raises(SpawnError, match="ended with status 5 while starting: the toy worker refuses to start"):
        pool.run({"text": "never"}, ANSWER_TIMEOUT_S)
    assert pool.workers == []


def test_another_start_closes_the_run_s_pool(toy_entry):
    first = spawn.pool_for(WorkerStart.of(toy_entry, {"prefix": "a"}))
    first.run({"text": "x"}, ANSWER_TIMEOUT_S)
    (worker,) = first.workers
    second = spawn.pool_for(WorkerStart.of(toy_entry, {"prefix": "b"}))
    assert second is not first and worker.process.returncode is not None  # one pool per run
    assert second.run({"text": "x"}, ANSWER_TIMEOUT_S).answer["echo"] == "bx"
