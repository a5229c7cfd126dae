"""`--jobs`: a file skimmed by several processes diagnoses exactly as by one."""

from __future__ import annotations

import gzip
from itertools import pairwise
from pathlib import Path

import pytest

from support import FIXTURES, corpus_logs, generated_log, needs_genlog, run_cli
from vlogscope import skim_parallel
from vlogscope.pipeline import analyze
from vlogscope.report import render_json
from vlogscope.skim import RoutineRun, skim
from vlogscope.skim_parallel import byte_ranges, skim_file
from vlogscope.source import PhysicalLine, Source

LOGS = sorted(FIXTURES.glob("*.log")) + corpus_logs()


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges of a few KiB, so that even fixtures are cut into many."""
    monkeypatch.setattr(skim_parallel, "MIN_RANGE_BYTES", 2048)


@pytest.mark.parametrize("tail", [b"", b"last line without a newline"])
def test_byte_ranges_cover_the_file_and_end_at_newlines(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "log"
    data = b"".join(b"line %d %s\n" % (i, b"x" * (i % 50)) for i in range(3000))
    data += b"y" * 20000 + b"\n" + tail  # one line longer than a range
    path.write_bytes(data)
    ranges = byte_ranges(path, 1000)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in pairwise(ranges))
    assert all(data[stop - 1 : stop] == b"\n" for _, stop in ranges[:-1])
    assert len(ranges) > 20
    assert any(stop - start > 20000 for start, stop in ranges)


def _shape(
    items: list[PhysicalLine | RoutineRun],
) -> tuple[list[tuple[int, str]], int, list[int]]:
    """The lines that matter, how many lines the items stand for, and where the
    skim saw serving start (the first serving line after each line that matters)."""
    lines = [(i.number, i.text) for i in items if isinstance(i, PhysicalLine)]
    total = sum(i.count if isinstance(i, RoutineRun) else 1 for i in items)
    serving = [i.first for i in items if isinstance(i, RoutineRun) and i.serving]
    return lines, total, serving


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_parallel_skim_hands_on_the_same_lines(path: Path) -> None:
    with path.open("rb") as stream:
        one = list(skim(stream))
    many = list(skim_file(path, jobs=2))
    assert _shape(many) == _shape(one)
    numbered = [
        (i.first, i.first + i.count) if isinstance(i, RoutineRun) else (i.number, i.number + 1)
        for i in many
    ]
    assert all(a[1] == b[0] for a, b in pairwise(numbered))


def _json(path: Path, jobs: int) -> str:
    return render_json([analyze(Source.from_path(path), skim_routine=True, jobs=jobs)])


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_parallel_diagnosis_is_the_same(path: Path) -> None:
    assert _json(path, jobs=2) == _json(path, jobs=1)


@needs_genlog
@pytest.mark.usefixtures("small_ranges")
def test_parallel_skim_of_a_generated_log_hands_on_the_same_lines(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    path.write_bytes(generated_log(20000, 12, "kv-fp8-mla"))
    with path.open("rb") as stream:
        one = _shape(list(skim(stream)))
    assert _shape(list(skim_file(path, jobs=2))) == one
    assert one[2]  # the log serves: the serving marks were compared


@needs_genlog
@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("failure", ["kv-fp8-mla", "oom"])
def test_parallel_diagnosis_of_generated_logs_is_the_same(tmp_path: Path, failure: str) -> None:
    path = tmp_path / "vllm.log"
    path.write_bytes(generated_log(20000, 11, failure))
    assert _json(path, jobs=3) == _json(path, jobs=1)


@needs_genlog
def test_jobs_on_the_command_line(tmp_path: Path) -> None:
    """Real processes on a multi-MiB file; gzip and stdin fall back to one process."""
    data = generated_log(30000, 4, "kv-fp8-mla")
    path = tmp_path / "vllm.log"
    path.write_bytes(data)
    assert len(byte_ranges(path, skim_parallel.range_bytes(len(data), 2))) > 2
    one = run_cli("diagnose", str(path), "--format", "json")
    many = run_cli("diagnose", str(path), "--format", "json", "--jobs", "2")
    assert one.returncode == many.returncode == 1
    assert many.stdout == one.stdout
    packed = tmp_path / "vllm.log.gz"
    packed.write_bytes(gzip.compress(data))
    zipped = run_cli("diagnose", str(packed), "--format", "json", "-j", "2")
    piped = run_cli("diagnose", "-", "--format", "json", "-j", "2", stdin=data)
    for result in (zipped, piped):
        assert result.returncode == 1
        assert result.stdout.split(b'"lines"')[1] == one.stdout.split(b'"lines"')[1]


def test_jobs_must_be_positive() -> None:
    result = run_cli("diagnose", "--sample", "healthy", "--jobs", "0")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr


@needs_genlog
@pytest.mark.usefixtures("small_ranges")
def test_read_with_jobs_gives_the_same_frames(tmp_path: Path) -> None:
    """vlogscope.read(jobs=N): routine columns come back from the workers, renumbered."""
    import pandas as pd

    import vlogscope

    path = tmp_path / "vllm.log"
    path.write_bytes(generated_log(20000, 13, "kv-fp8-mla"))
    one, many = vlogscope.read(path, year=2026), vlogscope.read(path, year=2026, jobs=2)
    for name in ("events", "metrics", "timeline", "facts", "findings", "runs"):
        pd.testing.assert_frame_equal(getattr(many, name), getattr(one, name), obj=name)
    assert many.events["lines"].sum() == 20000


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("data", [b"", b"\n", b"no newline at the end", b"\r\n\r\n"])
def test_odd_small_files_diagnose_the_same_with_jobs(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "odd.log"
    path.write_bytes(data)
    one = run_cli("diagnose", str(path), "--format", "json")
    many = run_cli("diagnose", str(path), "--format", "json", "--jobs", "3")
    assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)
    assert b"Traceback" not in many.stderr


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize(
    "data",
    [
        b"INFO 01-02 03:04:05 [logger.py:1] Received request r1\r\n" * 200,  # CRLF
        b"INFO 01-02 03:04:05 [logger.py:1] Received request r1\n" * 200 + b"ERROR tail",
        b"progress 10%\rprogress 20%\rprogress 100%\n" * 300,  # redraws
        b"x" * 9000 + b"\n" + b"INFO 01-02 03:04:05 [a.py:1] Received request r\n" * 100,
    ],
    ids=["crlf", "no-final-newline", "redraws", "long-line"],
)
def test_odd_files_cut_into_ranges_diagnose_the_same(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "odd.log"
    path.write_bytes(data)
    assert len(byte_ranges(path, 2048)) > 1
    assert _json(path, jobs=2) == _json(path, jobs=1)
    with path.open("rb") as stream:
        assert _shape(list(skim_file(path, jobs=2))) == _shape(list(skim(stream)))


def test_automatic_jobs_split_only_big_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """jobs=0 (the command line's default): one process below AUTO_MIN_BYTES, else CPUs."""
    import os

    from vlogscope import pipeline

    assert skim_parallel.auto_jobs(skim_parallel.AUTO_MIN_BYTES - 1) == 1
    cpus = min(os.cpu_count() or 1, skim_parallel.AUTO_MAX_JOBS)
    assert skim_parallel.auto_jobs(skim_parallel.AUTO_MIN_BYTES) == max(1, cpus)
    calls: list[int] = []

    def counting(path: Path, jobs: int, columns: bool = False, messages: bool = True):  # type: ignore[no-untyped-def]
        calls.append(jobs)
        return skim_file(path, jobs, columns, messages)

    monkeypatch.setattr(pipeline, "skim_file", counting)
    monkeypatch.setattr(skim_parallel, "MIN_RANGE_BYTES", 2048)
    monkeypatch.setattr(skim_parallel, "AUTO_MAX_JOBS", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    path = LOGS[0]
    monkeypatch.setattr(skim_parallel, "AUTO_MIN_BYTES", path.stat().st_size + 1)
    assert _json(path, jobs=0) == _json(path, jobs=1) and calls == []
    monkeypatch.setattr(skim_parallel, "AUTO_MIN_BYTES", 1)
    assert _json(path, jobs=0) == _json(path, jobs=1) and calls == [2]


@pytest.mark.usefixtures("small_ranges")
def test_without_worker_processes_one_process_does_the_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Some containers cannot create multiprocessing's locks: fall back, do not fail."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")

    path = max(LOGS, key=lambda p: p.stat().st_size)
    expected = _json(path, jobs=1)
    monkeypatch.setattr(skim_parallel, "ProcessPoolExecutor", refuse)
    assert _json(path, jobs=2) == expected
