"""The test tiers hold: a test outside `slow` that starts a program fails naming it; forks and slow tests pass.

Runs tests/conftest.py's guard in an inner pytest session. Marked slow itself: the inner tests do try to start
programs, and the guard of this (outer) session would blame this test for them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

INNER_TESTS = '''
import multiprocessing
import os
import subprocess

import pytest


def test_starts_a_subprocess():
    subprocess.run(["true"], check=True)


def test_hides_the_start_it_made():
    try:
        subprocess.run(["true"], check=True)
    except BaseException:
        pass


def test_spawns_a_multiprocessing_worker():
    worker = multiprocessing.get_context("spawn").Process(target=print)
    worker.start()
    worker.join()


def test_forks():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0


@pytest.mark.slow
def test_marked_slow_starts_a_subprocess():
    subprocess.run(["true"], check=True)


def test_starts_nothing():
    assert True
'''

SHARED_FIXTURE_TESTS = '''
import subprocess

import pytest


@pytest.fixture(scope="module")
def cli_run():
    return subprocess.run(["true"]).returncode


@pytest.mark.slow
def test_slow_sets_up_the_shared_run(cli_run):
    assert cli_run == 0


def test_fast_uses_the_shared_run(cli_run):
    assert cli_run == 0
'''


@pytest.mark.slow
def test_a_fast_test_that_starts_a_program_fails_naming_it(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=3)
    outcomes = {report.nodeid.split("::")[-1]: report.outcome
                for report in result.reprec.getreports("pytest_runtest_logreport") if report.when == "call"}
    assert outcomes == {"test_starts_a_subprocess": "failed", "test_hides_the_start_it_made": "failed",
                        "test_spawns_a_multiprocessing_worker": "failed", "test_forks": "passed",
                        "test_marked_slow_starts_a_subprocess": "passed", "test_starts_nothing": "passed"}
    result.stdout.fnmatch_lines(["*test_inner.py::test_starts_a_subprocess starts a program (subprocess.Popen: true)"
                                 " but is not marked slow*"])
    result.stdout.fnmatch_lines(["*test_hides_the_start_it_made starts a program*"])
    result.stdout.fnmatch_lines(["*test_spawns_a_multiprocessing_worker starts a program (multiprocessing.spawn*"])


@pytest.mark.slow
def test_a_fast_test_using_a_fixture_that_started_a_program_fails_in_any_order(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_shared=SHARED_FIXTURE_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")  # the slow test sets the fixture up first
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_fast_uses_the_shared_run uses cli_run, a fixture that starts a program*"])
    fast_only = pytester.runpytest("-p", "no:cacheprovider", "-m", "not slow")  # the fast test sets it up
    fast_only.assert_outcomes(errors=1, deselected=1)
    fast_only.stdout.fnmatch_lines(["*test_fast_uses_the_shared_run starts a program (subprocess.Popen: true)*"])


def test_the_fast_tier_leaves_out_exactly_the_slow_tests(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", "-m", "not slow")
    result.stdout.fnmatch_lines(["*5/6 tests collected (1 deselected)*"])


@pytest.mark.slow
def test_a_torchcts_run_started_in_the_checkout_is_not_guarded(tmp_path):
    """`torchcts run` in the checkout (as `make run` starts it) loads tests/conftest.py; the guard leaves its items
    alone: an item isolated in a spawned worker interpreter passes instead of failing as a fast test would."""
    import subprocess
    import sys

    repo = CONFTEST.parent.parent
    completed = subprocess.run(
        [sys.executable, "-m", "torchcts", "run", "--validation", "--ops", "^add$", "--level", "1", "--dtype", "float32",
         "--max-examples", "2", "--subprocess-per-test", "--isolation-start", "spawn",
         "--results-dir", str(tmp_path / "results"), "--corpus-dir", str(tmp_path / "corpus")],
        cwd=repo, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    assert "passed 1" in completed.stdout, completed.stdout[-2000:]
