"""Replay items and the replay command a stored case names: the engine's side of replay imports no front
end, and the printed command carries the run's manifest, quoted for a shell."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from torchcts.cases.replay_items import replay_flags


@pytest.mark.slow
def test_the_engine_and_the_exporter_import_no_front_end():
    code = ("import sys, torchcts.engine.run, torchcts.cases.replay_items, torchcts.cases.export; "
            "print(sorted(m for m in sys.modules if m.startswith(('torchcts.plugin', 'torchcts.cli', "
            "'torchcts.fuzz'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_the_replay_flags_name_device_backend_and_manifest_quoted():
    assert replay_flags("cpu", None, None) == "--device cpu"
    assert replay_flags("cuda:1", "inductor", "/m/manifest.py") == \
        "--device cuda:1 --compile inductor --manifest /m/manifest.py"
    flags = replay_flags("cpu", None, "/my suites/it's manifest.py")
    assert shlex.split(flags) == ["--device", "cpu", "--manifest", "/my suites/it's manifest.py"]
