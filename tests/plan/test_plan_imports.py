"""The plan stage imports one way: manifest and the registry, never the crash ledger or the engine
(the old plan -> oracle_crashes -> known_crashes -> plan cycle is gone)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_plan_imports_no_later_stage():
    code = ("import json, sys, torchcts.plan.build, torchcts.plan.skips; "
            "print(json.dumps(sorted({m.split('.')[1] for m in sys.modules if m.startswith('torchcts.')})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    stages = json.loads(result.stdout)
    assert not {"crashes", "engine", "plugin", "properties", "cases", "results", "cli"} & set(stages), stages
