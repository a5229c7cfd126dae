"""`vlogscope scan`: many logs into one table, locally or on a Dask cluster."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from pathlib import Path

import pytest

from support import fixture, run_cli

LAUNCH1 = "v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log"
HEALTHY = "v0.16-llama31-8b-healthy-startup.log"


def _pod_logs(tmp_path: Path) -> Path:
    pods = tmp_path / "pods"
    (pods / "a").mkdir(parents=True)
    (pods / "b").mkdir()
    shutil.copy(fixture(HEALTHY), pods / "a" / "vllm.log")
    (pods / "b" / "vllm.log.1.gz").write_bytes(gzip.compress(fixture(LAUNCH1).read_bytes()))
    (pods / "b" / "appended.log").write_bytes(
        fixture(LAUNCH1).read_bytes() + fixture(HEALTHY).read_bytes()
    )
    (pods / "b" / "weights.safetensors").write_bytes(b"\0")
    return pods


def _rows(out: bytes) -> list[str]:
    return sorted(json.dumps(json.loads(x), sort_keys=True) for x in out.decode().splitlines())


def test_scan_tree_with_local_processes_gives_one_row_per_launch(tmp_path: Path) -> None:
    result = run_cli("scan", str(_pod_logs(tmp_path)), "--jobs", "2", "--format", "jsonl")
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    by_file = {(Path(r["file"]).name, r["run"]): r for r in rows}
    assert by_file[("vllm.log", 1)]["verdict"] == "healthy"
    assert by_file[("vllm.log.1.gz", 1)]["root_cause"] == "kv-dtype-override-ignored"
    assert by_file[("appended.log", 1)]["verdict"] == "failed"
    assert by_file[("appended.log", 2)]["verdict"] == "healthy"
    assert by_file[("vllm.log", 1)]["vllm_version"] == "0.16.0"
    assert result.returncode == 1  # the gzipped pod's latest launch failed


def test_scan_csv_has_the_documented_columns(tmp_path: Path) -> None:
    result = run_cli("scan", str(_pod_logs(tmp_path)), "--jobs", "1", "--format", "csv")
    reader = csv.DictReader(io.StringIO(result.stdout.decode()))
    assert reader.fieldnames is not None and reader.fieldnames[:5] == [
        "file",
        "run",
        "first_line",
        "last_line",
        "verdict",
    ]
    assert len(list(reader)) == 4


def test_scan_rejects_stdin_and_missing_paths() -> None:
    assert run_cli("scan", "-").returncode == 2
    assert run_cli("scan", "/no/such/dir").returncode == 2


def test_scan_on_a_dask_cluster_matches_local(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    pods = _pod_logs(tmp_path)
    local = run_cli("scan", str(pods), "--jobs", "1", "--format", "jsonl")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        remote = run_cli(
            "scan", str(pods), "--scheduler", cluster.scheduler_address, "--format", "jsonl"
        )
    assert remote.returncode == local.returncode == 1, remote.stderr
    assert _rows(remote.stdout) == _rows(local.stdout)
