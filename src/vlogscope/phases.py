"""Start-up milestones: how far a launch got before the log stops.

A launch that dies without an error record (killed by the OOM killer, a
supervisor's timeout, a truncated paste) can still be located: vLLM prints a
known line at each stage of start-up.  The table below lists them in the
order they happen, with templates from 0.4 to 0.34; the furthest stage seen
is the phase the run reached.  Phases `engine ready` and later mean start-up
completed.

Examples:
    >>> from vlogscope.assemble import ROUTINE_SERVING_TEXT, Event, EventKind
    >>> tracker = PhaseTracker()
    >>> tracker.observe(Event(EventKind.RECORD, (40,), ("Starting to load model /m...",)))
    >>> tracker.facts()["last_phase"]
    ('weight loading', 40)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vlogscope.assemble import ROUTINE_SERVING_TEXT, Event, EventKind
from vlogscope.skim import SERVING_MARKERS


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    marker: re.Pattern[str]
    # Only vLLM's own records may mark it (a `█` in random bytes is not a banner).
    records_only: bool = False


PHASES = (
    Phase(
        "argument parsing",
        re.compile(r"non-default args:|^args: |vLLM API server version|█"),
        records_only=True,
    ),
    Phase(
        "engine configuration",
        re.compile(
            r"LLM engine (?:\(v|with config)|Resolved architecture:|Started engine process with PID"
            r"|Waiting for \d+ local, \d+ remote core engine"  # the API server, engines starting
        ),
    ),
    Phase(
        "distributed set-up",
        re.compile(
            r"vLLM is using nccl|Found nccl from library|world_size=\d+ rank=\d+"
            r"|rank \d+ in world size|init_distributed_environment"
        ),
    ),
    Phase(
        "weight loading",
        re.compile(
            r"Starting to load model|Loading model from scratch|checkpoint shards|loading shards"
            r"|Loading weights on "
            r"|Loading weights took|[Mm]odel (?:loading|weights) took"
        ),
    ),
    Phase(
        "torch.compile",
        re.compile(
            r"Dynamo bytecode transform|Compiling a graph for"
            r"|torch\.compile take|torch\.compile took"
        ),
    ),
    Phase(
        "memory profiling and KV-cache sizing",
        re.compile(
            r"Memory profiling takes|Available KV cache memory|KV cache size: [\d,]+ tokens"
            r"|# \w+ blocks: \d+|Maximum concurrency for"
        ),
    ),
    Phase(
        "CUDA graph capture",
        re.compile(
            r"Capturing CUDA graph|Capturing cudagraphs|Capturing the model for CUDA graphs"
            r"|Graph capturing finished"
        ),
    ),
    Phase(
        "engine ready",
        # The API server asks the running engine for its tasks once the engine is up; V1
        # logs "encountered a fatal error" only for an engine core that had started (one
        # that had not says "failed to start").
        re.compile(
            r"init engine \(profile, create kv cache, warmup model\) took|Supported tasks: \["
            r"|^EngineCore encountered a fatal error"
        ),
    ),
    Phase(
        "API server ready",
        re.compile(
            r"Starting vLLM (?:API )?server|Available routes are:|Application startup complete"
            r"|Uvicorn running on"
        ),
    ),
    Phase(
        "serving",
        re.compile(
            SERVING_MARKERS
            + r"$|^"
            + re.escape(ROUTINE_SERVING_TEXT)
            # V1 dumps the batch it was running when a step fails: requests were scheduled.
            + r"|^Dumping (?:input data for V1 LLM engine|scheduler output for model execution"
            r"|scheduler stats)"
        ),
    ),
    Phase("shutdown", re.compile(r"Shutting down|shutdown complete|\[shutdown\]")),
)

SERVING_PHASE = "serving"
READY_INDEX = next(i for i, p in enumerate(PHASES) if p.name == "engine ready")
SHUTDOWN_INDEX = len(PHASES) - 1
# V0 engines up to 0.6 print nothing after CUDA-graph capture: it ends their start-up. In
# an offline run (`LLM(...)`, no API server's arguments logged) the engine is then ready;
# a server would go on to start its API.
_V0_ENGINE = re.compile(r"Initializing an? (?:V0 )?LLM engine")
_V0_CAPTURE_DONE = re.compile(r"Graph capturing finished")


class PhaseTracker:
    """Remembers the furthest start-up phase seen, where, and whether shutdown began.

    Shutdown is tracked apart: a failed start-up also prints `[shutdown]` lines,
    and they must not count as having got past start-up.
    """

    def __init__(self) -> None:
        self._furthest = -1
        self._line = 0
        self._shutdown_line: int | None = None
        self._v0 = self._server = False

    def observe(self, event: Event) -> None:
        if event.kind is EventKind.TRACEBACK:
            return
        text = event.message
        if self._shutdown_line is None and PHASES[SHUTDOWN_INDEX].marker.search(text):
            self._shutdown_line = event.line
            return
        is_record = event.kind is EventKind.RECORD
        self._server = self._server or (is_record and PHASES[0].marker.search(text) is not None)
        self._v0 = self._v0 or _V0_ENGINE.search(text) is not None
        if (
            self._v0
            and not self._server
            and self._furthest < READY_INDEX
            and _V0_CAPTURE_DONE.search(text)
        ):
            self._furthest, self._line = READY_INDEX, event.line
            return
        for index in range(SHUTDOWN_INDEX - 1, self._furthest, -1):
            phase = PHASES[index]
            if (is_record or not phase.records_only) and phase.marker.search(text):
                self._furthest, self._line = index, event.line
                return

    @property
    def startup_complete(self) -> bool:
        return self._furthest >= READY_INDEX

    def facts(self) -> dict[str, tuple[str | bool, int]]:
        found: dict[str, tuple[str | bool, int]] = {}
        if self._furthest >= 0:
            found["last_phase"] = (PHASES[self._furthest].name, self._line)
            found["startup_complete"] = (self._furthest >= READY_INDEX, self._line)
        if self._shutdown_line is not None:
            found["shutdown_seen"] = (True, self._shutdown_line)
        return found
