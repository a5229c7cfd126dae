"""`diagnose --jobs N`: one big file skimmed by N processes, range by range.

The skim (skim.py) is most of `diagnose`'s time, and it carries almost no
state from one line to the next: a routine line is routine wherever it is.
So a plain file is cut at newlines into byte ranges, worker processes skim
the ranges, and this process renumbers their items and hands them on in file
order, as if it had skimmed the file itself.  The stages after the skim
(records, assembly, diagnosis) stay sequential: they see the same lines that
matter, in the same order, so a traceback that straddles two ranges is
assembled as usual.

Workers send back only what the skim hands on: the lines that matter and one
count per run of routine lines (with its stats-line messages).  Routine lines
themselves never cross a process boundary.  At most two ranges per worker are
in flight, so memory stays flat however big the file.

The one piece of state the skim carries is whether it is still looking for
the first serving line (`skim.skim`): a worker always starts looking, so this
process clears a serving mark that the sequential skim would not have set.
`tests/test_skim_parallel.py` checks that diagnoses agree with one process.
"""

from __future__ import annotations

import io
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from vlogscope.skim import Item, RoutineRun, skim
from vlogscope.source import PhysicalLine

# Ranges are small enough to balance the load and bound memory, big enough that
# process overhead stays a few percent; a file with fewer lines stays in one process.
MIN_RANGE_BYTES = 1 << 20
MAX_RANGE_BYTES = 16 << 20
RANGES_PER_JOB = 4
# `--jobs` left to vlogscope: files this big are skimmed by up to AUTO_MAX_JOBS
# processes (one per CPU); smaller ones are done before workers would start.
AUTO_MIN_BYTES = 64 << 20
AUTO_MAX_JOBS = 4
_SCAN_BYTES = 1 << 16


def auto_jobs(size: int) -> int:
    """How many processes skim a `size`-byte plain file when the user did not say."""
    if size < AUTO_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, AUTO_MAX_JOBS))


def range_bytes(size: int, jobs: int) -> int:
    """The target size of one byte range of a `size`-byte file skimmed by `jobs`."""
    return max(MIN_RANGE_BYTES, min(MAX_RANGE_BYTES, size // (jobs * RANGES_PER_JOB) + 1))


def byte_ranges(path: Path, target: int) -> list[tuple[int, int]]:
    """[start, stop) ranges covering the file, each ending just after a newline
    (the last one at the end of the file), about `target` bytes each."""
    size = path.stat().st_size
    ranges: list[tuple[int, int]] = []
    start = 0
    with path.open("rb") as stream:
        while start < size:
            stop = start + target
            if stop >= size:
                ranges.append((start, size))
                break
            stream.seek(stop)
            while True:  # to the end of the line that `stop` falls in
                block = stream.read(_SCAN_BYTES)
                newline = block.find(b"\n")
                if not block or newline >= 0:
                    stop = stop + newline + 1 if newline >= 0 else size
                    break
                stop += len(block)
            ranges.append((start, stop))
            start = stop
    return ranges


def skim_range(
    path: str, start: int, stop: int, columns: bool = False, messages: bool = True
) -> tuple[list[Item], Any]:
    """A worker's job: the skim of one byte range, numbered from line 1.

    With `columns` (for `vlogscope.read`), the routine runs' Arrow columns come
    back separately, as one compact batch in run order: a run's columns are a
    slice of its block's batch, and pickling a slice would copy the whole block.
    """
    with open(path, "rb") as stream:
        stream.seek(start)
        data = stream.read(stop - start)
    items = list(skim(io.BytesIO(data), columns=columns, messages=messages))
    if not columns:
        return items, None
    import pyarrow as pa

    batches = [i.columns for i in items if isinstance(i, RoutineRun)]
    if not batches:
        return items, None
    table = pa.Table.from_batches(batches).combine_chunks()
    bare = [replace(i, columns=None) if isinstance(i, RoutineRun) else i for i in items]
    return bare, table


def _with_columns(items: list[Item], table: Any, base: int) -> list[Item]:
    """Give each routine run its slice of the range's columns, lines renumbered."""
    if table is None:
        return items
    import pyarrow.compute as pc

    table = table.set_column(0, "line", pc.add(table.column(0), base))
    batch = table.to_batches()[0] if table.num_rows else None
    out: list[Item] = []
    offset = 0
    for item in items:
        if isinstance(item, RoutineRun) and batch is not None:
            item = replace(item, columns=batch.slice(offset, item.count))
            offset += item.count
        out.append(item)
    return out


def _context() -> BaseContext:
    """Fork where the platform can: workers start at once, with vlogscope loaded.

    Arrow resets its thread pool in a forked child, so a parent that has used
    pyarrow (`vlogscope.read` in a notebook) still forks safe workers; spawn
    costs each worker its imports (~1.5 s more for a 1M-line read here).
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _pool(jobs: int) -> ProcessPoolExecutor | None:
    """Worker processes, or None where this system cannot make them (no
    /dev/shm for multiprocessing's locks in some containers): then one process."""
    try:
        return ProcessPoolExecutor(max_workers=jobs, mp_context=_context())
    except (OSError, NotImplementedError, ImportError):
        return None


def _last_line(items: list[Item]) -> int:
    if not items:
        return 0
    last = items[-1]
    return last.number if isinstance(last, PhysicalLine) else last.first + last.count - 1


def skim_file(
    path: Path, jobs: int, columns: bool = False, messages: bool = True
) -> Iterator[Item]:
    """What `skim(path.open("rb"), columns, messages)` yields, computed by `jobs` processes.

    Runs of routine lines may be cut at other places (as they are at block
    boundaries of one process); every line is still counted exactly once.
    """
    ranges = byte_ranges(path, range_bytes(path.stat().st_size, jobs))
    pool = _pool(jobs) if jobs > 1 and len(ranges) > 1 else None
    if pool is None:
        with path.open("rb") as stream:
            yield from skim(stream, columns=columns, messages=messages)
        return
    todo = iter(ranges)
    base, looking = 0, True  # lines before this range; the sequential skim's serving search
    with pool:
        first = [next(todo) for _ in range(min(2 * jobs, len(ranges)))]
        pending: deque[Future[tuple[list[Item], Any]]] = deque(
            pool.submit(skim_range, str(path), *r, columns, messages) for r in first
        )
        while pending:
            items, table = pending.popleft().result()
            items = _with_columns(items, table, base)
            following = next(todo, None)
            if following is not None:
                pending.append(pool.submit(skim_range, str(path), *following, columns, messages))
            for item in items:
                if isinstance(item, PhysicalLine):
                    looking = True
                    yield PhysicalLine(item.number + base, item.text)
                    continue
                serving = item.serving and looking
                looking = looking and not serving
                yield replace(item, first=item.first + base, serving=serving)
            base += _last_line(items)
