"""selftest's plan: the OpInfo properties at --level in --dtype, the scenario suites at their own levels in
every dtype they list; a detection table per suite; --bug names a seeded bug or is a one-line error."""

from __future__ import annotations

from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.plan import registry
from torchcts.testing.selftest import BugResult, SelftestReport, chosen_bugs, phases, print_report


def _spec(name, level, scenario):
    items = registry.ScenarioItems([name], ["float32"]) if scenario else registry.OpInfoItems()
    return registry.PropertySpec(name, "inference", level, items, lambda cts: None)


def test_opinfo_properties_run_at_the_level_asked_and_suites_at_their_own():
    specs = [_spec("forward", 1, False), _spec("inplace", 3, False), _spec("views", 3, True),
             _spec("sparse", 4, True)]
    opinfo, suites = phases(2, ("float32", "int32"), specs)
    assert (opinfo.properties, opinfo.level, opinfo.dtypes) == (("forward",), 2, ("float32", "int32"))
    assert (suites.properties, suites.level, suites.dtypes) == (("views", "sparse"), 4, ())


def test_the_installed_suites_are_a_phase_of_their_own():
    specs = registry.load()
    names = {p.name for p in specs if p.scenario and p.capability != "compile"}
    found = {phase.name: phase for phase in phases(2, ("float32",))}
    assert {"views", "copies", "ieee754", "sparse", "nested", "foreach", "fp8", "channels_last"} <= names
    assert set(found["suites"].properties) == names and found["suites"].dtypes == ()
    assert "compile_modules" not in found["suites"].properties  # a phase of its own
    assert not names & set(found["opinfo"].properties)
    compiled = found["compile"]
    assert (compiled.properties, compiled.level, compiled.bug_suites) == (("compile_modules",), 6, ("compile_modules",))
    assert compiled.ops == ("_aot_eager$",)  # inductor builds C++ for each op graph of the faulty device


def test_the_compile_phase_reruns_for_its_own_bugs_and_the_others_never_do():
    from torchcts.testing.faulty.bugs import BUGS

    found = {phase.name: phase for phase in phases(2, ("float32",))}
    owned = {suite for phase in found.values() for suite in phase.bug_suites}
    compile_bugs = {name for name, bug in BUGS.items() if found["compile"].runs(bug, owned)}
    assert compile_bugs == {"compiled_addmm_drops_bias", "compiled_batch_norm_biased_running_var"}
    for name in ("opinfo", "suites"):
        assert not compile_bugs & {n for n, bug in BUGS.items() if found[name].runs(bug, owned)}
        assert found[name].runs(BUGS["batch_norm_keeps_running_var"], owned)
    assert {bug.name for bug in chosen_bugs([found["compile"]], owned)} == compile_bugs  # --phase compile
    everything = {bug.name for bug in chosen_bugs(found.values(), owned)}
    assert compile_bugs < everything and "batch_norm_keeps_running_var" in everything
    assert not compile_bugs & {bug.name for bug in chosen_bugs([found["opinfo"], found["suites"]], owned)}


def test_bugs_of_opinfo_properties_above_the_level_are_not_run_and_say_which_level_runs_them():
    from torchcts.testing.faulty.bugs import BUGS
    from torchcts.testing.selftest import deferred_bugs

    specs = [_spec("forward", 1, False), _spec("gradcheck", 4, False), _spec("views", 3, True)]
    bugs = [BUGS["log_softmax_backward_float64_drops_sum"], BUGS["backward_reuses_grad_output"]]
    assert [b.suite for b in bugs] == ["gradcheck", "double_backward"]
    assert deferred_bugs(bugs, 2, specs) == (("log_softmax_backward_float64_drops_sum", "gradcheck", 4),)
    assert deferred_bugs(bugs, 4, specs) == ()
    on_the_registry = deferred_bugs(BUGS.values(), 2)
    assert {name for name, _, _ in on_the_registry} == {"log_softmax_backward_float64_drops_sum",
                                                        "backward_reuses_grad_output"}
    lines = []
    print_report(SelftestReport((), (), deferred_bugs=on_the_registry), lines.append)
    assert any(line.startswith("  NOT RUN  backward_reuses_grad_output [double_backward]: its suite is a level-4")
               and "selftest --level 4" in line for line in lines)


def test_the_report_prints_a_table_per_suite_and_names_missed_bugs():
    report = SelftestReport((), (BugResult("a", "does a", ("abs",), ("forward-abs",), "opinfo"),
                                 BugResult("b", "does b", ("transpose_write",), (), "views"),
                                 BugResult("c", "does c", (), (), "views")))
    lines = []
    print_report(report, lines.append)
    assert lines[0] == "seeded bugs detected: 1/3 (33%)"
    assert "| opinfo | 1 | 1 |" in lines and "| views | 2 | 0 |" in lines
    assert "  MISSED   b [views]: does b (1 ops reach it)" in lines
    assert "  MISSED   c [views]: does c (no item reaches its ops)" in lines
    assert not report.ok


def test_an_unknown_bug_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli, ["selftest", "--bug", "tile_sun", "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert result.output.startswith("--bug 'tile_sun': not a seeded bug selftest runs; known: ")
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
