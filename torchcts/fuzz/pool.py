"""The hunt's worker processes: spawning, feeding, replacing and stopping them, and their time limits.

Each worker is a spawned process (`worker.main`) with its own task queue and its own answer pipe
(`AnswerPipe`): a worker that dies while it writes corrupts only its own pipe, which is thrown away
with it (a results queue shared by all would keep the dead writer's lock and silence the rest). A
worker announces itself ready once it has imported torch, the backend and the properties; a
task's time counts from then, so a slow start is never a hang. `sweep` finds the workers whose
visit ended without an answer: a dead process (`crashed`), a visit past the task
timeout (`timed_out`), a crash replay past CRASH_REPLAY_LIMIT_S, or any visit past the time
budget and its grace; it kills and replaces them as needed and says what happened (`Ended`).
Workers start with Ctrl-C, SIGTERM and SIGHUP blocked and then ignore them: the parent handles
signals and stops every worker (`stop`).
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from multiprocessing import connection, resource_tracker
from typing import Any, Callable

import attrs

from torchcts import interrupts
from torchcts.fuzz import worker
from torchcts.fuzz.options import CRASH_REPLAY_LIMIT_S, FuzzOptions
from torchcts.core.outcomes import Outcome

OVER_BUDGET = "over_budget"  # the time budget and its grace ran out: the visit is dropped, not held against the item
REPLAY_OVERRAN = "replay_overran"  # a crash replay without end: dropped, its item is already crashed
JOIN_TIMEOUT_S = 5.0


@attrs.frozen
class AnswerPipe:
    """The worker's end of its answer pipe: `put` sends one message whole (no feeder thread, no shared lock)."""

    connection: Any

    def put(self, message: dict[str, Any]) -> None:
        self.connection.send(message)


@attrs.define
class Slot:
    """One worker process and the visit in hand (`stats` None: idle)."""

    process: Any
    tasks: Any
    answers: Any  # the parent's end of the worker's answer pipe; None once the worker closed it (it died)
    stats: Any = None  # the scheduler's ItemStats of the visit in hand
    task: worker.Task | None = None
    started: float = 0.0  # when the task's time started counting (inf until the worker is ready)
    visit: int = 0  # the hunt's number for the task in hand (a crash replay keeps its visit's)
    ready: bool = False  # the worker has imported torch and the op database; task time counts from here

    @property
    def busy(self) -> bool:
        return self.stats is not None


@attrs.frozen
class Ended:
    """A visit that ended without an answer: `why` is crashed, timed_out, over_budget or replay_overran."""

    stats: Any
    task: worker.Task
    visit: int
    why: str
    exitcode: int | None = None


@attrs.frozen
class Answered:
    """A visit's answer from its worker."""

    stats: Any
    visit: int
    answer: dict[str, Any]


class WorkerPool:
    """`options.workers` worker processes running `target(options, tasks, results)`."""

    def __init__(self, options: FuzzOptions, target: Callable[..., None] = worker.main):
        self.options = options
        self.target = target
        self._context = multiprocessing.get_context("spawn")
        self.slots: list[Slot] = []

    def start(self) -> None:
        for _ in range(max(1, self.options.workers)):
            self.slots.append(self._spawn())  # one by one: a signal while starting leaves none unstopped

    def _spawn(self) -> Slot:
        tasks = self._context.Queue()
        answers, worker_end = self._context.Pipe(duplex=False)
        process = self._context.Process(target=self.target, args=(self.options, tasks, AnswerPipe(worker_end)),
                                        daemon=True)
        resource_tracker.ensure_running()  # started later, it would unblock SIGINT and SIGTERM for the worker
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.SIGNALS)  # the worker starts deaf to them
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            worker_end.close()  # the worker holds the only writer: its death reads as the pipe's end here
        return Slot(process, tasks, answers)

    def busy_items(self) -> set[str]:
        return {slot.stats.item.id for slot in self.slots if slot.busy}

    def idle_slots(self) -> list[Slot]:
        return [slot for slot in self.slots if not slot.busy]

    def all_idle(self) -> bool:
        return not any(slot.busy for slot in self.slots)

    def assign(self, slot: Slot, stats: Any, task: worker.Task, visit: int, now: float) -> None:
        """Hand `task` to the idle worker of `slot`; its time counts from `now`, or from when it is ready."""
        slot.stats, slot.task, slot.visit = stats, task, visit
        slot.started = now if slot.ready else float("inf")
        slot.tasks.put(task)

    def receive(self, timeout_s: float) -> Answered | None:
        """The next answer of a busy worker (its slot is idle again), or None within `timeout_s`.
        A worker's ready message starts its task's time."""
        open_slots = {slot.answers: slot for slot in self.slots if slot.answers is not None}
        readable = connection.wait(list(open_slots), timeout_s) if open_slots else time.sleep(timeout_s)
        if not readable:
            return None
        sender = open_slots[readable[0]]
        try:
            message = sender.answers.recv()
        except (EOFError, OSError):  # the worker died (`sweep` accounts a busy one); stop listening to it
            sender.answers.close()
            sender.answers = None
            return None
        if "ready" in message:
            sender.ready, sender.started = True, time.monotonic()
            return None
        if not sender.busy or sender.stats.item.id != message["item"]:  # the answer of a visit already dropped
            return None
        done = Answered(sender.stats, sender.visit, message)
        sender.stats = None
        return done

    def sweep(self, hunt_started: float) -> list[Ended]:
        """Kill and replace the workers whose visit died, hung or overran; what happened to each visit."""
        ended = []
        for index, slot in enumerate(self.slots):
            if not slot.busy:
                continue
            why = self._overrun(slot, time.monotonic() - hunt_started)
            if why is None:
                continue
            if why != Outcome.CRASHED:
                slot.process.kill()
            slot.process.join(timeout=JOIN_TIMEOUT_S)
            ended.append(Ended(slot.stats, slot.task, slot.visit, why, slot.process.exitcode))
            slot.stats = None
            if why != OVER_BUDGET:  # past the budget no visit starts again: no worker is needed
                if slot.answers is not None:
                    slot.answers.close()
                self.slots[index] = self._spawn()
        return ended

    def _overrun(self, slot: Slot, elapsed_s: float) -> str | None:
        """Why the busy slot's visit ends now without an answer, or None while it may still answer."""
        if not slot.process.is_alive():
            return Outcome.CRASHED
        if self.options.past_grace(elapsed_s):
            return OVER_BUDGET
        running_s = time.monotonic() - slot.started
        if slot.ready and slot.task.crash_hunt and running_s > max(self.options.task_timeout_s, CRASH_REPLAY_LIMIT_S):
            return REPLAY_OVERRAN
        if slot.ready and not slot.task.crash_hunt and running_s > self.options.task_timeout_s:
            return Outcome.TIMED_OUT  # a crash replay is slow (a fork per case) and bounded case by case
        return None

    def stop(self) -> None:
        """Kill every worker still running and wait for each (an idle worker waits on its queue forever)."""
        for slot in self.slots:
            if slot.process.is_alive():
                slot.process.kill()
            slot.process.join(timeout=JOIN_TIMEOUT_S)
            # a task this process queued that the killed worker never read would keep the queue's feeder thread
            # writing into a pipe nobody reads, and the interpreter waiting for it at exit: drop it instead
            slot.tasks.cancel_join_thread()
            if slot.answers is not None:
                slot.answers.close()
