"""A triage as files and as a console table: `triage.md`, `triage.json`, and the clusters in a few lines.

Every text in them comes from result files, so the Markdown escapes it (`cell`: one line, `|` and
backticks escaped, control characters as escapes, cut short) and the JSON is written ASCII-only.
Both are written beside and renamed over the old files, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from torchcts.disk import write_together
from torchcts.triage.classify import KIND_TITLES, KINDS
from torchcts.triage.clusters import Cluster

CELL_CHARS = 120


def cell(text: Any, limit: int = CELL_CHARS) -> str:
    """`text` as one Markdown table cell: printable, `|`, backticks and backslashes escaped, at most `limit`."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    out = []
    for ch in text:
        if ch in "|`\\*_<>[]":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def code(text: Any, limit: int = CELL_CHARS) -> str:
    """`text` as a Markdown code span outside tables (where backslashes would show): one printable line, its
    backticks turned into quotes."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
    return "`" + text.replace("`", "'") + "`"


def markdown(triage: Any, output: Path) -> str:
    """The triage as Markdown: counts per kind, the cluster table, then each cluster's items."""
    lines = [f"# Triage of run {cell(triage.run_id or triage.folder)}", "",
             f"Device {code(triage.device or '?')}; {len(triage.failures)} failing items in "
             f"{len(triage.clusters)} clusters (signature: op family, kind, condition of the shrunk case).", "",
             "| kind | items |", "| --- | --- |"]
    kinds = {}
    for failure in triage.failures:
        kinds[failure.kind] = kinds.get(failure.kind, 0) + 1
    for kind in sorted(kinds, key=lambda k: KINDS.index(k) if k in KINDS else len(KINDS)):
        lines.append(f"| {cell(KIND_TITLES.get(kind, kind))} | {kinds[kind]} |")
    lines += ["", "## Clusters", "", "| # | family | kind | condition | items | representative | differs inside |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for number, cluster in enumerate(triage.clusters, 1):
        rep = cluster.representative
        lines.append(f"| {number} | {cell(cluster.family)} | {cell(cluster.kind)} | {cell(cluster.condition)} | "
                     f"{cluster.count} | {cell(rep.item)} | {cell(_differs(cluster))} |")
    for number, cluster in enumerate(triage.clusters, 1):
        lines += ["", f"### {number}. {cell(cluster.family)} / {cell(cluster.kind)} / {cell(cluster.condition)}", ""]
        lines += _cluster_lines(cluster, output)
    if triage.problems:
        lines += ["", "## Problems", ""] + [f"- {cell(p, 400)}" for p in triage.problems]
    return "\n".join(lines) + "\n"


def _differs(cluster: Cluster) -> str:
    differs = cluster.differs()
    return "; ".join(f"{name}: {' / '.join(values[:6])}{' ...' if len(values) > 6 else ''}"
                     for name, values in differs.items()) or "-"


def _cluster_lines(cluster: Cluster, output: Path) -> list[str]:
    rep = cluster.representative
    lines = [f"- representative: {code(rep.item, 200)} ({cell(rep.outcome)}): {cell(rep.error_line, 300)}",
             f"- evidence: {cell(rep.evidence, 200)}; condition read from {cell(rep.condition.source, 200)}"]
    if cluster.legs:
        lines.append(f"- leg: {cell(' / '.join(cluster.legs))} (the compile layer that first shows it: "
                     "dynamo, aot, backend, backend-dynamic-only)")
    if rep.replay:
        lines.append(f"- replay: {code(rep.replay, 300)}")
    if rep.repro:
        lines.append(f"- repro script: [{cell(_relative(rep.repro, output))}]({_link(rep.repro, output)})")
    lines.append(f"- differs inside: {cell(_differs(cluster), 600)}")
    shown = cluster.failures[:50]
    lines.append(f"- items ({cluster.count}): " + ", ".join(code(f.item, 200) for f in shown)
                 + (" ..." if cluster.count > len(shown) else ""))
    return lines


def _relative(path: str, output: Path) -> str:
    try:
        return os.path.relpath(path, output)
    except ValueError:
        return path


def _link(path: str, output: Path) -> str:
    from urllib.parse import quote

    return quote(_relative(path, output).replace(os.sep, "/"))


def console_lines(triage: Any, limit: int = 30) -> list[str]:
    """The short table the command prints: one line per cluster, largest first."""
    lines = [f"{len(triage.failures)} failing items in {len(triage.clusters)} clusters"]
    if triage.clusters:
        lines.append(f"{'#':>3} {'items':>5}  {'kind':<14} {'family':<20} {'condition':<28} representative")
    for number, cluster in enumerate(triage.clusters[:limit], 1):
        lines.append(f"{number:>3} {cluster.count:>5}  {_plain(cluster.kind, 14):<14} {_plain(cluster.family, 20):<20} "
                     f"{_plain(cluster.condition, 28):<28} {_plain(cluster.representative.item, 70)}")
    if len(triage.clusters) > limit:
        lines.append(f"... {len(triage.clusters) - limit} more clusters in triage.md")
    return lines


def _plain(text: str, width: int) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return text if len(text) <= width else text[:width - 3] + "..."


def write(triage: Any, output: Path) -> dict[str, Path]:
    """Write triage.md and triage.json into `output`; their paths."""
    texts = {"md": markdown(triage, output),
             "json": json.dumps(triage.as_json(), indent=1, sort_keys=True, default=str) + "\n"}
    paths = {name: output / f"triage.{name}" for name in texts}
    write_together({paths[name]: text for name, text in texts.items()})  # both or neither (WriteError: a full disk)
    return paths
