"""A backend's or decoder's own exit never loses an item (issue 41, point 4).

Backend code that calls sys.exit, raises KeyboardInterrupt itself, calls os._exit or sends its own
process a signal -- in a custom container decoder, in an op a module hook or an optimizer step of
the suites runs (a seeded faulty-device bug of our own), in a custom property, in a probe -- ends
that item as `error` (sys.exit, KeyboardInterrupt) or `crashed` (an intercepted os._exit or
signal), in the run's process and in an isolated child alike, with the module and function named;
the items after it run, and a run's counts stay complete. The user's own Ctrl-C still stops the
run. Runs are tiny: 2 examples an item.
"""

from __future__ import annotations

import _signal
import collections
import json
import os
import posix
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from torchcts import backend_exits, interrupts
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.isolation.fork import run_forked
from torchcts.isolation.policy import IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import PlanItem
from torchcts.probe import capabilities as capability_probes
from torchcts.probe.result import FAILED, OK
from torchcts.probe.runner import run_probes
from tests import warm_programs

SAFETY_NET_S = 300
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and POSIX signals")

DECODERS = '''
"""Container decoders that leave by a back door, one per way (the tests' backend code)."""
import os
import signal
import sys
import threading
import time

from torchcts.containers.reference_decoders import decode_uint4 as decode_correctly


def decode_exit(packed, scale, zero_point, shape, dtype, device):
    sys.exit(4)


def decode_keyboard(packed, scale, zero_point, shape, dtype, device):
    raise KeyboardInterrupt("the decoder stops itself")


def decode_os_exit(packed, scale, zero_point, shape, dtype, device):
    os._exit(3)


def decode_sigkill(packed, scale, zero_point, shape, dtype, device):
    os.kill(os.getpid(), signal.SIGKILL)


def decode_sigsegv(packed, scale, zero_point, shape, dtype, device):
    os.kill(os.getpid(), signal.SIGSEGV)


def decode_sigterm(packed, scale, zero_point, shape, dtype, device):
    os.kill(os.getpid(), signal.SIGTERM)


def decode_user_presses_ctrl_c(packed, scale, zero_point, shape, dtype, device):
    """The user's Ctrl-C arrives while the decoder works (from another thread: not the decoder's own call)."""
    threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
    time.sleep(300)
'''

# mode -> (the outcome, what the error line says)
EXITS = {"exit": (Outcome.ERROR, "SystemExit(4) raised in exiting_decoders.decode_exit"),
         "keyboard": (Outcome.ERROR, "KeyboardInterrupt('the decoder stops itself') raised in "
                                     "exiting_decoders.decode_keyboard"),
         "os_exit": (Outcome.CRASHED, "os._exit(3) called in exiting_decoders.decode_os_exit"),
         "sigkill": (Outcome.CRASHED, "os.kill(own process, SIGKILL) called in exiting_decoders.decode_sigkill"),
         "sigsegv": (Outcome.CRASHED, "os.kill(own process, SIGSEGV) called in exiting_decoders.decode_sigsegv"),
         "sigterm": (Outcome.CRASHED, "os.kill(own process, SIGTERM) called in exiting_decoders.decode_sigterm")}
FORMATS = {"exit": "uint4_msb_first", "keyboard": "int4_symmetric", "os_exit": "nf4", "sigkill": "fp4_e2m1",
           "sigsegv": "int8_symmetric", "sigterm": "uint8", "user_presses_ctrl_c": "int4_asymmetric",
           "correctly": "uint4"}


def decoder_manifest(folder: Path, formats: dict[str, str]) -> Path:
    """A cpu manifest claiming custom_quantized_decode with the decoders of `DECODERS` (format -> mode); the
    module goes into `folder` (the caller puts it on sys.path)."""
    (folder / "exiting_decoders.py").write_text(DECODERS)
    decoders = {fmt: f"exiting_decoders:decode_{mode}" for fmt, mode in formats.items()}
    path = folder / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu")
                    + 'manifest["capabilities"]["custom_quantized_decode"] = True\n'
                    + f'manifest["custom_container_decoders"] = {decoders!r}\n')
    return path


