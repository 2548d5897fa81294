"""examples/ci/torchcts-shards.yml: a shard matrix, a merge job, corpus replay and the reports as artifacts;
every `torchcts` command in it is one the real CLI accepts.

PyYAML is not a dependency: `parse_yaml` reads the subset of YAML the workflow uses (block mappings,
block lists, flow lists of scalars, plain and quoted scalars, `|` blocks, comments) and fails loudly on
anything else, so the file stays in that subset.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest

from torchcts.cli.main import cli

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "ci" / "torchcts-shards.yml"


def _strip_comment(text: str) -> str:
    quote = None
    for index, char in enumerate(text):
        if char in "\"'" and quote in (None, char):
            quote = None if quote else char
        elif char == "#" and quote is None and (index == 0 or text[index - 1] in " \t"):
            return text[:index].rstrip()
    return text.rstrip()


def _scalar(text: str) -> Any:
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(part.strip()) for part in text[1:-1].split(",") if part.strip()]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    assert not text.startswith(("{", "&", "*", "!", "|", ">")), f"YAML beyond the subset: {text!r}"
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_yaml(source: str) -> Any:
    """The workflow's subset of YAML as dicts, lists, strings and ints."""
    raw = source.splitlines()
    lines: list[tuple[int, str]] = []  # (indent, text), `|` blocks kept as one ("|", text) entry
    index = 0
    while index < len(raw):
        line = raw[index]
        index += 1
        text = _strip_comment(line)
        if not text.strip():
            continue
        assert "\t" not in line[: len(line) - len(line.lstrip())], "tabs in indentation"
        indent = len(text) - len(text.lstrip())
        if text.endswith(": |") or text.endswith("- |"):
            block = []
            while index < len(raw) and (not raw[index].strip() or len(raw[index]) - len(raw[index].lstrip()) > indent):
                block.append(raw[index])
                index += 1
            depth = min(len(b) - len(b.lstrip()) for b in block if b.strip())
            body = "\n".join(b[depth:] for b in block).strip() + "\n"
            lines.append((indent, text.strip()[:-1].rstrip() + " \0" + body))
        else:
            lines.append((indent, text.strip()))

    def block(at: int, indent: int) -> tuple[Any, int]:
        if lines[at][1].startswith("- ") or lines[at][1] == "-":
            items = []
            while at < len(lines) and lines[at][0] == indent and lines[at][1].startswith("-"):
                rest = lines[at][1][1:].strip()
                if re.match(r"[\w.-]+:( |$)", rest):  # a mapping that starts on the dash's line
                    lines[at] = (indent + 2, rest)
                    value, at = block(at, indent + 2)
                else:
                    value, at = _scalar(rest), at + 1
                items.append(value)
            return items, at
        mapping: dict[str, Any] = {}
        while at < len(lines) and lines[at][0] == indent and not lines[at][1].startswith("- "):
            match = re.fullmatch(r"([\w.-]+):(?: (.*))?", lines[at][1], re.S)
            assert match, f"YAML beyond the subset: {lines[at][1]!r}"
            key, rest = match[1], match[2] or ""
            assert key not in mapping, f"duplicate key {key}"
            if rest.startswith("\0"):
                mapping[key], at = rest[1:], at + 1
            elif rest.strip():
                mapping[key], at = _scalar(rest.strip()), at + 1
            else:
                assert at + 1 < len(lines) and lines[at + 1][0] >= indent, f"{key}: has no value"
                mapping[key], at = block(at + 1, lines[at + 1][0])
        return mapping, at

    value, end = block(0, lines[0][0])
    assert end == len(lines), f"unparsed YAML from {lines[end][1]!r}"
    return value


def test_the_parser_reads_the_subset():
    doc = parse_yaml("a: 1  # c\nb:\n  - x: '#y'\n    z: [1, 2]\n  - w\nc: |\n  echo 1\n  echo 2\nd: e # f\n")
    assert doc == {"a": 1, "b": [{"x": "#y", "z": [1, 2]}, "w"], "c": "echo 1\necho 2\n", "d": "e"}
    with pytest.raises(AssertionError):
        parse_yaml("a: {b: 1}\n")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return parse_yaml(WORKFLOW.read_text())


def _steps(job: dict[str, Any], uses: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(uses)]


def _script(job: dict[str, Any]) -> str:
    return "\n".join(step["run"] for step in job["steps"] if "run" in step)


def test_a_shard_matrix_and_a_merge_job_with_replay_and_reports(workflow):
    assert set(workflow["on"]) and workflow["env"]["TORCHCTS_DEVICE"]
    shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3] and shard["strategy"]["fail-fast"] == "false"
    run = _script(shard)
    assert "--shard ${{ matrix.shard }}/3" in run and "--derandomize" in run
    assert "--results-dir results/shard-${{ matrix.shard }}" in run
    [upload] = _steps(shard, "actions/upload-artifact@")
    assert upload["if"] == "always()" and "results/shard-${{ matrix.shard }}" in upload["with"]["path"]
    assert merge["needs"] == "shard" and merge["if"].startswith("always()")
    [download] = _steps(merge, "actions/download-artifact@")
    assert download["with"]["pattern"] == "torchcts-shard-*"
    script = _script(merge)
    assert "torchcts report" in script and "--merge" in script and "torchcts replay" in script
    [reports] = _steps(merge, "actions/upload-artifact@")
    uploaded = set(reports["with"]["path"].split())
    assert {"results/merged/report/junit.xml", "results/merged/report/report.html"} <= uploaded


def _commands(script: str, env: dict[str, str]) -> list[list[str]]:
    """Each `torchcts ...` command of a run script, its shell variables replaced by example values."""
    values = {"${{ matrix.shard }}": "2", '"${args[@]}"': "--merge results/shard-1/r1 --merge results/shard-2/r2",
              '"${paths[@]}"': "corpus corpus-found", **{f'"${name}"': value for name, value in env.items()}}
    commands = []
    for line in script.splitlines():
        for found in re.findall(r"\btorchcts [^;]*", line):
            for name, value in values.items():
                found = found.replace(name, value)
            assert "$" not in found, f"a variable the test does not know: {found}"
            commands.append(shlex.split(found)[1:])
    return commands


def test_every_torchcts_command_in_it_parses_with_the_real_cli(workflow, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for folder in ("results/shard-1/r1", "results/shard-2/r2", "corpus", "corpus-found"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "manifest.py").write_text("manifest = {}\n")
    env = {name: str(value) for name, value in workflow["env"].items()}
    commands = [c for job in workflow["jobs"].values() for c in _commands(_script(job), env)]
    assert [c[0] for c in commands] == ["run", "report", "replay"]
    root = click.Context(cli, info_name="torchcts")
    for name, *args in commands:
        command = cli.get_command(root, name)
        with command.make_context(name, list(args), parent=root) as ctx:  # a bad option raises here
            if name == "run":
                assert ctx.params["shard"] == "2/3" and ctx.params["derandomize"]
            if name == "report":
                assert [str(p) for p in ctx.params["shards"]] == ["results/shard-1/r1", "results/shard-2/r2"]
