"""End to end through the installed `vlogscope` command: files, pipes, exit codes."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import fixture, run_cli, vlogscope_command

LAUNCH1 = "v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log"
LAUNCH2 = "v0.16-kimi-k25-tp8-launch2-kv-auto-stops-mid-startup.log"
HEALTHY = "v0.16-llama31-8b-healthy-startup.log"


def _json(result: subprocess.CompletedProcess[bytes]) -> dict:
    return json.loads(result.stdout)


def test_file_and_pipe_give_the_same_findings() -> None:
    path = fixture(LAUNCH1)
    from_file = run_cli("diagnose", str(path), "--format", "json")
    from_pipe = run_cli("diagnose", "-", "--format", "json", stdin=path.read_bytes())
    assert from_file.returncode == from_pipe.returncode == 1
    a, b = _json(from_file), _json(from_pipe)
    assert a["findings"] == b["findings"]
    assert a["facts"] == b["facts"]
    assert (a["source"], b["source"]) == (str(path), "<stdin>")


def test_gzip_pipe_is_read_like_the_plain_file() -> None:
    path = fixture(LAUNCH1)
    plain = _json(run_cli("diagnose", str(path), "--format", "json"))
    zipped = _json(
        run_cli("diagnose", "-", "--format", "json", stdin=gzip.compress(path.read_bytes()))
    )
    assert plain["findings"] == zipped["findings"]


def test_healthy_log_exits_zero_without_error_findings() -> None:
    result = run_cli("diagnose", str(fixture(HEALTHY)), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = _json(result)
    assert report["verdict"] == "healthy"
    assert not [f for f in report["findings"] if f["severity"] == "error"]


def test_text_report_names_the_root_cause_first() -> None:
    result = run_cli("diagnose", str(fixture(LAUNCH1)))
    assert result.returncode == 1
    text = result.stdout.decode()
    assert text.index("ROOT CAUSE") < text.index("Facts")
    assert "kv-dtype-override-ignored" in text
    assert "Verdict: FAILED" in text


def test_missing_file_is_one_line_on_stderr_and_exit_2() -> None:
    result = run_cli("diagnose", "/no/such/vllm.log")
    assert result.returncode == 2
    assert result.stderr.decode().strip().splitlines() == [
        "vlogscope: error: /no/such/vllm.log: no such file or directory"
    ]
    assert b"Traceback" not in result.stderr


def test_directory_without_logs_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "weights.safetensors").write_bytes(b"\0")
    result = run_cli("diagnose", str(tmp_path))
    assert result.returncode == 2
    assert len(result.stderr.decode().strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to drop root")
def test_unreadable_file_is_exit_2() -> None:
    # A folder anyone may enter (pytest's own tmp folder is private to root).
    folder = Path(tempfile.mkdtemp(prefix="vlogscope-"))
    folder.chmod(0o755)
    path = folder / "vllm.log"
    path.write_bytes(fixture(HEALTHY).read_bytes())
    path.chmod(0)
    command = vlogscope_command()
    if os.geteuid() == 0:  # root reads anything: run as nobody, as a real user would be
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    try:
        result = subprocess.run([*command, "diagnose", str(path)], capture_output=True, check=False)
    finally:
        shutil.rmtree(folder)
    if os.geteuid() == 0 and b"ModuleNotFoundError" in result.stderr:
        pytest.skip("the venv is not readable by the unprivileged user")
    assert result.returncode == 2
    assert result.stderr.decode().strip().startswith(f"vlogscope: error: {path}: permission denied")


def test_input_without_vllm_lines_says_so_and_is_never_healthy() -> None:
    result = run_cli("diagnose", str(fixture("not-a-vllm-log.txt")))
    assert result.returncode == 2
    assert "no vLLM log lines" in result.stderr.decode()
    report = _json(run_cli("diagnose", str(fixture("not-a-vllm-log.txt")), "--format", "json"))
    assert report["verdict"] == "no-vllm-lines"


def test_sample_log_ships_with_the_package() -> None:
    result = run_cli("diagnose", "--sample", "kimi-k25-launch1", "--format", "json")
    assert result.returncode == 1
    assert _json(result)["findings"][0]["root_cause"] is True


def test_python_dash_m_runs_the_same_command() -> None:
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "vlogscope", "diagnose", str(fixture(HEALTHY)), "--format", "json"],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0
    assert _json(result)["verdict"] == "healthy"


def test_no_path_on_a_terminal_is_a_usage_error_not_a_hang(tmp_path: Path) -> None:
    if shutil.which("script") is None:
        pytest.skip("needs script(1) for a pseudo-terminal")
    out = tmp_path / "typescript"
    command = f"{' '.join(vlogscope_command())} diagnose; echo exit=$?"
    subprocess.run(
        ["script", "-qc", command, str(out)], timeout=60, check=False, capture_output=True
    )
    text = out.read_bytes().decode(errors="replace")
    assert "give a PATH" in text and "exit=2" in text


def test_text_report_counts_every_stats_line_and_says_when_it_sampled(tmp_path: Path) -> None:
    """A week of serving has more stats lines than a sparkline needs: the count stays true."""
    healthy = fixture("v0.16-llama31-8b-healthy-startup.log").read_bytes()
    before = healthy.count(b"Avg prompt throughput")
    stats = b"".join(
        b"(APIServer pid=1) INFO 03-04 10:%02d:%02d [loggers.py:259] Engine 000: Avg prompt "
        b"throughput: 1.0 tokens/s, Avg generation throughput: %d.0 tokens/s, Running: 1 reqs, "
        b"Waiting: 0 reqs, GPU KV cache usage: 5.0%%, Prefix cache hit rate: 0.0%%\n"
        % (i // 60 % 60, i % 60, i)
        for i in range(1500)
    )
    path = tmp_path / "vllm.log"
    path.write_bytes(healthy + stats)
    result = run_cli("diagnose", str(path), "--format", "text")
    out = result.stdout.decode()
    assert result.returncode == 0, out
    assert f"Serving ({before + 1500:,} stats lines, " in out
    sampled = int(out.split(f"{before + 1500:,} stats lines, ")[1].split(" sampled")[0])
    assert 60 <= sampled <= 512
    assert "max 149" in out  # the peak of the sample: the last lines are kept


def test_a_long_warning_title_is_shown_whole_in_the_text_report() -> None:
    line = (
        "(EngineCore pid=84) INFO 06-07 18:13:55 [ray_utils.py:464] Waiting for creating a "
        "placement group of specs for 150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check "
        "`ray status` and `ray list nodes` to see if you have enough resources.\n"
    )
    result = run_cli("diagnose", "-", stdin=line.encode())
    words = " ".join(part.strip(" │╭╮╰╯─") for part in result.stdout.decode().splitlines()).split()
    title = (
        "Ray has not placed the workers after 150 seconds: the cluster lacks the resources "
        "asked for"
    )
    assert title in " ".join(words)


def test_wrapped_evidence_stays_under_its_text_and_cut_text_is_marked() -> None:
    """A long evidence line wraps under its own text (not under `line N`) and ends in `…`."""
    names = ", ".join(f"'Arch{i}ForCausalLM'" for i in range(60))
    line = (
        "ValueError: Model architectures ['FooModel'] are not supported for now. "
        f"Supported architectures: [{names}]\n"
    )
    result = run_cli("diagnose", "-", stdin=line.encode())
    rows = result.stdout.decode().splitlines()
    assert rows[0].rstrip().endswith("(1 line)")
    first = next(i for i, r in enumerate(rows) if "line      1 " in r)
    column = rows[first].index("ValueError")
    wrapped = []
    for row in rows[first + 1 :]:
        if row[2:column].strip() or not row[column:].strip(" │"):
            break  # the next label, or the blank line before "Fix"
        wrapped.append(row[column:].rstrip(" │"))
    assert len(wrapped) >= 3, rows[first : first + 6]
    evidence = " ".join([rows[first][column:].rstrip(" │"), *wrapped])
    assert evidence.endswith("…")
    assert "Arch59ForCausalLM" not in evidence


def test_a_log_without_the_reported_settings_says_so_instead_of_an_empty_table() -> None:
    result = run_cli(
        "diagnose", "-", stdin=b"ValueError: No available memory for the cache blocks.\n"
    )
    out = result.stdout.decode()
    assert "Facts: none of the settings the report shows were found in the log." in out
    assert "fact  value" not in out


def test_a_long_path_wraps_but_the_line_count_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / ("a-very-long-directory-name-" * 4) / "vllm.log"
    path.parent.mkdir()
    path.write_text("ValueError: No available memory for the cache blocks.\n")
    rows = run_cli("diagnose", str(path)).stdout.decode().splitlines()
    assert any(row.rstrip().endswith("(1 line)") for row in rows[:4]), rows[:4]