@pytest.fixture(scope="module")
def decoder_settings(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decoders")
    sys.path.insert(0, str(folder))
    try:
        manifest, _ = load_manifest(decoder_manifest(folder, {fmt: mode for mode, fmt in FORMATS.items()}))
        yield EngineSettings(target=Target("cpu"), manifest=manifest, level=8, max_examples=2, versions=versions())
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("exiting_decoders", None)


def decoder_item(mode: str) -> PlanItem:
    return PlanItem("quantized_decoders", FORMATS[mode], "scenario", "float32", 6)


def _guarded_call(call):
    return call()


# -- the guard ---------------------------------------------------------------------------------------------

@linux_only
@pytest.mark.parametrize("call, how", [
    (lambda: os._exit(3), "os._exit(3)"),
    (lambda: os.kill(os.getpid(), signal.SIGKILL), "os.kill(own process, SIGKILL)"),
    (lambda: os.kill(os.getpid(), signal.SIGSEGV), "os.kill(own process, SIGSEGV)"),
    (lambda: os.kill(os.getpid(), signal.SIGTERM), "os.kill(own process, SIGTERM)"),
    (lambda: os.kill(0, signal.SIGINT), "os.kill(0, SIGINT)"),
    (lambda: os.killpg(os.getpgrp(), signal.SIGHUP), "os.killpg(own process group, SIGHUP)"),
    (lambda: signal.raise_signal(signal.SIGABRT), "signal.raise_signal(SIGABRT)"),
    (lambda: signal.pthread_kill(threading.get_ident(), signal.SIGKILL),
     "signal.pthread_kill(a thread of this process, SIGKILL)"),
    (lambda: posix._exit(3), "os._exit(3)"),  # the C module behind os
    (lambda: posix.kill(os.getpid(), signal.SIGKILL), "os.kill(own process, SIGKILL)"),
    (lambda: posix.killpg(0, signal.SIGTERM), "os.killpg(own process group, SIGTERM)"),
    (lambda: _signal.raise_signal(signal.SIGTERM), "signal.raise_signal(SIGTERM)"),
    (lambda: _signal.pthread_kill(threading.get_ident(), signal.SIGKILL),
     "signal.pthread_kill(a thread of this process, SIGKILL)"),
], ids=["os_exit", "sigkill", "sigsegv", "sigterm", "group-sigint", "killpg-sighup", "raise-sigabrt", "pthread-kill",
        "posix-exit", "posix-kill", "posix-killpg", "c-raise-signal", "c-pthread-kill"])
def test_inside_the_guard_ending_the_process_raises_naming_the_caller(call, how):
    """In a forked child leading its own session: a call the guard misses ends that child (or signals its own
    process group), never the test run."""
    def in_own_session():
        os.setsid()
        original = os._exit
        with interrupts.handling(), backend_exits.guard():  # the run's handlers: SIGTERM would read as the user's
            try:
                _guarded_call(call)
            except backend_exits.ProcessEndRequested as raised:
                ended = {"how": raised.how, "culprit": raised.culprit, "text": str(raised)}
            else:
                ended = {}
        return {**ended, "restored": os._exit is original and posix._exit is original and posix.kill is os.kill
                and os.kill is not backend_exits._kill, "requested": interrupts.requested()}

    result = run_forked(in_own_session, SAFETY_NET_S)
    assert result.status == "finished", result.describe()
    raised = result.answer
    assert raised.get("how") == how, raised
    assert raised["culprit"].startswith(f"{__name__}.")  # the lambda of this module (torchcts's frames skipped)
    assert raised["text"] == f"{how} called in {raised['culprit']}"
    assert raised["restored"] and raised["requested"] is None  # nothing was sent; the originals are back


@pytest.mark.slow
@linux_only
def test_what_does_not_end_the_process_passes_through_the_guard():
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))  # the code's own handler
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        with backend_exits.guard():
            os.kill(os.getpid(), 0)  # does the process exist: sends nothing
            os.kill(os.getpid(), signal.SIGUSR1)  # handled by its own Python handler: theirs to send
            os.kill(os.getpid(), signal.SIGCHLD)  # ignored by default
            os.kill(sleeper.pid, signal.SIGKILL)  # another process
            assert sleeper.wait(timeout=SAFETY_NET_S) == -signal.SIGKILL
            guarded = []
            worker = threading.Thread(target=lambda: guarded.append(backend_exits._guarding()))
            worker.start()
            worker.join(SAFETY_NET_S)
            assert backend_exits._guarding() and guarded == [False]  # only the item's thread is guarded
        assert received == [signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, previous)
        sleeper.kill()
        sleeper.wait()


