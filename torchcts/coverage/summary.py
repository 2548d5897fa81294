"""What an audit says, in numbers: summary.md (Markdown) and coverage.html (an HTML fragment).

Both render from audit.json's content alone (no torch, no op database), so `torchcts coverage
report` starts at once: counts per status, per semantic level (the lowest level of a property
covering the overload), per relevance rule, the share of unknowns, and, when the audit was given an
evidence store, the overloads mapped (by names and declarations) beside those a traced run reached.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable

from torchcts.coverage.audit import STATUSES

COVERED = ("opinfo", "suite", "generated", "backend-pack")  # statuses that claim a test reaches the overload
LISTED = 40  # overloads listed by name in a section before "... and N more"


def figures(audit: dict[str, Any]) -> dict[str, Any]:
    """The numbers both renderings show, computed once from audit.json's content."""
    entries = audit["entries"]
    total = len(entries)
    statuses = Counter(e["status"] for e in entries)
    evidence = audit["metadata"].get("evidence") is not None
    reached = Counter(e["status"] for e in entries if e.get("reached"))
    levels = Counter(e["level"] for e in entries if e["status"] in COVERED)
    rules: dict[str, dict[str, int]] = {}
    for e in entries:
        row = rules.setdefault(e["rule"].split(":", 1)[0], {"relevant": 0, "not_relevant": 0, "unknown": 0})
        row["relevant"] += 1
        row["unknown"] += e["status"] == "unknown"
    for rule, count in audit.get("not_relevant", {}).items():
        rules.setdefault(rule, {"relevant": 0, "not_relevant": 0, "unknown": 0})["not_relevant"] += count
    never = sorted(e["overload"] for e in entries if e["status"] in COVERED and evidence and not e.get("reached"))
    unknown = sorted(e["overload"] for e in entries if e["status"] == "unknown")
    return {
        "meta": audit["metadata"], "total": total, "evidence": evidence,
        "statuses": [(s, statuses.get(s, 0), _percent(statuses.get(s, 0), total), reached.get(s, 0))
                     for s in STATUSES],
        "levels": [(str(level) if level is not None else "none", levels[level])
                   for level in sorted(levels, key=lambda lv: (lv is None, lv or 0))],
        "rules": sorted(rules.items()),
        "unknown_percent": _percent(statuses.get("unknown", 0), total),
        "mapped": sum(statuses.get(s, 0) for s in COVERED), "reached": sum(reached.get(s, 0) for s in COVERED),
        "never_reached": never, "unknowns": unknown, "warnings": audit.get("warnings", []),
        "opinfo_by_trace": sum(e["status"] == "opinfo" and e.get("opinfo_basis") == "trace" for e in entries),
    }


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0.0%"


def _listed(names: list[str]) -> list[str]:
    shown = [f"- `{name}`" for name in names[:LISTED]]
    return shown + ([f"- ... and {len(names) - LISTED} more"] if len(names) > LISTED else [])


