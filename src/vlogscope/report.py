"""Stage 7 — report: a Diagnosis as JSON (the contract) or as rich text.

The JSON object is what scripts and other tools rely on (DESIGN §6): schema
1, `source`, `lines`, `facts`, and `findings` ordered root cause first, each
with `id`, `category`, `severity`, `root_cause`, `confidence`, `title`,
`explanation`, `fix`, `evidence` and `symptoms`.  Fields may be added, never
changed in meaning.

The text report puts the root cause first in a panel, then its symptoms,
then everything else.  Text taken from the log is appended as plain `Text`,
never parsed as rich markup, so a log line containing `[bold]` is shown
literally.

Examples:
    >>> to_jsonable(("a", 1, None))
    ['a', 1, None]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from vlogscope.findings import Finding
from vlogscope.metrics import read_stats
from vlogscope.pipeline import Diagnosis, RunDiagnosis, Verdict
from vlogscope.plot import sparkline
from vlogscope.reprs import Call, EnumRepr, PyValue
from vlogscope.signatures import Severity

SCHEMA_VERSION = 1
MAX_UNEXPLAINED_SHOWN = 10

# Facts shown in the text report, in this order, when present.
SHOWN_FACTS = (
    "vllm_version",
    "engine",
    "platform",
    "model",
    "architecture",
    "quantization",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "max_model_len",
    "requested_kv_cache_dtype",
    "kv_cache_dtype",
    "selector_kv_cache_dtype",
    "attention_backend",
    "uses_mla",
    "kv_cache_tokens",
    "last_phase",
)


# C0/C1 control characters other than tab and newline: a log must not drive the terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    """Log text with control characters shown as visible escapes (`\\x1b`, `\\x07`)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def to_jsonable(value: PyValue | Any) -> Any:
    """Python-repr values (Call, EnumRepr, tuples) as plain JSON types."""
    if isinstance(value, Call):
        return {"type": value.name, **{k: to_jsonable(v) for k, v in value.kwargs.items()}}
    if isinstance(value, EnumRepr):
        return value.name
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return value


def finding_to_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "category": f.category,
        "severity": str(f.severity),
        "root_cause": f.root_cause,
        "confidence": f.confidence,
        "title": f.title,
        "explanation": f.explanation,
        "fix": list(f.fix),
        "evidence": [
            {"line": e.line, "text": e.text, "process": e.process, "note": e.note}
            for e in f.evidence
        ],
        "symptoms": list(f.symptoms),
        "symptom_of": f.symptom_of,
        "ranks": f.ranks,
        "processes": list(f.processes),
        "references": list(f.references),
    }


def line_count(lines: int) -> str:
    """`1 line`, `12,345 lines`: how every format says the size of the input."""
    return f"{lines:,} line{'' if lines == 1 else 's'}"


def redaction_note(d: Diagnosis) -> str:
    """`3 ip, 1 hf-token` — distinct values replaced by placeholders, per kind."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(d.redactions.items())) or "nothing"


def run_summary(d: Diagnosis) -> str:
    """One sentence over all launches: "run 2 of 3 failed with X; the last run is healthy"."""
    total = len(d.runs)
    if total == 1:
        root = d.root_cause
        return f"the run {'failed: ' + root.title if root else 'is ' + str(d.verdict)}"
    failed = [r for r in d.runs if r.root_cause is not None]
    parts = [
        f"run {r.index} of {total} failed with {r.root_cause.category}"
        for r in failed
        if r.root_cause is not None and r is not d.latest
    ]
    latest = d.latest
    tail = (
        f"the last run failed with {latest.root_cause.category}"
        if latest.root_cause is not None
        else f"the last run is {latest.verdict}"
    )
    return "; ".join([*parts, tail])


def _run_dict(r: RunDiagnosis) -> dict[str, Any]:
    root = r.root_cause
    return {
        "index": r.index,
        "first_line": r.first_line,
        "last_line": r.last_line,
        "lines": r.lines,
        "verdict": str(r.verdict),
        "root_cause": None
        if root is None
        else {"id": root.id, "category": root.category, "title": root.title},
        "vllm_version": to_jsonable(r.facts.value("vllm_version")),
        "model": to_jsonable(r.facts.value("model")),
        "findings": [finding_to_dict(f) for f in r.findings],
    }


def to_dict(d: Diagnosis) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "source": d.source,
        "lines": d.lines,
        "verdict": str(d.verdict),
        "summary": run_summary(d),
        "redacted": dict(d.redactions),
        "warnings": list(d.warnings),
        "facts": {name: to_jsonable(f.value) for name, f in d.facts.by_name.items()},
        "fact_sources": {
            name: {"line": f.line, "source": f.source} for name, f in d.facts.by_name.items()
        },
        "findings": [finding_to_dict(f) for f in d.findings],
        "unexplained": [
            {"line": e.line, "lines": e.lines, "text": e.exception or e.message} for e in d.residue
        ],
        "runs": [_run_dict(r) for r in reversed(d.runs)],
    }


def render_json(diagnoses: Sequence[Diagnosis]) -> str:
    """One source: one JSON object.  Several: one object per line (JSON Lines)."""
    if len(diagnoses) == 1:
        return json.dumps(to_dict(diagnoses[0]), indent=2, ensure_ascii=False)
    return "\n".join(json.dumps(to_dict(d), ensure_ascii=False) for d in diagnoses)


def _plain(text: str, style: str = "") -> Text:
    """Log-derived text for rich: never parsed as markup, control characters made visible."""
    return Text(safe(text), style=style)


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters of log text, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hanging(rows: Sequence[tuple[Text, Text]]) -> Table:
    """Labelled lines whose wrapped continuation stays under the text, not under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text in rows:
        grid.add_row(label, text)
    return grid


