"""The pipeline, end to end: one source in, one Diagnosis out.

    source -> envelope -> records -> assemble -> facts + signature matches
           -> rules and ranking -> Diagnosis

Each stage is a module; this one only wires them together, reading the input
exactly once.  Events are kept (the notebook API shows them); everything
else is computed while they stream past.

Examples:
    >>> import io
    >>> from vlogscope.source import PhysicalLine, Source
    >>> data = b"INFO 05-14 09:10:07 api_server.py:1] vLLM API server version 0.5.0\\n"
    >>> d = analyze(Source.from_stream("<stdin>", io.BytesIO(data)))
    >>> d.lines, d.facts.value("vllm_version")
    (1, '0.5.0')
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import BinaryIO

from vlogscope.assemble import Event, EventKind, assemble
from vlogscope.envelope import UnwrappedLine, unwrap
from vlogscope.facts import FactCollector, Facts
from vlogscope.findings import Finding, from_matches, rank
from vlogscope.needles import NeedleIndex, Needles
from vlogscope.records import Record, read_record
from vlogscope.redact import Redactor
from vlogscope.rules import (
    Progress,
    ShutdownRequest,
    WaitingStreak,
    blocks_below_max_len,
    died_while_serving,
    ends_in_shutdown,
    engine_argument_history,
    engine_died_silently,
    fp8_kv_cache_write,
    fp8_kv_kernel_build,
    interrupted_startup,
    is_residue_candidate,
    kv_dtype_from_checkpoint,
    platform_found_later,
    recovered_stalls,
    self_explained,
    stalled_with_warnings,
    startup_stalled,
    stopped_on_request,
    survived_errors,
    unrecognized_after_progress,
    unusual_tensor_parallel_size,
)
from vlogscope.runs import RunSplitter
from vlogscope.signatures import (
    Match,
    Role,
    Severity,
    Signature,
    SignatureGuard,
    candidate_texts,
    is_fallback,
    load_signatures,
    reads_digits,
)
from vlogscope.skim import RoutineRun, skim
from vlogscope.skim_parallel import auto_jobs, skim_file
from vlogscope.source import PhysicalLine, Source

# Levels whose records every signature is tried on; INFO/DEBUG records only
# meet signatures that ask for those levels, which keeps the hot path cheap.
_ALWAYS_TRIED = frozenset({"WARNING", "ERROR", "CRITICAL", None})


class Verdict(StrEnum):
    FAILED = "failed"
    HEALTHY = "healthy"
    NOT_VLLM = "no-vllm-lines"


@dataclass(frozen=True)
class RunDiagnosis:
    """What vlogscope concluded about one launch found in the input."""

    index: int  # 1-based, in input order
    first_line: int
    last_line: int
    lines: int
    vllm_lines: int
    facts: Facts
    findings: tuple[Finding, ...]
    residue: tuple[Event, ...]
    stats: tuple[str, ...] = ()  # a sample of the run's stats-line messages, in order
    stats_lines: int = 0  # how many stats lines the run printed (the sample is smaller)

    @property
    def root_cause(self) -> Finding | None:
        return next((f for f in self.findings if f.root_cause), None)

    @property
    def verdict(self) -> Verdict:
        if any(f.severity is Severity.ERROR for f in self.findings):
            return Verdict.FAILED
        return Verdict.HEALTHY if self.vllm_lines or self.findings else Verdict.NOT_VLLM


@dataclass(frozen=True)
class Diagnosis:
    """Everything vlogscope concluded about one input; the latest run speaks for it.

    `facts`, `findings`, `residue`, `root_cause` and `verdict` are those of the
    last launch in the input (what the server is doing now); `runs` has them all.
    """

    source: str
    lines: int
    runs: tuple[RunDiagnosis, ...]
    events: tuple[Event, ...]
    redactions: Mapping[str, int] = field(default_factory=dict)  # kind -> distinct values
    warnings: tuple[str, ...] = ()  # problems with the tool's own inputs (signatures)

    @property
    def latest(self) -> RunDiagnosis:
        return self.runs[-1]

    @property
    def facts(self) -> Facts:
        return self.latest.facts

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.latest.findings

    @property
    def residue(self) -> tuple[Event, ...]:
        return self.latest.residue

    @property
    def root_cause(self) -> Finding | None:
        return self.latest.root_cause

    @property
    def vllm_lines(self) -> int:
        return sum(r.vllm_lines for r in self.runs)

    @property
    def verdict(self) -> Verdict:
        if self.vllm_lines == 0 and not any(r.findings for r in self.runs):
            return Verdict.NOT_VLLM
        return self.latest.verdict


def _tried(sig: Signature, event: Event) -> bool:
    return event.level in _ALWAYS_TRIED or event.level in sig.levels


def _best_matches(found: Iterable[Match]) -> list[Match]:
    """The matches one event keeps: the most specific per category, fallbacks only alone.

    Two signatures of one category on one event say the same thing twice;
    frame/path fallbacks guess, so they yield to any message-based cause, and
    to a traceback that ends in KeyboardInterrupt or SystemExit (a shutdown).
    """
    best: dict[tuple[str, Role], Match] = {}
    for m in found:
        key = (m.signature.category, m.signature.role)
        if key not in best or m.signature.priority > best[key].signature.priority:
            best[key] = m
    kept = list(best.values())
    if any(m.signature.role is Role.CAUSE and not is_fallback(m.signature) for m in kept) or any(
        ends_in_shutdown(m.event) for m in kept
    ):  # where a traceback ran says nothing when it ended in a shutdown
        kept = [m for m in kept if not is_fallback(m.signature)]
    return kept


def read_events(
    source: Source,
    redactor: Redactor | None = None,
    skim_routine: bool = False,
    routine_columns: bool = False,
    jobs: int = 1,
    routine_messages: bool = True,
) -> Iterator[Event]:
    """The first four stages: physical lines to assembled events (redacted if asked).

    With `skim_routine`, runs of routine INFO lines become single ROUTINE events
    (skim.py): what `diagnose` needs, at a fraction of the cost.  With
    `routine_columns` too, those events carry their lines as Arrow columns
    (for DataFrames; routine lines are then not redacted, so not with a redactor);
    without `routine_messages`, those columns keep only the messages the frames
    read (stats lines, milestones, the first serving line).
    With `jobs` > 1, a plain file is skimmed by that many processes
    (skim_parallel.py), and with 0 by as many as its size calls for
    (`auto_jobs`); compressed input and pipes are read by this one.
    """
    if routine_columns and redactor is not None:
        raise ValueError("routine columns are not redacted: use one or the other")

    def skimmer(stream: BinaryIO) -> Iterator[PhysicalLine | RoutineRun]:
        plain = isinstance(stream, io.BufferedReader)  # not wrapped in a decompressor
        if plain and source.path is not None:
            processes = jobs or auto_jobs(source.path.stat().st_size)
            if processes > 1:
                return skim_file(source.path, processes, routine_columns, routine_messages)
        return skim(stream, columns=routine_columns, messages=routine_messages)

    def records() -> Iterator[Record | RoutineRun]:
        if skim_routine:
            items: Iterable[PhysicalLine | RoutineRun] = source.read(skimmer)
        else:
            items = source.lines()
        for item in items:
            if isinstance(item, RoutineRun):
                yield item
                continue
            line = unwrap(item)
            if redactor is not None:
                line = UnwrappedLine(line.number, redactor(line.text), redactor(line.wrapper))
            yield read_record(line)

    return assemble(records())


def _is_binary_noise(text: str) -> bool:
    """Bytes that were not text (decoded with replacement characters) carry no message."""
    return text.count("\ufffd") * 8 > len(text) > 0


def signature_index(signatures: Iterable[Signature]) -> NeedleIndex[Signature]:
    """The signatures filed under their needles (see `NeedleIndex`)."""
    return NeedleIndex([(s, s.needles) for s in signatures])


def event_matches(
    event: Event,
    signatures: Iterable[Signature] | NeedleIndex[Signature],
    guard: SignatureGuard | None = None,
    present: Needles | None = None,
) -> list[Match]:
    """The matches an event keeps, with the same filters `analyze` applies.

    Only the signatures with a needle in the event's texts, or none at all,
    are searched; a caller that tries many events keeps the `signature_index`
    instead of building it each time, as `RunBuilder` does, and may pass the
    needles `present` in the texts if it has looked for them already.
    """
    if event.kind is EventKind.ROUTINE or (
        event.kind is EventKind.UVICORN and event.level == "INFO"
    ):
        return []  # access lines: thousands per hour, never a failure by themselves
    if event.kind is EventKind.UNPARSED and _is_binary_noise(event.message):
        return []
    guard = guard or SignatureGuard()
    texts = candidate_texts(event)
    index = signatures if isinstance(signatures, NeedleIndex) else signature_index(signatures)
    if present is None:
        present = index.present("\n".join(text for _, text in texts))
    possible = index.filed_under(present)
    return _best_matches(
        m for sig in possible if _tried(sig, event) and (m := guard.matches(sig, event, texts))
    )


# Matches kept per signature beyond the first of each process: evidence shows at
# most a handful, so a warning repeated a million times costs a few objects.
MAX_MATCHES_PER_SIGNATURE = 32
_DIGITS = re.compile(r"[0-9]+")
# Stats lines kept per run for the text report's sparklines (decimated beyond): a
# sparkline is 60 bars, and a file of many launches keeps this many per launch.
MAX_STATS_SAMPLES = 512


class RunBuilder:
    """Accumulates one launch's facts, matches and loose ends as events stream past.

    It keeps what the diagnosis needs, not the events themselves, so memory
    stays flat however long the log: matches capped per signature (but one per
    process, for rank counts), unexplained errors, the last event, and a
    decimated sample of stats lines.
    """

    def __init__(
        self, index: int, signatures: list[Signature], guard: SignatureGuard | None = None
    ) -> None:
        self.index, self.signatures = index, signatures
        self.guard = guard or SignatureGuard()
        self.collector = FactCollector()
        self.waiting = WaitingStreak()
        self.progress = Progress()
        self.shutdown = ShutdownRequest()
        self.by_needle = signature_index(signatures)
        # Run on every one-line record that holds one of their needles (or on every one,
        # if one of them has none): a remembered shape says nothing about them.
        self._reading_digits = [s for s in signatures if reads_digits(s)]
        digit_needles: Needles = frozenset().union(*(s.needles or () for s in self._reading_digits))
        self._digits_always = any(s.needles is None for s in self._reading_digits)
        self._digit_index = signature_index(self._reading_digits)
        self._digit_readers = {s.id for s in self._reading_digits}
        # A needle without digits is in a message exactly when it is in the message's
        # shape (folding changes digits only), so its presence is remembered per shape;
        # the few needles with digits are looked for in every message whose shape may
        # hold them (below).
        self._numeric_needles = {n for n in digit_needles if any(map(str.isdigit, n))}
        self._plain_needles = digit_needles - self._numeric_needles
        # A needle in a message is, digits folded, in the message's shape (a digit run
        # of the needle folds like the run it lies in), so a shape holding none of
        # these can skip the test of each message.
        self._folded_numeric = {_DIGITS.sub("0", n) for n in self._numeric_needles}
        self.matches: list[Match] = []
        self._kept: dict[str, tuple[int, set[object]]] = {}  # sig id -> (count, processes)
        # message shape -> (signatures it matched, holds a digit-free needle of
        # _reading_digits, may hold one of the needles with digits)
        self._shapes: dict[tuple[str, str], tuple[tuple[Signature, ...], bool, bool]] = {}
        self.unexplained: list[Event] = []
        self.first_event: Event | None = None
        self.last_event: Event | None = None
        self.stats: list[str] = []
        self._stats_stride, self._stats_seen = 1, 0
        self.lines = self.vllm_lines = 0

    def add(self, event: Event) -> None:
        self.first_event = self.first_event or event
        self.last_event = event
        self.lines += event.lines
        if event.kind is not EventKind.UNPARSED or "vllm" in event.message.lower():
            self.vllm_lines += event.lines
        self.collector.observe(event)
        self.waiting.observe(event)
        self.shutdown.observe(event)
        found = self._matches(event)
        if found and self.collector.startup_complete:
            found = [m for m in found if not m.signature.startup_only]
        for m in found:
            self._keep(m)
        if is_residue_candidate(event) and not any(m.explains_event for m in found):
            self.unexplained.append(event)
        stats = event.samples or ((event.message,) if event.level == "INFO" else ())
        for message in stats:
            self._sample(message)
        self.progress.observe(event, stats)

    def _matches(self, event: Event) -> list[Match]:
        """`event_matches`, remembered per message shape for one-line records.

        Long logs repeat the same warning with other numbers thousands of times;
        once a shape's outcome is known, only signatures that still want
        evidence (under their cap, or a new process) are run again.
        """
        if (
            len(event.texts) != 1
            or event.exceptions
            or event.kind not in (EventKind.RECORD, EventKind.UNPARSED)
        ):
            return event_matches(event, self.by_needle, self.guard)
        shape = (event.level or str(event.kind), _DIGITS.sub("0", event.message))
        remembered = self._shapes.get(shape)
        if remembered is None:
            present = self.by_needle.present(event.message)  # the event's one text
            found = event_matches(event, self.by_needle, self.guard, present)
            self._shapes[shape] = (
                tuple(m.signature for m in found if m.signature.id not in self._digit_readers),
                not present.isdisjoint(self._plain_needles),
                any(n in shape[1] for n in self._folded_numeric),
            )
            return found
        known, plain_needle, numeric_possible = remembered
        process = (event.process, event.pid)
        found = []
        for sig in known:
            count, processes = self._kept.get(sig.id, (0, set()))
            if count < MAX_MATCHES_PER_SIGNATURE or process not in processes:
                m = self.guard.matches(sig, event)
                if m is not None:
                    found.append(m)
            else:  # `_keep` only counts it: no need to run the regex for captures
                found.append(Match(sig, event, event.line, event.message, {}))
        if self._reading_digits and (
            plain_needle
            or self._digits_always
            or (numeric_possible and any(n in event.message for n in self._numeric_needles))
        ):
            by_digits = event_matches(event, self._digit_index, self.guard)
            if by_digits:
                return _best_matches(found + by_digits)
        return found

    def _keep(self, m: Match) -> None:
        count, processes = self._kept.get(m.signature.id, (0, set()))
        process = (m.event.process, m.event.pid)
        if count < MAX_MATCHES_PER_SIGNATURE or process not in processes:
            self.matches.append(m)
            processes.add(process)
        self._kept[m.signature.id] = (count + 1, processes)

    def _sample(self, message: str) -> None:
        if "Avg prompt throughput" not in message:
            return
        self._stats_seen += 1
        if self._stats_seen % self._stats_stride:
            return
        self.stats.append(message)
        if len(self.stats) >= MAX_STATS_SAMPLES:
            self.stats, self._stats_stride = self.stats[::2], self._stats_stride * 2

    def finish(self) -> RunDiagnosis:
        facts = self.collector.facts()
        # The signatures' findings, then what the run's other lines say of each of them.
        findings = from_matches(self_explained(self.matches), facts)
        findings = engine_argument_history(findings, self.matches, facts)
        findings = platform_found_later(findings, facts)
        findings = survived_errors(findings, self.progress)
        findings = recovered_stalls(findings, self.progress.last_line(facts))
        findings = stopped_on_request(findings, self.shutdown.line)
        for rule_finding in (
            fp8_kv_kernel_build(self.matches, facts),
            fp8_kv_cache_write([m.event for m in self.matches] + self.unexplained, facts),
            blocks_below_max_len(facts, findings),
        ):
            if rule_finding is not None:
                findings.append(rule_finding)
        has_error = any(f.severity is Severity.ERROR and f.role is Role.CAUSE for f in findings)
        stopped = facts.get("last_phase") is not None and not facts.value("startup_complete")
        unrecognized = died_while_serving(
            None
            if has_error
            else unrecognized_after_progress(self.unexplained, self.progress.line),
            findings,
            facts,
        )
        if (
            unrecognized is not None
            and unrecognized.id == "other/traceback-cut-off"
            and any(f.severity is Severity.ERROR for f in findings)
        ):  # a symptom that names what happened says more than a traceback without its end
            unrecognized = None
        failed_unrecognized = unrecognized is not None and unrecognized.severity is Severity.ERROR
        stalled = silent = interrupted = None
        if not has_error and not failed_unrecognized:
            interrupted = interrupted_startup(self.shutdown.interrupted, facts)
        if not has_error and not failed_unrecognized and interrupted is None:
            stalled = startup_stalled(self.waiting, facts) or stalled_with_warnings(findings, facts)
            silent = None if stalled else engine_died_silently(facts, self.last_event)
        extra = [
            kv_dtype_from_checkpoint(facts, findings, stopped and not has_error),
            unrecognized,
            interrupted,
            stalled,
            silent,
        ]
        findings.extend(f for f in extra if f is not None)
        odd_tp = unusual_tensor_parallel_size(facts, findings)
        if odd_tp is not None:
            findings.append(odd_tp)
        return RunDiagnosis(
            index=self.index,
            first_line=self.first_event.line if self.first_event else 0,
            last_line=self.last_event.line_numbers[-1] if self.last_event else 0,
            lines=self.lines,
            vllm_lines=self.vllm_lines,
            facts=facts,
            findings=tuple(rank(findings)),
            residue=tuple(self.unexplained),
            stats=tuple(self.stats),
            stats_lines=self._stats_seen,
        )


def analyze(
    source: Source,
    signatures: Mapping[str, Signature] | None = None,
    redactor: Redactor | None = None,
    skim_routine: bool = False,
    keep_events: bool = True,
    routine_columns: bool = False,
    jobs: int = 1,
    routine_messages: bool = True,
) -> Diagnosis:
    """Run the whole pipeline over one source, reading it once.

    `skim_routine` counts routine INFO lines instead of parsing them: the
    findings and facts are the same, the events are not all there unless
    `routine_columns` keeps those lines as Arrow columns (what `read` does).
    Without `keep_events` (the command line), memory does not grow with the
    log: `Diagnosis.events` is left empty.  `jobs` > 1 skims a big plain file
    with that many processes (see `read_events`).
    """
    sigs = list((signatures if signatures is not None else load_signatures()).values())
    splitter, guard = RunSplitter(), SignatureGuard()
    runs: list[RunDiagnosis] = []
    current = RunBuilder(1, sigs, guard)
    events: list[Event] = []
    for event in read_events(
        source, redactor, skim_routine, routine_columns, jobs, routine_messages
    ):
        if splitter.starts_new_run(event) and current.first_event is not None:
            runs.append(current.finish())
            current = RunBuilder(len(runs) + 1, sigs, guard)
        current.add(event)
        if keep_events:
            events.append(event)
    runs.append(current.finish())
    return Diagnosis(
        source=redactor(source.name) if redactor else source.name,
        lines=sum(r.lines for r in runs),
        runs=tuple(runs),
        events=tuple(events),
        redactions=dict(redactor.counts) if redactor else {},
        warnings=tuple(guard.warnings),
    )