def test_guards_of_two_threads_ending_in_either_order_guard_each_and_restore_the_functions():
    entered, release = threading.Event(), threading.Event()
    seen = []

    def other():
        with backend_exits.guard():
            seen.append(backend_exits._guarding())
            entered.set()
            release.wait(SAFETY_NET_S)
            seen.append(backend_exits._guarding())

    outer = backend_exits.guard()
    outer.__enter__()
    worker = threading.Thread(target=other)
    worker.start()
    assert entered.wait(SAFETY_NET_S)
    outer.__exit__(None, None, None)  # the main thread's guard ends first
    assert os._exit is backend_exits._exit and not backend_exits._guarding()  # still on, for the other thread only
    release.set()
    worker.join(SAFETY_NET_S)
    assert seen == [True, True]
    assert os._exit is posix._exit and os._exit is not backend_exits._exit and backend_exits._guard["threads"] == {}


@linux_only
def test_a_child_forked_inside_the_guard_exits_for_real():
    with backend_exits.guard():
        result = run_forked(lambda: os._exit(5), SAFETY_NET_S)
        killed = run_forked(lambda: os.kill(os.getpid(), signal.SIGKILL), SAFETY_NET_S)
    assert (result.status, result.exit_code) == ("crashed", 5)
    assert (killed.status, killed.signal_name) == ("crashed", "SIGKILL")


# -- the user's interrupt, told from a raised KeyboardInterrupt ----------------------------------------------