def _line_label(line: int) -> Text:
    return Text(f"  line {line:>6} ", style="cyan")


def _finding_body(f: Finding) -> Group:
    parts: list[Text | Table] = [_plain(f.explanation)]
    if f.evidence:
        parts.append(_plain("\nEvidence", "bold"))
        rows = []
        for e in f.evidence:
            text = Text()
            if e.process:
                text.append(f"({e.process}) ", style="dim")
            text.append(safe(_clip(e.text, 400)))
            if e.note:
                text.append(f"  ← {e.note}", style="dim")
            rows.append((_line_label(e.line), text))
        parts.append(_hanging(rows))
    if f.fix:
        parts.append(_plain("\nFix", "bold"))
        parts.append(_hanging([(Text(f"  {i}."), _plain(fix)) for i, fix in enumerate(f.fix, 1)]))
    meta = f"\n{f.id} · confidence {f.confidence:.1f}"
    if f.ranks:
        meta += f" · {f.ranks}"
    parts.append(_plain(meta, "dim"))
    return Group(*parts)


def _facts_table(d: Diagnosis) -> Table | Text:
    shown = [(name, fact) for name in SHOWN_FACTS if (fact := d.facts.get(name)) is not None]
    if not shown:
        return _plain("Facts: none of the settings the report shows were found in the log.", "dim")
    table = Table(title="Facts", title_justify="left", show_header=True, box=None)
    table.add_column("fact", style="bold")
    table.add_column("value")
    table.add_column("line", justify="right", style="cyan")
    table.add_column("from", style="dim")
    for name, fact in shown:
        table.add_row(name, _plain(str(to_jsonable(fact.value))), str(fact.line), fact.source)
    return table


def render_text(d: Diagnosis, console: Console) -> None:
    """Print one diagnosis: verdict, root cause panel, symptoms, other findings, facts."""
    # Two columns: a long path wraps in its own, the line count stays whole.
    head = Table.grid(padding=(0, 2))
    head.add_column(overflow="fold")
    head.add_column(no_wrap=True)
    count = Text(f"({line_count(d.lines)})", style="dim")
    head.add_row(_plain(d.source, "bold"), count)
    console.print(head)
    if len(d.runs) > 1:
        console.print(_plain(f"{len(d.runs)} launches in this log: {run_summary(d)}.", "bold"))
        for r in reversed(d.runs):
            what = r.root_cause.title if r.root_cause else str(r.verdict)
            line = Text(f"  run {r.index}  lines {r.first_line}-{r.last_line}  ", style="cyan")
            line.append(safe(f"{r.verdict}: {what}"))
            console.print(line)
        console.print(_plain(f"Details of the latest run (run {d.latest.index}):", "bold"))
    if d.verdict is Verdict.NOT_VLLM:
        console.print(
            _plain("No vLLM log lines found: this does not look like a vLLM log.", "yellow")
        )
    root = d.root_cause
    if root is not None:
        title = Text(f"ROOT CAUSE · {root.category}", style="bold red")
        console.print(
            Panel(
                Group(_plain(root.title, "bold"), _plain(""), _finding_body(root)),
                title=title,
                title_align="left",
                border_style="red",
            )
        )
    symptoms = [f for f in d.findings if f.symptom_of]
    if symptoms:
        console.print(_plain("Symptoms of the root cause", "bold"))
        for s in symptoms:
            text = _plain(s.title)
            if s.ranks:
                text.append(f" ({s.ranks})", style="dim")
            console.print(_hanging([(_line_label(s.line), text)]))
    others = [f for f in d.findings if not f.root_cause and not f.symptom_of]
    for f in others:
        style = "yellow" if f.severity is Severity.WARNING else "blue"
        console.print(
            Panel(  # the title in the body: a panel's header line is cut, never wrapped
                Group(_plain(f.title, "bold"), _plain(""), _finding_body(f)),
                title=_plain(f"{f.severity.upper()} · {f.category}", style),
                title_align="left",
                border_style=style,
            )
        )
    if d.residue:
        console.print(_plain(f"Unexplained errors ({len(d.residue)})", "bold"))
        residue = d.residue[:MAX_UNEXPLAINED_SHOWN]
        console.print(
            _hanging(
                [
                    (_line_label(e.line), _plain(_clip(e.exception or e.message, 300)))
                    for e in residue
                ]
            )
        )
    _print_sparklines(d, console)
    console.print(_facts_table(d))
    if d.redactions:
        console.print(_plain(f"Redacted: {redaction_note(d)}", "dim"))
    verdict_style = {"failed": "bold red", "healthy": "bold green"}.get(str(d.verdict), "yellow")
    console.print(Text(f"Verdict: {d.verdict.upper()}", style=verdict_style))


_SPARK_SERIES = (
    ("generation_throughput", "generation tokens/s"),
    ("running", "running requests"),
    ("waiting", "waiting requests"),
    ("gpu_kv_cache_usage", "GPU KV cache %"),
)


def _print_sparklines(d: Diagnosis, console: Console) -> None:
    """The latest run's stats lines as one-line charts, when it served anything."""
    stats = [s for m in d.latest.stats if (s := read_stats(m)) is not None and "running" in s]
    if len(stats) < 2:
        return
    total = d.latest.stats_lines
    sampled = f", {len(stats):,} sampled" if total > len(d.latest.stats) else ""
    console.print(_plain(f"Serving ({total:,} stats lines{sampled})", "bold"))
    for column, label in _SPARK_SERIES:
        series = [s.get(column, float("nan")) for s in stats]
        line = sparkline(series)
        if line:
            peak = max(v for v in series if v == v)
            console.print(Text(f"  {label:<22} {line}  max {peak:g}"))
