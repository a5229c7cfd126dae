"""The report as Markdown, to paste into a vLLM GitHub issue.

A maintainer triaging an issue wants the root cause up front, the evidence
as the log's own lines with their numbers, the fix, the run's facts, and the
noise folded away: symptoms and unexplained errors go in `<details>`.  Log
text goes inside fenced blocks whose fence is longer than any backtick run
in the text, so a log line cannot end the block or inject Markdown.

Examples:
    >>> fence("a ``` b")
    '````'
    >>> cell("a|b")
    'a\\\\|b'
"""

from __future__ import annotations

import re

from vlogscope.findings import Finding
from vlogscope.pipeline import Diagnosis
from vlogscope.report import SHOWN_FACTS, line_count, redaction_note, run_summary, safe, to_jsonable


def fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return safe(text).replace("|", "\\|").replace("\n", " ")


def _evidence_block(f: Finding) -> list[str]:
    body = "\n".join(f"{e.line:>6} | {safe(e.text)[:400]}" for e in f.evidence)
    mark = fence(body)
    return [f"{mark}text", body, mark]


def render_markdown(d: Diagnosis) -> str:
    out = [f"## vlogscope: {d.verdict} — `{cell(d.source)}` ({line_count(d.lines)})", ""]
    if len(d.runs) > 1:
        out += [f"*{cell(run_summary(d))}*", ""]
    root = d.root_cause
    if root is not None:
        out += [
            f"### Root cause: `{root.category}`",
            "",
            f"**{cell(root.title)}**",
            "",
            safe(root.explanation),
            "",
            "**Evidence**",
            "",
            *_evidence_block(root),
            "",
            "**Fix**",
            "",
            *(f"{i}. {safe(fix)}" for i, fix in enumerate(root.fix, 1)),
            "",
            f"<sub>{root.id} · confidence {root.confidence:.1f}"
            + (f" · {root.ranks}" if root.ranks else "")
            + "</sub>",
            "",
        ]
    others = [f for f in d.findings if not f.root_cause and not f.symptom_of]
    for f in others:
        out += [f"### {f.severity.capitalize()}: `{f.category}` — {cell(f.title)}", "",
                safe(f.explanation), "", *_evidence_block(f), ""]  # fmt: skip
    out += ["### Facts", "", "| fact | value | line |", "|---|---|---|"]
    out += [
        f"| {name} | {cell(str(to_jsonable(fact.value)))[:200]} | {fact.line} |"
        for name in SHOWN_FACTS
        if (fact := d.facts.get(name)) is not None
    ]
    symptoms = [f for f in d.findings if f.symptom_of]
    if symptoms:
        out += ["", f"<details><summary>Symptoms of the root cause ({len(symptoms)})</summary>", ""]
        out += [f"- line {s.line}: {cell(s.title)}" + (f" ({s.ranks})" if s.ranks else "")
                for s in symptoms]  # fmt: skip
        out += ["", "</details>"]
    if d.residue:
        body = "\n".join(f"{e.line:>6} | {safe(e.exception or e.message)[:300]}" for e in d.residue)
        mark = fence(body)
        out += ["", f"<details><summary>Unexplained errors ({len(d.residue)})</summary>", "",
                f"{mark}text", body, mark, "", "</details>"]  # fmt: skip
    if d.redactions:
        out += ["", f"<sub>Redacted before sharing: {redaction_note(d)}.</sub>"]
    out += ["", "<sub>Diagnosed by vlogscope.</sub>"]
    return "\n".join(out)
