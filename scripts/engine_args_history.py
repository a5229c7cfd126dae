"""Rebuild src/vlogscope/data/engine_args.json: which vLLM releases take which engine argument.

A framework written for one vLLM release passes `EngineArgs(**kwargs)` keywords that
another release does not have; whether the argument was removed since or added later
decides what the user must change (the diagnosis in `engine_args.py`).  This script
reads `vllm/engine/arg_utils.py` out of every release's wheel on PyPI (HTTP range
requests: only that member is downloaded, not the wheel) and records, per field of
`EngineArgs` and `AsyncEngineArgs`, the runs of releases that declare it.

Usage: python scripts/engine_args_history.py [--out src/vlogscope/data/engine_args.json]
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import urljoin

INDEX = "https://pypi.org/pypi/vllm/json"
MEMBER = "vllm/engine/arg_utils.py"
OUT = Path(__file__).resolve().parents[1] / "src" / "vlogscope" / "data" / "engine_args.json"


class RangeReader(io.RawIOBase):
    """A remote file read with HTTP range requests, for zipfile's seeks."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.position = url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = base + offset
        return self.position

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self.size - self.position)
        if wanted <= 0:
            return 0
        end = self.position + wanted - 1
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.position}-{end}"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def fields_of(source: str) -> dict[str, set[str]]:
    """The annotated fields of EngineArgs and AsyncEngineArgs in one arg_utils.py."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name in ("EngineArgs", "AsyncEngineArgs"):
            found[node.name] = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return found


def runs(present: list[bool], versions: list[str]) -> list[list[str]]:
    """Consecutive releases holding a field, as [first, last] pairs."""
    spans: list[list[str]] = []
    for i, version in enumerate(versions):
        if present[i] and i > 0 and present[i - 1]:
            spans[-1][1] = version
        elif present[i]:
            spans.append([version, version])
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with urllib.request.urlopen(INDEX, timeout=120) as response:
        releases = json.load(response)["releases"]
    by_version: dict[str, dict[str, set[str]]] = {}
    for version in sorted(releases, key=release_key):
        wheels = [
            f for f in releases[version] if f["filename"].endswith(".whl") and not f["yanked"]
        ]
        if not wheels:
            continue
        wheel = min(wheels, key=lambda f: f["size"])
        reader = io.BufferedReader(
            RangeReader(urljoin(INDEX, wheel["url"]), wheel["size"]), 1 << 16
        )
        with zipfile.ZipFile(reader) as archive:
            names = [n for n in archive.namelist() if n.endswith(MEMBER)]
            if names:
                by_version[version] = fields_of(archive.read(names[0]).decode("utf-8"))
    versions = list(by_version)
    engine = sorted(set().union(*(f.get("EngineArgs", set()) for f in by_version.values())))
    extra = sorted(set().union(*(f.get("AsyncEngineArgs", set()) for f in by_version.values())))
    history = {
        "source": f"{MEMBER} of each vLLM release's wheel on PyPI",
        "releases": versions,
        "EngineArgs": {
            name: runs([name in by_version[v].get("EngineArgs", set()) for v in versions], versions)
            for name in engine
        },
        "AsyncEngineArgs": {
            name: runs(
                [name in by_version[v].get("AsyncEngineArgs", set()) for v in versions], versions
            )
            for name in extra
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(history, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(versions)} releases, {len(engine)} + {len(extra)} fields")


if __name__ == "__main__":
    main()
