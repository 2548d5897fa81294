"""`torchcts init` and its templates: every template is valid, says what it is for, lists every key."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import load_manifest, read_manifest_dict
from torchcts.manifest import schema
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.templates import TEMPLATE_NAMES, render_template


def run(*args, **kwargs):
    return CliRunner().invoke(cli, list(args), **kwargs)


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_every_template_passes_check_manifest_without_warnings(tmp_path, template):
    out = tmp_path / "manifest.py"
    result = run("init", "--template", template, "--non-interactive", "--output", str(out))
    assert result.exit_code == 0, result.output
    check = run("check-manifest", "--manifest", str(out), "--strict")
    assert check.exit_code == 0, check.stderr
    assert check.stderr == ""
    assert "valid manifest" in check.output


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_every_template_states_its_purpose_and_lists_every_capability(tmp_path, template):
    text = render_template(template)
    first = text.splitlines()[0]
    assert first.startswith(f"# {template}: ")
    assert len(first) > len(f"# {template}: ") + 20
    path = tmp_path / "manifest.py"
    path.write_text(text)
    raw = read_manifest_dict(path)
    assert list(raw["capabilities"]) == list(vocab.CAPABILITIES)
    assert set(raw) == set(schema.KEYS)


def test_templates_claim_more_as_they_go_up(tmp_path):
    manifests = {}
    for name in TEMPLATE_NAMES:
        path = tmp_path / f"{name}.py"
        path.write_text(render_template(name))
        manifests[name], _ = load_manifest(path)
    levels = [manifests[n].semantic_level for n in TEMPLATE_NAMES]
    assert levels == sorted(levels)
    assert manifests["smoke"].claimed_dtypes == (torch.float32,)
    assert manifests["inference"].capabilities < manifests["training"].capabilities
    assert manifests["training"].capabilities < manifests["complete"].capabilities
    assert "multi_device" not in manifests["complete"].capabilities


def test_init_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "manifest.py"
    out.write_text("# my edited manifest\n")
    result = run("init", "--template", "minimal", "--non-interactive", "--output", str(out))
    assert result.exit_code == 2
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert out.read_text() == "# my edited manifest\n"
    result = run("init", "--template", "minimal", "--non-interactive", "--force", "--output", str(out))
    assert result.exit_code == 0
    assert out.read_text().startswith("# minimal: ")


def test_init_writes_manifest_py_in_the_current_folder_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("init", "--template", "smoke", "--non-interactive", "--device-name", "privateuseone")
    assert result.exit_code == 0, result.output
    manifest, _ = load_manifest(tmp_path / "manifest.py")
    assert manifest.device_name == "privateuseone"
    assert not list(tmp_path.glob(".*.partial"))


def test_init_sets_backend_import(tmp_path):
    out = tmp_path / "manifest.py"
    result = run("init", "--template", "smoke", "--non-interactive", "--output", str(out),
                 "--device-name", "faulty", "--backend-import", "torchcts.testing.faulty")
    assert result.exit_code == 0, result.output
    raw = read_manifest_dict(out)
    assert raw["backend_import"] == "torchcts.testing.faulty"


def test_init_rejects_a_bad_device_name_and_writes_nothing(tmp_path):
    out = tmp_path / "manifest.py"
    result = run("init", "--template", "smoke", "--non-interactive", "--output", str(out), "--device-name", "my gpu")
    assert result.exit_code == 2
    assert "device_name" in result.stderr
    assert not out.exists()


def test_non_interactive_init_without_template_is_a_usage_error(tmp_path):
    result = run("init", "--non-interactive", "--output", str(tmp_path / "m.py"))
    assert result.exit_code == 2
    assert "--template is required with --non-interactive" in result.output
    assert not (tmp_path / "m.py").exists()


def test_init_without_template_and_without_a_terminal_does_not_hang(tmp_path):
    result = run("init", "--output", str(tmp_path / "m.py"), input="")
    assert result.exit_code == 2
    assert "stdin is not a terminal" in result.output


@pytest.mark.slow
def test_init_without_template_prompts_on_a_terminal(tmp_path):
    """Run the real CLI on a pseudo-terminal and answer its prompts."""
    out = tmp_path / "manifest.py"
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "torchcts", "init", "--output", str(out)],
                            stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True)
    os.close(secondary)
    transcript = read_until(primary, b"Template")
    os.write(primary, b"training\n")
    transcript += read_until(primary, b"Device name")
    os.write(primary, b"xpu\n")
    transcript += read_until(primary, None)
    assert proc.wait(timeout=300) == 0, transcript.decode(errors="replace")
    os.close(primary)
    assert b"inference: a production inference backend" in transcript  # the choices are explained
    manifest, _ = load_manifest(out)
    assert manifest.device_name == "xpu"
    assert "training" in manifest.capabilities


def read_until(fd, marker, timeout=300.0):
    """Read from a pty until `marker` appears (or, with None, until the other side closes).

    The timeout is a safety net for a busy machine, never a budget: the CLI imports torch first."""
    data = b""
    while marker is None or marker not in data:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"no {marker!r} on the terminal; got {data!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        data += chunk
    return data