@linux_only
def test_a_keyboard_interrupt_is_the_users_only_when_a_signal_could_have_raised_it():
    with interrupts.handling():
        assert not interrupts.from_signal(KeyboardInterrupt())  # our handler is on and no signal came: code raised it
        assert interrupts.from_signal(interrupts.Interrupted(signal.SIGINT))
        with pytest.raises(interrupts.Interrupted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(SAFETY_NET_S)
        assert interrupts.from_signal(KeyboardInterrupt())  # a signal came: whatever raised it, the run stops
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert interrupts.from_signal(KeyboardInterrupt())  # Python's handler raises it unremembered: the user's
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in an isolated child: no signal raises it
        assert not interrupts.from_signal(KeyboardInterrupt())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not interrupts.from_signal(SystemExit(4)) and backend_exits.is_backend_exit(SystemExit(4))


def _backend_parsing_arguments():
    import argparse
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        argparse.ArgumentParser(prog="vendor").parse_args(["--no-such-flag"])


def test_the_place_named_is_the_code_under_test_not_the_library_that_exited():
    with pytest.raises(SystemExit) as raised:
        _backend_parsing_arguments()  # argparse (the standard library) calls sys.exit(2) for it
    assert backend_exits.describe(raised.value).startswith(f"SystemExit(2) raised in {__name__}."
                                                           "_backend_parsing_arguments (")
    assert backend_exits.blames_backend(raised.value)


def test_a_group_holding_the_users_interrupt_is_the_users():
    with interrupts.handling():
        users = BaseExceptionGroup("two", [SystemExit(1), interrupts.Interrupted(signal.SIGTERM)])
        codes = BaseExceptionGroup("two", [SystemExit(1), KeyboardInterrupt()])
        assert not backend_exits.is_backend_exit(users) and backend_exits.is_backend_exit(codes)


@linux_only
def test_after_the_users_ctrl_c_every_exit_is_the_users_stop_passing_through():
    """Vendor code's `except KeyboardInterrupt: sys.exit(130)` after the user's Ctrl-C is not the backend's exit."""
    with interrupts.handling():
        assert backend_exits.is_backend_exit(SystemExit(130))  # no signal yet: code's own exit
        with pytest.raises(interrupts.Interrupted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(SAFETY_NET_S)
        for exc in (SystemExit(130), KeyboardInterrupt(), GeneratorExit(),
                    backend_exits.ProcessEndRequested("os._exit(1)", "vendor.f")):
            assert not backend_exits.is_backend_exit(exc), exc
    assert backend_exits.is_backend_exit(SystemExit(130))  # the run is over: a later run's items are judged afresh


@linux_only
def test_a_vendor_turning_the_users_ctrl_c_into_sys_exit_stops_the_run_with_the_users_signal(monkeypatch,
                                                                                           decoder_settings):
    from torchcts.engine import run as engine_run

    def vendor_code(cts):
        try:
            # the user's Ctrl-C arrives while the vendor's code runs (from another thread: not the code's own call)
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
            time.sleep(SAFETY_NET_S)
        except KeyboardInterrupt:
            sys.exit(130)

    monkeypatch.setattr(engine_run, "property_check", lambda name: vendor_code)
    with interrupts.handling():
        with pytest.raises(interrupts.Interrupted) as stopped:
            run_item(decoder_item("correctly"), decoder_settings)
    assert stopped.value.signum == signal.SIGINT and isinstance(stopped.value.__context__, SystemExit)


def test_a_vendor_package_installed_inside_the_standard_librarys_folder_is_blamed_not_torchcts():
    """pyenv, conda and Docker Pythons install packages into lib/python3.X/site-packages, under the standard
    library's folder: an exit there is the vendor's."""
    import sysconfig
    import types

    filename = os.path.join(sysconfig.get_paths()["stdlib"], "site-packages", "vendor_quant", "decode.py")
    module = types.ModuleType("vendor_quant.decode")
    exec(compile("import sys\ndef decode():\n    sys.exit(4)\n", filename, "exec"), module.__dict__)
    with pytest.raises(SystemExit) as raised:
        module.decode()
    assert backend_exits.blames_backend(raised.value)
    assert backend_exits.describe(raised.value).startswith(f"SystemExit(4) raised in vendor_quant.decode.decode "
                                                           f"({filename}:3)")
    assert backend_exits.in_stdlib(os.__file__) and not backend_exits.in_stdlib(filename)


# -- items: custom decoders, in the run's process and isolated ---------------------------------------------

@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@linux_only
@pytest.mark.parametrize("isolated", [False, True], ids=["in-process", "forked"])
@pytest.mark.parametrize("mode", list(EXITS))
def test_a_decoder_that_exits_ends_its_item_naming_where_and_the_next_item_runs(decoder_settings, mode, isolated):
    settings = attrs.evolve(decoder_settings, isolation=IsolationPolicy(everything=True, start="fork")) \
        if isolated else decoder_settings
    outcome, line = EXITS[mode]
    with interrupts.handling():  # as in a run: SIGTERM and SIGINT are the run's
        record = run_item(decoder_item(mode), settings)
        after = run_item(decoder_item("correctly"), settings)
    assert record["outcome"] == outcome, record
    assert record["error_line"].startswith(line), record["error_line"]
    assert "exiting_decoders.py:" in record["error_line"]  # the file and line too
    assert record.get("isolated") == ("--subprocess-per-test" if isolated else None)
    if outcome == Outcome.ERROR:
        assert record["error_kind"] == "backend" and "stops a program rather than failing an item" in record["reason"]
    else:
        assert "asked to end the process running it" in record["reason"]
    assert after["outcome"] == Outcome.PASSED, after  # the process and its handlers are intact
    assert os._exit is posix._exit and os.kill is posix.kill and os._exit is not backend_exits._exit
    assert interrupts.requested() is None


@linux_only
def test_the_users_ctrl_c_inside_a_decoder_still_stops_the_item(decoder_settings):
    with interrupts.handling():
        with pytest.raises(interrupts.Interrupted):
            run_item(decoder_item("user_presses_ctrl_c"), decoder_settings)
        assert interrupts.requested() == signal.SIGINT


# -- items: a hook's and an optimizer step's op, a custom property -------------------------------------------

def _exit_in_op(func, args, kwargs, result):
    sys.exit(7)


def _os_exit_in_op(func, args, kwargs, result):
    os._exit(9)


def _inside(function_name: str):
    """A bug condition: the op is called (on the device) from a function of this name: a hook of the suite."""
    def fires(func, args, kwargs) -> bool:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != function_name:
            frame = frame.f_back
        return frame is not None
    return fires


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@linux_only
@pytest.mark.parametrize("prop, scenario, op, caller, perturb, outcome, line", [
    ("module_hooks", "mlp", "aten.add.Tensor", "forward_pre", _exit_in_op, Outcome.ERROR,
     f"SystemExit(7) raised in {__name__}._exit_in_op"),
    ("foreach_optimizer", "foreach_sgd", "aten._foreach_mul_.Scalar", "_multi_tensor_sgd", _os_exit_in_op, Outcome.CRASHED,
     f"os._exit(9) called in {__name__}._os_exit_in_op"),
], ids=["forward-pre-hook-sys-exit", "optimizer-step-os-exit"])
def test_a_kernel_that_exits_inside_a_hook_or_an_optimizer_step(tmp_path, monkeypatch, prop, scenario, op, caller,
                                                                perturb, outcome, line):
    """The kernel a suite's forward pre-hook (or an optimizer's step) calls on the device exits. (A backward hook runs
    in autograd's device thread, where torch itself aborts the process on a SystemExit: a native crash, not this.)"""
    from torchcts.testing import faulty
    from torchcts.testing.faulty import bugs
    from torchcts.testing.faulty.bug_model import Bug
    from torchcts.testing.selftest import faulty_manifest

    monkeypatch.setitem(bugs.BUGS, "exits", Bug("exits", (op,), f"called from {caller}", "ends the program",
                                                _inside(caller), perturb, kind="crash"))
    (tmp_path / "manifest.py").write_text(faulty_manifest())
    manifest, _ = load_manifest(tmp_path / "manifest.py")
    settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=8, max_examples=2, versions=versions())
    registry.load()
    item = PlanItem(prop, scenario, "scenario", "float32", registry.get(prop).level)
    faulty.disable_bugs()
    faulty.enable_bugs("exits")
    try:
        record = run_item(item, settings)
    finally:
        faulty.disable_bugs()
    assert record["outcome"] == outcome, record
    assert record["error_line"].startswith(line), record["error_line"]


def _empty_cache_exits(self):
    os._exit(3)


def _empty_cache_sys_exits(self):
    sys.exit(6)


@linux_only
@pytest.mark.parametrize("empty_cache, isolated, said", [
    (_empty_cache_exits, True, f"os._exit(3) called in {__name__}._empty_cache_exits"),
    (_empty_cache_sys_exits, False, f"SystemExit(6) raised in {__name__}._empty_cache_sys_exits"),
], ids=["os-exit-forked", "sys-exit-in-process"])
def test_the_backends_cache_cleanup_after_an_item_runs_inside_its_guard(tmp_path, monkeypatch, empty_cache,
                                                                         isolated, said):
    """The device's empty_cache after the item (its memory looks full) exits: the item keeps its record and says so.
    (os._exit runs in a forked item: were the guard missing, the child would end and the record be `crashed`.)"""
    import torch

    from torchcts.testing import faulty
    from torchcts.testing.selftest import faulty_manifest

    faulty.enable()
    (tmp_path / "manifest.py").write_text(faulty_manifest()
                                          + 'manifest["resource_limits"] = {"max_device_memory_mb": 64}\n')
    manifest, _ = load_manifest(tmp_path / "manifest.py")
    settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=8, max_examples=2, versions=versions(),
                              isolation=IsolationPolicy(everything=True, start="fork") if isolated else None)
    monkeypatch.setattr(type(torch.faulty), "memory_reserved", lambda self, device=None: 2**40)
    monkeypatch.setattr(type(torch.faulty), "empty_cache", empty_cache)
    registry.load()
    record = run_item(PlanItem("device_api", "synchronize", "scenario", "float32", registry.get("device_api").level),
                      settings)
    assert record["outcome"] == Outcome.PASSED, record
    assert record["cleanup_error"].startswith(said), record


