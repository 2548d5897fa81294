"""`shared_folder` builds once for all workers of a session and rebuilds what a failed build left."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from tests.shared_runs import shared_folder


class _Factory:
    """The one thing `shared_folder` asks of pytest's tmp_path_factory: the session's base folder."""

    def __init__(self, base):
        self.base = base

    def getbasetemp(self):
        return self.base


def _ask(base, log) -> None:
    def build(folder):
        with open(log, "a") as out:
            out.write("built\n")
        time.sleep(0.3)  # widen the window another asker would race in
        (folder / "value").write_text("42")

    folder = shared_folder(_Factory(base), "answer", build)
    assert (folder / "value").read_text() == "42"


def test_concurrent_askers_build_once_and_all_read_the_result(tmp_path):
    log = tmp_path / "log"
    context = multiprocessing.get_context("fork")
    askers = [context.Process(target=_ask, args=(tmp_path, log)) for _ in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(60)  # a safety net
    assert [asker.exitcode for asker in askers] == [0, 0, 0, 0]
    assert log.read_text() == "built\n"


def test_a_failed_build_is_built_again_by_the_next_asker(tmp_path):
    def broken(folder):
        (folder / "half").write_text("")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        shared_folder(_Factory(tmp_path), "x", broken)
    folder = shared_folder(_Factory(tmp_path), "x", lambda f: (f / "whole").write_text(""))
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == ["whole"]
