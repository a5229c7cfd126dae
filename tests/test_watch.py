"""`vlogscope watch` follows a growing file or a pipe and reports before EOF."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

from support import fixture, vlogscope_command

OOM = (
    "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] EngineCore failed to start.\n"
    "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] Traceback (most recent call last):\n"
    '(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1]   File "/v/gpu_model_runner.py", line 9, in profile_run\n'
    "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)


def _read_until(proc: subprocess.Popen[bytes], needle: bytes, timeout: float = 30) -> bytes:
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"timed out waiting for {needle!r}; got {seen!r}"
        ready, _, _ = select.select([proc.stdout], [], [], remaining)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"process ended before {needle!r}; got {seen!r}"
            seen += chunk
    return seen


def test_pipe_findings_print_before_the_pipe_closes() -> None:
    proc = subprocess.Popen(
        [*vlogscope_command(), "watch", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(fixture("v0.16-llama31-8b-healthy-startup.log").read_bytes()[:2000])
        proc.stdin.write(OOM.encode())
        proc.stdin.flush()
        _read_until(proc, b"cuda-oom")  # the pipe is still open here
        proc.stdin.close()
        out = _read_until(proc, b"root cause: cuda-oom")
        assert b"Summary" in out
        assert proc.wait(timeout=30) == 1  # like diagnose: the latest launch failed
    finally:
        proc.kill()


def test_following_a_file_survives_rotation_and_ctrl_c_summarises(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("INFO 06-01 09:59:59 [api_server.py:1] vLLM API server version 0.8.5\n")
    proc = subprocess.Popen(
        [*vlogscope_command(), "watch", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        time.sleep(1.0)
        log.rename(tmp_path / "vllm.log.1")  # logrotate moves the file away...
        log.write_text(OOM)  # ...and the server writes a new one
        _read_until(proc, b"cuda-oom")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert b"Summary" in out
        assert b"Traceback" not in err
    finally:
        proc.kill()


def test_watch_of_a_missing_file_is_exit_2() -> None:
    result = subprocess.run(
        [*vlogscope_command(), "watch", "/no/such.log"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    import shutil

    log = fixture("v0.16-llama31-8b-healthy-startup.log")
    env = dict(os.environ, VLOGSCOPE_PROGRESS_MIN_BYTES="1000")
    piped = subprocess.run(
        [*vlogscope_command(), "diagnose", str(log), "--format", "json"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 0 and piped.stderr == b""
    if shutil.which("script") is None:
        return
    typescript = tmp_path / "typescript"
    command = (
        f"{' '.join(vlogscope_command())} diagnose {log} --format json > {tmp_path / 'out.json'}"
    )
    subprocess.run(
        ["script", "-qc", command, str(typescript)],
        env=env,
        timeout=60,
        check=False,
        capture_output=True,
    )
    assert b"100%" in typescript.read_bytes()
