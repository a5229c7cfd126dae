"""The report as one self-contained HTML file, and the Jupyter card.

No external assets (no CDN fonts, scripts or style sheets): the file must
open the same on an air-gapped cluster and in a mail attachment.  Every
piece of log text is escaped; a log line is data, never markup.

Examples:
    >>> "<script>" in page_of("<h1>x</h1>", title="<script>")
    False
"""

from __future__ import annotations

from html import escape

from vlogscope.findings import Finding
from vlogscope.pipeline import Diagnosis
from vlogscope.report import SHOWN_FACTS, line_count, redaction_note, run_summary, safe, to_jsonable

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
.root{border:2px solid #c0392b;border-radius:6px;padding:0 1rem 1rem}
.warn{border:1px solid #d68910;border-radius:6px;padding:0 1rem;margin-top:1rem}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.85rem}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
.dim{color:#777;font-size:.85rem}
"""


def _e(text: object) -> str:
    return escape(safe(str(text)))


def _finding(f: Finding, css: str) -> str:
    evidence = "\n".join(_e(f"{e.line:>6} | {e.text[:400]}") for e in f.evidence)
    fixes = "".join(f"<li>{_e(fix)}</li>" for fix in f.fix)
    meta = f"{_e(f.id)} · confidence {f.confidence:.1f}" + (f" · {_e(f.ranks)}" if f.ranks else "")
    return (
        f'<section class="{css}"><h2>{_e(f.category)}</h2><p><b>{_e(f.title)}</b></p>'
        f"<p>{_e(f.explanation)}</p><pre>{evidence}</pre><ol>{fixes}</ol>"
        f'<p class="dim">{meta}</p></section>'
    )


def _facts(d: Diagnosis) -> str:
    rows = "".join(
        f"<tr><td>{_e(name)}</td><td>{_e(str(to_jsonable(f.value))[:200])}</td><td>{f.line}</td>"
        f"<td>{_e(f.source)}</td></tr>"
        for name in SHOWN_FACTS
        if (f := d.facts.get(name)) is not None
    )
    return f"<table><tr><th>fact</th><th>value</th><th>line</th><th>from</th></tr>{rows}</table>"


def html_body(d: Diagnosis) -> str:
    parts = [
        f"<p><b>{_e(d.source)}</b> ({line_count(d.lines)}) — verdict <b>{_e(d.verdict)}</b></p>"
    ]
    if len(d.runs) > 1:
        parts.append(f"<p><i>{_e(run_summary(d))}</i></p>")
    if d.root_cause is not None:
        parts.append(_finding(d.root_cause, "root"))
    parts += [_finding(f, "warn") for f in d.findings if not f.root_cause and not f.symptom_of]
    symptoms = [f for f in d.findings if f.symptom_of]
    if symptoms:
        items = "".join(f"<li>line {s.line}: {_e(s.title)}</li>" for s in symptoms)
        parts.append(
            f"<details><summary>Symptoms ({len(symptoms)})</summary><ul>{items}</ul></details>"
        )
    if d.residue:
        body = "\n".join(_e(f"{e.line:>6} | {(e.exception or e.message)[:300]}") for e in d.residue)
        summary = f"<summary>Unexplained errors ({len(d.residue)})</summary>"
        parts.append(f"<details>{summary}<pre>{body}</pre></details>")
    parts.append("<h3>Facts</h3>" + _facts(d))
    if d.redactions:
        parts.append(f'<p class="dim">Redacted before sharing: {_e(redaction_note(d))}.</p>')
    return "".join(parts)


def page_of(body: str, title: str) -> str:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def render_html(d: Diagnosis) -> str:
    """A complete HTML document for one diagnosis."""
    return page_of(f"<h1>vlogscope report</h1>{html_body(d)}", title=f"vlogscope: {d.source}")