def _allocator_os_exit(func, args, kwargs, result):
    os._exit(3)


def _allocator_sys_exit(func, args, kwargs, result):
    sys.exit(5)


@linux_only
@pytest.mark.parametrize("perturb, said", [
    (_allocator_os_exit, f"os._exit(3) called in {__name__}._allocator_os_exit"),
    (_allocator_sys_exit, f"SystemExit(5) raised in {__name__}._allocator_sys_exit"),
], ids=["os-exit", "sys-exit"])
def test_a_backend_exiting_in_the_start_checks_is_one_session_error_naming_where(monkeypatch, perturb, said):
    """The device check and probe before any item allocate on the device; its allocator exits. In a forked child:
    were the guard missing, os._exit(3) would end that child, not the test run."""
    from torchcts.run_setup.device import start_checks
    from torchcts.run_setup.errors import SessionError
    from torchcts.testing import faulty
    from torchcts.testing.faulty import bugs
    from torchcts.testing.faulty.bug_model import Bug

    monkeypatch.setitem(bugs.BUGS, "exits", Bug("exits", ("aten.empty.memory_format",), "always", "ends the program",
                                                lambda func, args, kwargs: True, perturb, kind="crash"))

    def check() -> str:
        faulty.enable()
        faulty.disable_bugs()
        faulty.enable_bugs("exits")
        try:
            start_checks("faulty")
        except SessionError as exc:
            return str(exc)
        finally:
            faulty.disable_bugs()
        return "no SessionError"

    result = run_forked(check, SAFETY_NET_S)
    assert result.status == "finished", result.describe()
    assert result.answer.startswith(f"--device 'faulty': the backend ended TorchCTS's device check: {said} ("), \
        result.answer
    assert "\n" not in result.answer


