"""`vlogscope watch`: follow a growing log or a pipe and report findings live.

A launch of a 1T-parameter model takes many minutes; an operator tailing it
wants to know the moment it is doomed.  The follower reads lines as they are
written (`tail -F` semantics: a rotated or truncated file is reopened), tells
the pipeline when the input goes idle so that an open traceback is closed
and matched immediately, and prints each finding the first time its
signature fires in the current launch.  Ctrl-C (or the end of a pipe) ends
with the full diagnosis of the latest launch.

Examples:
    >>> import io
    >>> lines = list(follow_stream(io.BytesIO(b"a\\nb\\n"), idle_after=0.01))
    >>> [line.text for line in lines if line is not None]
    ['a', 'b']
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from vlogscope.assemble import assemble
from vlogscope.envelope import unwrap
from vlogscope.findings import Finding, from_matches
from vlogscope.pipeline import Diagnosis, RunBuilder, RunDiagnosis, event_matches
from vlogscope.records import Record, read_record
from vlogscope.runs import RunSplitter
from vlogscope.signatures import Signature
from vlogscope.source import PhysicalLine, split_line

POLL_S = 0.2


def follow_stream(stream: BinaryIO, idle_after: float = 0.5) -> Iterator[PhysicalLine | None]:
    """Lines of a pipe until EOF, with `None` whenever nothing arrived for `idle_after` s."""
    inbox: queue.Queue[bytes | None] = queue.Queue()

    def pump() -> None:
        for raw in iter(stream.readline, b""):
            inbox.put(raw)
        inbox.put(None)

    threading.Thread(target=pump, daemon=True).start()
    number = 0
    while True:
        try:
            raw = inbox.get(timeout=idle_after)
        except queue.Empty:
            yield None
            continue
        if raw is None:
            return
        for text in split_line(raw):
            number += 1
            yield PhysicalLine(number, text)


def follow_file(
    path: Path, stop: Callable[[], bool] = lambda: False
) -> Iterator[PhysicalLine | None]:
    """`tail -F`: lines as they are appended; reopen on rotation or truncation."""
    number, handle, inode, partial = 0, None, None, b""
    while not stop():
        if handle is None:
            try:
                handle = path.open("rb")
                inode = os.fstat(handle.fileno()).st_ino
            except OSError:
                time.sleep(POLL_S)
                yield None
                continue
        chunk = handle.readline()
        if chunk:
            partial += chunk
            if partial.endswith(b"\n"):
                for text in split_line(partial):
                    number += 1
                    yield PhysicalLine(number, text)
                partial = b""
            continue
        yield None
        time.sleep(POLL_S)
        try:
            current = path.stat()
        except OSError:
            continue  # rotated away; the new file is not there yet
        if current.st_ino != inode or current.st_size < handle.tell():
            handle.close()
            handle = None  # rotated or truncated: start over on the new file


def watch(
    lines: Iterator[PhysicalLine | None],
    signatures: dict[str, Signature],
    on_finding: Callable[[Finding], None],
) -> Diagnosis:
    """Run the pipeline over a live stream; call `on_finding` as findings appear.

    Returns the diagnosis of everything read when the stream ends or the
    caller interrupts it (KeyboardInterrupt is caught here).
    """
    sigs = list(signatures.values())
    splitter, run = RunSplitter(), RunBuilder(1, sigs)
    finished: list[RunDiagnosis] = []
    reported: set[str] = set()

    def records() -> Iterator[Record | None]:
        for line in lines:
            yield None if line is None else read_record(unwrap(line))

    try:
        for event in assemble(records()):
            if splitter.starts_new_run(event) and run.first_event is not None:
                finished.append(run.finish())
                run, reported = RunBuilder(len(finished) + 1, sigs), set()
            run.add(event)
            for match in event_matches(event, run.by_needle):
                if match.signature.id not in reported:
                    reported.add(match.signature.id)
                    [finding] = from_matches([match], run.collector.facts())
                    on_finding(finding)
    except KeyboardInterrupt:
        pass
    finished.append(run.finish())
    return Diagnosis(
        source="<watch>",
        lines=sum(r.lines for r in finished),
        runs=tuple(finished),
        events=(),  # a follower may run for days: keep findings, not events
    )
