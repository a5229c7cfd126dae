"""The notebook API: DataFrames of events, metrics, timeline, facts, findings, runs."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pandas as pd

import vlogscope
from support import FIXTURES, fixture, run_cli
from vlogscope.clock import Clock, rollovers, year_of

HEALTHY = "v0.16-llama31-8b-healthy-startup.log"
LAUNCH1 = "v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log"


def test_event_lines_sum_to_the_physical_line_count() -> None:
    path = fixture(LAUNCH1)
    log = vlogscope.read(path)
    assert log.events["lines"].sum() == path.read_bytes().count(b"\n")
    assert list(log.events["line"]) == sorted(log.events["line"])


def test_events_carry_process_role_and_rank() -> None:
    events = vlogscope.read(fixture(LAUNCH1)).events
    workers = events[events["role"] == "worker"]
    assert set(workers["rank"].dropna()) == set(range(8))
    assert set(events["role"].dropna()) >= {"api_server", "engine_core", "worker"}
    assert events["time"].notna().any()


def test_metrics_are_indexed_by_time_with_stable_columns() -> None:
    metrics = vlogscope.read(fixture(HEALTHY), year=2026).metrics
    assert isinstance(metrics.index, pd.DatetimeIndex)
    assert len(metrics) > 0
    assert metrics.index[0].year == 2026
    assert {"prompt_throughput", "generation_throughput", "running", "gpu_kv_cache_usage"} <= set(
        metrics.columns
    )
    assert metrics["generation_throughput"].max() > 0


def test_v0_metrics_map_pending_to_waiting() -> None:
    log = vlogscope.read(
        [
            "INFO 10-28 11:16:34 metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 7220.5 tokens/s, Running: 2 reqs, Swapped: 1 reqs, Pending: 98 reqs, GPU KV cache usage: 73.8%, CPU KV cache usage: 0.0%.",
        ],
        year=2024,
    )
    row = log.metrics.iloc[0]
    assert (row["waiting"], row["swapped"], row["gpu_kv_cache_usage"]) == (98, 1, 73.8)


def test_timeline_lists_startup_phases_in_order_with_durations() -> None:
    timeline = vlogscope.read(fixture(HEALTHY)).timeline
    phases = list(timeline["phase"])
    assert (
        phases.index("weight loading")
        < phases.index("engine ready")
        < phases.index("API server ready")
    )
    loading = timeline[timeline["phase"] == "weight loading"].iloc[0]
    assert loading["duration"] > pd.Timedelta(0)
    ready = timeline[timeline["phase"] == "engine ready"].iloc[0]
    assert ready["stated_seconds"] > 0


def test_facts_findings_and_runs_frames() -> None:
    log = vlogscope.read(fixture(LAUNCH1))
    facts = log.facts.set_index("name")
    assert facts.loc["kv_cache_dtype", "value"] == "fp8"
    findings = log.findings
    assert findings["root_cause"].sum() == 1
    assert findings.loc[findings["root_cause"], "category"].item() == "kv-dtype-override-ignored"
    assert list(log.runs["verdict"]) == ["failed"]


def test_year_rolls_over_at_new_year_and_keeps_input_order() -> None:
    assert rollovers(["12-31 23:59:59", "01-01 00:00:01", "01-01 00:00:01"]) == 1
    clock = Clock(2024)
    times = [clock.read(t) for t in ["12-31 23:59:59", "01-01 00:00:01"]]
    assert times == [dt.datetime(2024, 12, 31, 23, 59, 59), dt.datetime(2025, 1, 1, 0, 0, 1)]


def test_year_defaults_to_the_file_mtime(tmp_path: Path) -> None:
    path = tmp_path / "old.log"
    path.write_text("x\n")
    stamp = dt.datetime(2023, 6, 1).timestamp()
    import os

    os.utime(path, (stamp, stamp))
    assert year_of(path) == 2023
    assert year_of(path, explicit=2021) == 2021


def test_events_command_writes_csv_and_jsonl_from_a_pipe() -> None:
    data = gzip.compress(fixture(HEALTHY).read_bytes())
    csv = run_cli("events", "-", "--format", "csv", stdin=data)
    assert csv.returncode == 0
    assert csv.stdout.decode().splitlines()[0].startswith("line,lines,time,run,process")
    jsonl = run_cli("metrics", str(fixture(HEALTHY)), "--format", "jsonl")
    rows = [json.loads(line) for line in jsonl.stdout.decode().splitlines()]
    assert rows and "gpu_kv_cache_usage" in rows[0] and "time" in rows[0]  # the index is data
    events = run_cli("events", str(fixture(HEALTHY)), "--format", "jsonl")
    rows = [json.loads(line) for line in events.stdout.decode().splitlines()]
    assert rows and "index" not in rows[0] and rows[0]["line"] == 1  # a row counter is not


def test_events_command_without_messages_leaves_routine_text_out(tmp_path: Path) -> None:
    out = tmp_path / "events.csv"
    result = run_cli(
        "events", str(fixture(HEALTHY)), "--no-messages", "--format", "csv", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    lean = pd.read_csv(out)
    full = vlogscope.read(fixture(HEALTHY)).events
    assert len(lean) == len(full)
    assert 0 < lean["message"].notna().sum() < full["message"].astype(bool).sum()
    piped = run_cli("events", "-", "--no-messages", stdin=fixture(HEALTHY).read_bytes())
    assert piped.returncode == 2 and len(piped.stderr.decode().strip().splitlines()) == 1


def test_config_command_shows_requested_beside_effective() -> None:
    result = run_cli(
        "config", str(fixture("v0.17-compressed-tensors-kv-scheme-overrides-bfloat16.log"))
    )
    text = result.stdout.decode()
    assert result.returncode == 0
    assert "kv_cache_dtype (attention layer)" in text and "fp8" in text


def test_parquet_without_pyarrow_or_output_is_a_clear_error() -> None:
    result = run_cli("events", str(fixture(HEALTHY)), "--format", "parquet")
    assert result.returncode == 2
    assert "--output" in result.stderr.decode()


def test_metrics_plot_writes_a_png_with_findings_marked(tmp_path: Path) -> None:
    log = vlogscope.read(fixture(HEALTHY))
    figure = log.plot()
    assert len(figure.axes) == 3
    out = tmp_path / "metrics.png"
    result = run_cli("metrics", str(fixture(HEALTHY)), "--plot", str(out), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_a_log_without_stats_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli("metrics", str(fixture(LAUNCH1)), "--plot", str(tmp_path / "x.png"))
    assert result.returncode == 2
    assert "no stats lines" in result.stderr.decode()


def test_jupyter_html_escapes_log_text() -> None:
    log = vlogscope.read(
        [
            "ERROR 05-14 09:10:07 [x.py:1] <script>alert(1)</script> CUDA out of memory. Tried to allocate 2.00 GiB",
        ]
    )
    html = log._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "cuda-oom" in html


def test_text_report_draws_sparklines_for_a_serving_run() -> None:
    result = run_cli("diagnose", str(fixture(HEALTHY)))
    text = result.stdout.decode()
    assert "generation tokens/s" in text
    assert any(ch in text for ch in "▁▂▃▄▅▆▇█")


def test_column_times_agree_with_the_clock_line_by_line() -> None:
    """`stamp_times` (whole columns, for read()) says what `Clock` says, rollovers included."""
    from vlogscope.clock import stamp_times
    from vlogscope.records import classify

    stamps: list[str | None] = ["12-31 23:59:58", None, "01-01 00:00:03", "02-30 10:00:00",
                                "01-02 00:00:00.5", "garbage", "12-30 10:00:00", "01-01 00:00:00",
                                "01-01 24:00:00", "02-29 01:02:03", "1-01 00:00:00", "13-01 00:00:00",
                                "03-01 00:00:60", "03-01 x"]  # fmt: skip
    for path in sorted(FIXTURES.glob("*.log")):
        stamps += [classify(t).time for t in path.read_text(errors="replace").splitlines()]
    clock = Clock(2026 - rollovers(stamps))
    expected = [clock.read(s) for s in stamps]
    got = stamp_times(pd.Series(stamps, dtype="str"), 2026)
    assert [None if pd.isna(t) else t.to_pydatetime() for t in got] == expected
    assert sum(t is not None for t in expected) > 900