def render_markdown(audit: dict[str, Any]) -> str:
    """summary.md."""
    f = figures(audit)
    meta = f["meta"]
    lines = [f"# Coverage audit: torch {meta.get('torch')} ({meta.get('torch_git') or 'no git version'})", "",
             f"TorchCTS {meta.get('torchcts')}, Python {meta.get('python')}, {meta.get('date')}. "
             f"{f['total']} backend-relevant overloads; {f['unknown_percent']} unknown.", "",
             "## Per status", ""]
    if f["evidence"]:
        lines += ["| status | overloads | share | reached by a traced run |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {s} | {n} | {p} | {r} |" for s, n, p, r in f["statuses"]]
    else:
        lines += ["| status | overloads | share |", "| --- | ---: | ---: |"]
        lines += [f"| {s} | {n} | {p} |" for s, n, p, _ in f["statuses"]]
    lines += ["", f"Of the opinfo overloads, {f['opinfo_by_trace']} are reached only by the OpInfos' samples "
                  "(the packaged dispatch trace), not by their names."]
    lines += ["", "## Per semantic level (lowest level of a property covering it)", "",
              "| level | overloads |", "| --- | ---: |"] + [f"| {lv} | {n} |" for lv, n in f["levels"]]
    lines += ["", "## Per relevance rule", "", "| rule | relevant | not relevant | unknown |",
              "| --- | ---: | ---: | ---: |"]
    lines += [f"| {rule} | {r['relevant']} | {r['not_relevant']} | {r['unknown']} |" for rule, r in f["rules"]]
    if f["evidence"]:
        lines += ["", f"## Mapped but never reached ({len(f['never_reached'])})", "",
                  f"Mapped (names, declarations, generation): {f['mapped']}; reached by a traced run of "
                  f"`{meta.get('evidence')}`: {f['reached']}.", ""] + _listed(f["never_reached"])
    lines += ["", f"## Unknown ({len(f['unknowns'])})", ""] + _listed(f["unknowns"])
    if f["warnings"]:
        lines += ["", f"## Warnings ({len(f['warnings'])})", ""] + [f"- {w}" for w in f["warnings"][:LISTED]]
    return "\n".join(lines) + "\n"


_HTML = """\
<section class="coverage-audit">
<h2>Coverage audit: torch {{ meta.torch }}</h2>
<p>{{ total }} backend-relevant overloads; {{ unknown_percent }} unknown ({{ meta.date }}).</p>
<table><thead><tr><th>status</th><th>overloads</th><th>share</th>\
{% if evidence %}<th>reached</th>{% endif %}</tr></thead>
<tbody>{% for s, n, p, r in statuses %}<tr><td>{{ s }}</td><td>{{ n }}</td><td>{{ p }}</td>\
{% if evidence %}<td>{{ r }}</td>{% endif %}</tr>{% endfor %}</tbody></table>
<p>Of the opinfo overloads, {{ opinfo_by_trace }} are reached only by the OpInfos' samples (the packaged dispatch \
trace), not by their names.</p>
<table><thead><tr><th>level</th><th>overloads</th></tr></thead>
<tbody>{% for lv, n in levels %}<tr><td>{{ lv }}</td><td>{{ n }}</td></tr>{% endfor %}</tbody></table>
<table><thead><tr><th>rule</th><th>relevant</th><th>not relevant</th><th>unknown</th></tr></thead>
<tbody>{% for rule, r in rules %}<tr><td>{{ rule }}</td><td>{{ r.relevant }}</td><td>{{ r.not_relevant }}</td>\
<td>{{ r.unknown }}</td></tr>{% endfor %}</tbody></table>
{% if evidence %}<h3>Mapped but never reached ({{ never_reached|length }})</h3>
<ul>{% for name in never_reached[:listed] %}<li><code>{{ name }}</code></li>{% endfor %}</ul>{% endif %}
<h3>Unknown ({{ unknowns|length }})</h3>
<ul>{% for name in unknowns[:listed] %}<li><code>{{ name }}</code></li>{% endfor %}</ul>
</section>
"""


def render_html(audit: dict[str, Any]) -> str:
    """coverage.html: the same figures as an HTML fragment (autoescaped) for a report page."""
    import jinja2

    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.from_string(_HTML).render(**figures(audit), listed=LISTED)


def report_section(path: Path, warn: Callable[[str], None]) -> str:
    """The HTML section of a coverage audit (`torchcts coverage audit`'s audit.json) for a run's report.html, or ""
    when there is none at `path` or it cannot be read (a `warn` names the file and field); the report's front ends
    pass it to `report.render.write_report`."""
    from markupsafe import Markup  # jinja's own dependency, loaded only when a report is written

    from torchcts.coverage.audit_check import AuditFileError, read_audit  # the audit reader reads results files

    if not path.is_file():
        return ""
    try:
        audit = read_audit(path)
    except AuditFileError as exc:
        warn(f"coverage audit left out of the report: {exc}")
        return ""
    return Markup(render_html(audit))  # rendered with autoescape from the validated audit
