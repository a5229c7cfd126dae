"""Run segmentation: one log file often holds several launches.

Supervisors restart a crashed server into the same file, people append a
second attempt with `>>`, and CI keeps every retry.  Facts and findings
belong to one launch: the fp8 KV cache of launch 2 must not be explained by
the config line of launch 1, nor a CUDA error of yesterday's run be listed
as a symptom of today's start-up failure.

A new run starts at a *launch marker* — the start-up banner, `vLLM API
server version`, `non-default args:`, `args: Namespace(...)` — when the
current run already had a marker of that kind; at an engine config line
from a process that already printed one in this run (offline `LLM()`
restarts print no argument lines); or when the `(APIServer pid=N)` changes on a
line that is not routine (a stats line of a second server writing to the same
file is not a restart, and `diagnose` never reads routine lines one by one).

Examples:
    >>> from vlogscope.assemble import Event, EventKind
    >>> def rec(n, text, proc=None):
    ...     return Event(EventKind.RECORD, (n,), (text,), process=proc)
    >>> splitter = RunSplitter()
    >>> [splitter.starts_new_run(e) for e in [
    ...     rec(1, "non-default args: {'model': 'a'}"), rec(2, "Starting to load model a..."),
    ...     rec(3, "non-default args: {'model': 'b'}")]]
    [False, False, True]
"""

from __future__ import annotations

import re

from vlogscope.assemble import Event, EventKind
from vlogscope.skim import is_routine_record

_LAUNCH_MARKERS = (
    ("args", re.compile(r"^(?:non-default args: |args: Namespace\()")),
    ("version", re.compile(r"^(?:vLLM API server version |vLLM server version )")),
)
_BANNER = "█"
_ENGINE_CONFIG = re.compile(r"Initializing an? (?:V[01] )?LLM engine")


def _marker_kind(event: Event) -> str | None:
    if _BANNER in event.message or any(_BANNER in t for t in event.texts[:3]):
        return "banner"
    return next((kind for kind, p in _LAUNCH_MARKERS if p.match(event.message)), None)


class RunSplitter:
    """Decides, event by event, where a new launch begins.

    One launch prints each kind of launch marker once (banner, version line,
    argument line); seeing a kind again means a new launch.
    """

    def __init__(self) -> None:
        self._markers: set[str] = set()
        self._config_processes: set[str | None] = set()
        self._api_server_pid: int | None = None

    def _reset(self) -> None:
        self._markers.clear()
        self._config_processes.clear()
        self._api_server_pid = None

    def starts_new_run(self, event: Event) -> bool:
        if event.kind is not EventKind.RECORD:
            return False
        if (
            event.process == "APIServer"
            and event.pid is not None
            and not is_routine_record(event.level, event.message)
        ):
            # One launch has one API server; another pid is a restarted server.
            if self._api_server_pid not in (None, event.pid):
                self._reset()
                self._api_server_pid = event.pid
                self._markers.add(_marker_kind(event) or "pid")
                return True
            self._api_server_pid = event.pid
        kind = _marker_kind(event)
        if kind is not None:
            # A second marker of a kind, or any marker after an engine config line.
            new = kind in self._markers or bool(self._config_processes)
            if new:
                pid = self._api_server_pid
                self._reset()
                self._api_server_pid = pid if event.process == "APIServer" else None
            self._markers.add(kind)
            return new
        if _ENGINE_CONFIG.search(event.message):
            new = event.process in self._config_processes
            if new:
                self._reset()
            self._config_processes.add(event.process)
            return new
        return False
