"""Shell completion: click's, with --property, --dtype, --capability and --template values, without torch.

Completions are asked for as a shell asks: the real command in a subprocess with click's
environment variables (`_TORCHCTS_COMPLETE=bash_complete`, COMP_WORDS, COMP_CWORD).
"""

from __future__ import annotations

import os
import sys

import pytest
from click.testing import CliRunner

from torchcts.cli import completion
from torchcts.cli.main import cli
from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.plan import registry
from tests import warm_programs

# modules a completion must not import: each costs from a tenth of a second (pytest) to seconds (torch)
HEAVY = ("torch", "hypothesis", "pytest", "torchcts.manifest", "torchcts.plan.registry", "torchcts.plugin")

# Runs the entry point as the console script does and, at exit, prints the heavy modules it loaded to stderr.
ENTRY = f"""
import atexit, sys
atexit.register(lambda: print("loaded:", [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr))
sys.argv[0] = "torchcts"
from torchcts.cli.main import main
main()
"""


def complete(*words: str, shell: str = "bash") -> tuple[list[str], str]:
    """(the values `torchcts WORDS...<Tab>` completes to, the subprocess's stderr); the last word is the one typed.
    COMP_CWORD is the index of that word (bash, zsh) or the word itself (fish), as each shell's script sets it."""
    env = dict(os.environ, _TORCHCTS_COMPLETE=f"{shell}_complete", COMP_WORDS=" ".join(("torchcts", *words)),
               COMP_CWORD=words[-1] if shell == "fish" else str(len(words)))
    env.pop("PYTHONHASHSEED", None)  # a completion never re-executes itself to fix the hash seed
    result = warm_programs.run([sys.executable, "-c", ENTRY], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    if shell == "zsh":  # type, value, help: three lines per completion
        return lines[1::3], result.stderr
    return [line.split(",", 1)[1].split("\t")[0] for line in lines if line], result.stderr


def test_the_generated_names_module_is_current():
    from torchcts.cli.completion_listing import TARGET, render

    assert TARGET.read_text() == render(), "run: python scripts/generate_registry_listings.py"


def test_the_static_names_match_their_sources():
    from torchcts.dtypes import claimable_names
    from torchcts.manifest.template_names import TEMPLATE_NAMES
    from torchcts.manifest.vocabulary import CAPABILITIES
    from torchcts.plan import registry

    registry.load()
    assert completion.PROPERTY_NAMES == registry.names(), "run: python scripts/generate_registry_listings.py"
    assert completion.DTYPE_NAMES == tuple(claimable_names()), "run: python scripts/generate_registry_listings.py"
    assert completion.CAPABILITY_NAMES == tuple(CAPABILITIES), "run: python scripts/generate_registry_listings.py"
    assert completion.TEMPLATE_NAMES == TEMPLATE_NAMES, "run: python scripts/generate_registry_listings.py"


@pytest.mark.slow
@pytest.mark.parametrize(("words", "expected"), [
    (("run", "--property", ""), list(completion.PROPERTY_NAMES)),
    (("fuzz", "--property", "la"), ["layout"]),
    (("show-skips", "--manifest", "m.py", "--property", "ba"), ["backward"]),
    (("run", "--device", "cpu", "--dtype", "bf"), ["bfloat16"]),
    (("show-skips", "--dtype", "float32,bf"), ["float32,bfloat16"]),  # the last name of a comma list
    (("selftest", "--dtype", "torch.bfl"), ["torch.bfloat16"]),
    (("show-skips", "--capability", "tr"), ["training"]),
    (("show-skips", "--capability", "de"), ["device_generator", "deterministic", "device_api"]),
    (("init", "--template", "sm"), ["smoke"]),
    (("sh",), ["show-skips"]),
    (("show-skips", "--cap"), ["--capability"]),
])
def test_a_tab_completes_names_without_importing_torch(words, expected):
    found, stderr = complete(*words)
    assert found == expected
    assert "loaded: []" in stderr  # no torch, Hypothesis, pytest, manifest model or property registry


@pytest.mark.slow
@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_complete_the_same_names(shell):
    assert complete("run", "--property", "", shell=shell)[0] == list(completion.PROPERTY_NAMES)
    assert complete("fuzz", "--dtype", "float32,bf", shell=shell)[0] == ["float32,bfloat16"]


@pytest.mark.slow
@pytest.mark.parametrize(("shell", "fragment"), [
    ("bash", "complete -o nosort -F _torchcts_completion torchcts"),
    ("zsh", "#compdef torchcts"),
    ("fish", "complete --no-files --command torchcts"),
])
def test_the_completion_script_for_each_shell(shell, fragment):
    result = warm_programs.run([sys.executable, "-m", "torchcts"], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, _TORCHCTS_COMPLETE=f"{shell}_source"))
    assert result.returncode == 0 and fragment in result.stdout, result.stdout + result.stderr


def test_show_skips_narrows_the_accounting_to_a_capability(tmp_path, monkeypatch):
    (tmp_path / "manifest.py").write_text('manifest = {"manifest_version": 1, "device_name": "cpu", '
                                          '"supported_dtypes": {"float32": True}, '
                                          '"capabilities": {"inference": True, "training": False}}\n')
    untested_capability = "teleportation"  # a capability the vocabulary might gain before its suite exists
    monkeypatch.setitem(CAPABILITIES, untested_capability, "moves tensors without copies")
    option = next(p for p in cli.commands["show-skips"].params if p.name == "capabilities")
    monkeypatch.setattr(option.type, "_names", None)  # its names load again, with the new one
    runner = CliRunner()
    common = ["show-skips", "--manifest", str(tmp_path / "manifest.py"), "--level", "4", "--ops", "^abs$",
              "--dtype", "float32", "--list"]
    training = runner.invoke(cli, [*common, "--capability", "training"])
    assert training.exit_code == 0, training.output
    assert training.output.startswith("capability training: properties training, backward\n")
    assert "backward::abs::function::float32" in training.output and "forward::abs" not in training.output
    assert "the backward property needs the training capability" in training.output
    registry.load()
    tested = {registry.get(name).capability for name in registry.names()}
    assert sorted(set(CAPABILITIES) - tested) == [untested_capability]  # every real one has a suite (issue 20)
    untested = runner.invoke(cli, [*common, "--capability", untested_capability])
    assert untested.exit_code == 0 and "no registered property tests it" in untested.output
    assert "0 items would run, 0 would not" in untested.output
    bad = runner.invoke(cli, [*common, "--capability", "trainnig"])
    assert bad.exit_code == 2 and "'trainnig' is not one of" in bad.output
