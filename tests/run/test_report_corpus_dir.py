"""The report written at the end of a run reads the counterexamples the run stored in its own --corpus-dir,
also one outside the results folder (the report is given the run's corpus, as `torchcts report --corpus-dir`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from torchcts.manifest.templates import render_template
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

SAFETY_NET_S = 600
CASE = "missing-kernel-faulty-PrivateUse1-aten.trunc.json"


@pytest.mark.parametrize("spelled", ["absolute", "relative"])
def test_the_end_of_run_report_reads_the_case_stored_in_the_runs_corpus_outside_its_results(tmp_path: Path,
                                                                                              spelled: str):
    """Also with `--corpus-dir ../elsewhere/corpus`: the record holds the case's whole path, not one with '..'."""
    project, corpus = tmp_path / "project", tmp_path / "elsewhere" / "corpus"
    project.mkdir()
    given = str(corpus) if spelled == "absolute" else os.path.join("..", "elsewhere", "corpus")
    (project / "manifest.py").write_text(render_template("minimal", device_name="faulty"))
    done = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--manifest", "manifest.py",
                           "--derandomize", "--ops", "^trunc$", "--dtype", "float32", "--level", "1",
                           "--max-examples", "2", "--results-dir", "R", "--corpus-dir", given],
                          cwd=project, capture_output=True, text=True, timeout=SAFETY_NET_S,
                          env={**os.environ, "TORCHCTS_FAULTY_BUGS": "missing_kernel"})
    output = done.stdout + done.stderr
    assert done.returncode == 1 and (corpus / CASE).is_file(), output[-3000:]
    assert "counterexample not read" not in output and "torchcts: report in" in output, output[-3000:]
    [summary] = (project / "R").glob("*/report/summary.json")
    assert str(corpus / CASE) in summary.read_text()
