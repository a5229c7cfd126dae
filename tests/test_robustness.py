"""Any input is valid input: nothing crashes, nothing is lost, nothing hangs."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import fixture, run_cli, vlogscope_command
from vlogscope.pipeline import Diagnosis, analyze
from vlogscope.report import to_dict
from vlogscope.source import InputError, Source, split_line

LAUNCH1 = "v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log"


def _analyze(data: bytes, name: str = "<t>") -> Diagnosis:
    return analyze(Source.from_stream(name, io.BytesIO(data)))


def _physical_lines(data: bytes) -> int:
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    return sum(len(split_line(c)) for c in chunks)


_LOGGY = st.sampled_from(
    [
        b"(EngineCore_DP0 pid=1) ",
        b"(Worker_TP3 pid=9) ",
        b"ERROR 05-14 09:10:07 [core.py:1] ",
        b"INFO:     ",
        b"Traceback (most recent call last):",
        b'  File "/x.py", line 1, in f',
        b"ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(",
        b"non-default args: {'kv_cache_dtype': [",
        b"Reasons: {A: [x, y]}",
        b"\n",
        b"\r\n",
        b"\r",
        b"\x00",
        b"\xff\xfe",
        b"\x1b[31m",
        b"[bold]",
        b"((((",
        b"}}}}",
        b"'",
        b'"',
        b" ",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.binary(max_size=2000), st.lists(_LOGGY, max_size=60).map(b"".join)))
def test_any_bytes_terminate_without_error_and_every_line_lands_in_one_event(data: bytes) -> None:
    if data.startswith((b"\x1f\x8b\x08", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")):
        with contextlib.suppress(InputError):  # a broken compressed stream is an input error
            _analyze(data)
        return
    d = _analyze(data)
    numbers = sorted(n for e in d.events for n in e.line_numbers)
    assert numbers == list(range(1, _physical_lines(data) + 1))
    assert d.lines == len(numbers)
    json.dumps(to_dict(d))  # every report serialises


def _comparable(d: Diagnosis) -> dict:  # type: ignore[type-arg]
    report = to_dict(d)
    report.pop("source")
    return report


def test_file_stdin_and_gzip_give_identical_reports(tmp_path: Path) -> None:
    data = fixture(LAUNCH1).read_bytes()
    plain = analyze(Source.from_path(fixture(LAUNCH1)))
    piped = _analyze(data)
    zipped = _analyze(gzip.compress(data))
    assert _comparable(plain) == _comparable(piped) == _comparable(zipped)


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"], ids=["crlf", "cr-only"])
def test_line_endings_do_not_change_the_findings(ending: bytes) -> None:
    data = fixture(LAUNCH1).read_bytes().replace(b"\r\n", b"\n")
    converted = data.replace(b"\n", ending)
    key = lambda d: [(f.id, f.category, f.line, f.root_cause) for f in d.findings]  # noqa: E731
    assert key(_analyze(converted)) == key(_analyze(data))


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    start = time.monotonic()
    result = run_cli("diagnose", str(path), "--format", "json", *args)
    assert time.monotonic() - start < 60
    assert b"Traceback" not in result.stderr
    if result.returncode in (0, 1):
        json.loads(result.stdout)
    else:
        assert result.returncode == 2 and len(result.stderr.decode().strip().splitlines()) == 1
    return result


HOSTILE = {
    "random-binary": os.urandom(1 << 20),
    "nul-bytes": b"INFO 05-14 09:10:07 [a.py:1] a\x00b\n\x00\x00\x00\n" * 100,
    "bad-utf8-in-traceback": (
        b"(EngineCore_DP0 pid=1) ERROR 05-14 09:10:07 [core.py:1] Traceback (most recent call last):\n"
        b'(EngineCore_DP0 pid=1) ERROR 05-14 09:10:07 [core.py:1]   File "/x\xff\xfe.py", line 1, in f\n'
        b"(EngineCore_DP0 pid=1) ERROR 05-14 09:10:07 [core.py:1] ValueError: bad \xc3\x28 bytes\n"
    ),
    "deep-config-dump": (
        b"INFO 05-14 09:10:07 [core.py:1] Initializing a V1 LLM engine (v0.16.0) with config: model='m', "
        b"compilation_config="
        + b"{'a': [" * 20000
        + b"1"
        + b"]}" * 20000
        + b", kv_cache_dtype=fp8\n"
    ),
    "unbalanced-args": b"INFO 05-14 09:10:07 [utils.py:1] non-default args: {'model': 'm', 'x': [[[(, 'kv_cache_dtype': 'fp8\n",
    "truncated-multibyte-at-eof": b"INFO 05-14 09:10:07 [a.py:1] caf\xc3",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_gives_a_clear_result_or_a_one_line_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.log"
    path.write_bytes(HOSTILE[name])
    _cli(path)


def test_a_50_mb_line_is_cut_not_loaded_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as handle:
        handle.write(b"ERROR 05-14 09:10:07 [a.py:1] " + b"x" * (50 << 20) + b"\n")
        handle.write(b"ERROR 05-14 09:10:08 [a.py:1] torch.OutOfMemoryError: CUDA out of memory.\n")
    result = _cli(path)
    report = json.loads(result.stdout)
    assert report["lines"] == 2 and report["findings"][0]["category"] == "cuda-oom"


def test_a_file_removed_while_being_read_still_gives_a_result(tmp_path: Path) -> None:
    path = tmp_path / "vanishing.log"
    path.write_bytes(fixture(LAUNCH1).read_bytes() * 20)
    proc = subprocess.Popen(
        [*vlogscope_command(), "diagnose", str(path), "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    threading.Timer(0.3, lambda: path.unlink(missing_ok=True)).start()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (1, 2) and b"Traceback" not in err
    if proc.returncode == 1:
        json.loads(out)


def test_debug_shows_the_traceback_that_a_user_error_hides() -> None:
    plain = run_cli("diagnose", "/no/such/file.log")
    debug = run_cli("diagnose", "/no/such/file.log", "--debug")
    assert b"Traceback" not in plain.stderr
    assert b"Traceback" in debug.stderr and b"InputError" in debug.stderr


def test_random_binary_is_not_a_vllm_log_and_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "noise.bin"
    # Seeded: 3 MiB of os.urandom spell "vllm" somewhere about once in a hundred runs.
    path.write_bytes(random.Random(20261203).randbytes(3 << 20))
    result = _cli(path)
    assert result.returncode == 2
    assert "no vLLM log lines" in result.stderr.decode()