CUSTOM_SUITE = '''
import os
import signal
import sys

from torchcts.plan.registry import ScenarioItems, register_property

ITEMS = ScenarioItems(["once"], ["float32"])


@register_property("exits_with_sys_exit", capability="inference", level=1, items=ITEMS)
def test_exits_with_sys_exit(cts):
    sys.exit("custom property gives up")


@register_property("exits_with_sigkill", capability="inference", level=1, items=ITEMS)
def test_exits_with_sigkill(cts):
    os.kill(os.getpid(), signal.SIGKILL)
'''


@linux_only
def test_a_custom_property_that_exits_ends_its_item(tmp_path, monkeypatch, decoder_settings):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "test_exiting_suite.py").write_text(CUSTOM_SUITE)
    registry.load([tmp_path / "suites"])
    exited = run_item(PlanItem("exits_with_sys_exit", "once", "scenario", "float32", 1), decoder_settings)
    killed = run_item(PlanItem("exits_with_sigkill", "once", "scenario", "float32", 1), decoder_settings)
    assert exited["outcome"] == Outcome.ERROR and exited["error_kind"] == "backend"
    assert exited["error_line"].startswith("SystemExit('custom property gives up') raised in torchcts_custom_properties.")
    assert ".test_exiting_suite.test_exits_with_sys_exit (" in exited["error_line"]
    assert killed["outcome"] == Outcome.CRASHED
    assert ".test_exiting_suite.test_exits_with_sigkill (" in killed["error_line"]


# -- probes -----------------------------------------------------------------------------------------------

def _probe_exits(env):
    env.steps.run("decode on purpose", lambda: sys.exit(4))


def _probe_os_exits(env):
    env.steps.run("leave on purpose", lambda: os._exit(3))


@linux_only
@pytest.mark.parametrize("fork", [False, True], ids=["in-process", "forked"])
def test_a_probe_that_exits_costs_that_probe_only_and_names_where(monkeypatch, fork):
    monkeypatch.setitem(capability_probes.CAPABILITY_PROBES, "streams", _probe_exits)
    monkeypatch.setitem(capability_probes.CAPABILITY_PROBES, "events", _probe_os_exits)
    probes = [("capability", "inference"), ("capability", "streams"), ("capability", "events"),
              ("capability", "training")]
    results = run_probes("cpu", probes, fork=fork)
    assert [(r.name, r.status) for r in results] == [("inference", OK), ("streams", FAILED), ("events", FAILED),
                                                     ("training", OK)]
    exited, left = results[1], results[2]
    assert exited.step == "decode on purpose"
    assert exited.error.startswith(f"SystemExit(4) raised in {__name__}._probe_exits.<locals>.<lambda>")
    assert left.step == "leave on purpose"
    assert left.error.startswith(f"crashed: os._exit(3) called in {__name__}._probe_os_exits.<locals>.<lambda>")


# -- a whole run --------------------------------------------------------------------------------------------

@pytest.mark.slow
@linux_only
def test_a_run_whose_decoders_exit_keeps_every_item_and_complete_counts(tmp_path):
    formats = {"uint4_msb_first": "exit", "nf4": "os_exit", "int4_symmetric": "keyboard", "uint8": "sigterm",
               "uint4": "correctly"}
    manifest = decoder_manifest(tmp_path, formats)
    run = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--manifest", str(manifest),
                          "--property", "quantized_decoders", "--dtype", "float32", "--max-examples", "2",
                          "--results-dir", "results", "--no-report"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=SAFETY_NET_S,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]  # errors found; not 0, not 143
    (folder,) = [p.parent for p in (tmp_path / "results").glob("*/run.json")]
    summary = json.loads((folder / "run.json").read_text())
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    started = [json.loads(line)["item"] for line in (folder / "started.jsonl").read_text().splitlines()]
    assert summary["status"] == "complete" and summary["complete"], summary
    assert summary["counts"] == dict(collections.Counter(r["outcome"] for r in records))
    executed = {r["op"]: r for r in records if r["item"] in started}
    assert sorted(executed) == sorted(formats) and len(started) == len(formats)  # every planned item has a record
    for fmt, mode in formats.items():
        outcome, line = EXITS.get(mode, (Outcome.PASSED, None))
        assert executed[fmt]["outcome"] == outcome, executed[fmt]
        if line is not None:
            assert executed[fmt]["error_line"].startswith(line), executed[fmt]["error_line"]
            assert f"{line}" in run.stdout  # the console's line for the item names it too
    assert "pytest deselected" not in run.stdout
