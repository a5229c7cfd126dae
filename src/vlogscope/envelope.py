"""Stage 2 — envelope: peel off what others wrapped around vLLM's lines.

vLLM's own format only starts after whatever the terminal, the container
runtime or the log shipper added: ANSI colours (vLLM colours its own prefix
even in files before 0.12), docker-compose's `vllm-1  | `, kubectl's
`--timestamps` RFC 3339 stamp, journald/syslog's `Aug 19 18:34:30 host
vllm[8707]: `, CI runners' time stamps, and Ray's ` [repeated 7x across
cluster]` suffix.  Later stages see only the inner text; what was removed is
kept beside it so that nothing is lost.

Examples:
    >>> line = unwrap(PhysicalLine(7, "vllm-1  | \\x1b[1;36m(APIServer pid=1)\\x1b[0;0m INFO x"))
    >>> line.text, line.wrapper
    ('(APIServer pid=1) INFO x', 'vllm-1  | ')
    >>> unwrap(PhysicalLine(1, "2025-05-14T09:10:07.123456789Z ERROR 05-14 09:10:07 a")).text
    'ERROR 05-14 09:10:07 a'
    >>> unwrap(PhysicalLine(2, "Aug 19 18:34:30 gpu7 vllm[8707]: (APIServer pid=8707) hi")).text
    '(APIServer pid=8707) hi'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from vlogscope.source import PhysicalLine

# CSI (colours, cursor moves, screen clears), OSC (titles, hyperlinks) and the
# APC time stamps Buildkite injects (`ESC _bk;t=1700000000000 BEL`).
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b_[^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
)

# One alternation per wrapper; each is anchored and cheap to reject.
# The same escapes, for code that works on raw bytes (routine_columns.py).
ESCAPES_BYTES = re.compile(_ESCAPES.pattern.encode("ascii"))
_WRAPPERS = re.compile(
    # CI web pages copied with their gutter (`  | `), and cloud consoles' `- `.
    r"(?:\s*\| |- (?=[0-9]{4}-)"
    # kubectl --timestamps, GitHub Actions: RFC 3339 with fraction and zone.
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2}) "
    # Buildkite / generic bracketed ISO time stamp.
    r"|\[[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?\] "
    # journald / syslog: `Aug 19 18:34:30 host unit[pid]: `, the month in the host's
    # locale (`авг`, `août`, `Okt.`, `8月`).
    r"|(?:[^\W\d_]{2,5}\.?|[0-9]{1,2}月) [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} \S+ [\w.@/-]+"
    r"(?:\[[0-9]+\])?: "
    # A time stamp put before every line by a wrapper (`ts`, a job runner): `2023-11-29
    # 11:34:19 `; one space is taken, so a traceback keeps its indentation.
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]{1,6})? (?!\| )"
    # FastChat-style workers: `2024-04-27 10:13:05 | ERROR | stderr | `.
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:,.]+ \| [A-Z]+ \| \w+ \| "
    # TorchServe: `2024-11-18T16:43:45,496 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - `.
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:,.]+ \[\w+ ?\] \S+ MODEL_LOG - "
    # torchrun's per-rank stderr prefix and container-name prefixes: `[rank0]: `, `[vllm]: `.
    r"|\[(?:rank[0-9]+|[a-z][\w.-]*)\]: "
    # docker compose: `service-1  | `.
    r"|[a-z0-9][\w.-]*(?:-[0-9]+)? +\| ?"
    # pytest, as CI logs of projects that test with vLLM show it: the short summary's
    # `FAILED tests/x.py::test_y - ` before an exception line, and the `E   ` gutter
    # of a failure's report.
    r"|(?:FAILED|ERROR) [\w./-]+\.py::\S+ - |E {3,}(?=\S))+"
)

# Colour codes whose ESC byte was lost in a copy-paste: ` [36m(...) [0m `.
_LOST_ESCAPES = re.compile(r" ?\[[0-9;]{0,8}m ?")

_RAY_REPEATED = re.compile(r" \[repeated [0-9]+x across cluster\](?: \(Ray deduplicates.*\))?$")


@dataclass(frozen=True, slots=True)
class UnwrappedLine:
    """A physical line with outer wrappers removed; `wrapper` is what went."""

    number: int
    text: str
    wrapper: str = ""


# The same colours copied as text in caret notation (`cat -v`, an editor that shows
# control characters): `^[[1;36m`.
_CARET_COLOURS = re.compile(r"\^\[\[[0-9;?]*[ -/]*[@-~]")


def strip_escapes(text: str) -> str:
    """Remove terminal escape sequences (colours, OSC hyperlinks, clears), also
    colours written in caret notation."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    return _CARET_COLOURS.sub("", text) if "^[[" in text else text


_JSON_RECORD = re.compile(r'\{\s*"(?:asctime|levelname|message)"')
_JSON_TIME = re.compile(
    r"[0-9]{4}-(?P<md>[0-9]{2}-[0-9]{2})[ T](?P<hms>[0-9]{2}:[0-9]{2}:[0-9]{2})"
)


def _from_json_record(text: str) -> str | None:
    """vLLM 0.32+'s opt-in JSON formatter, rewritten as the text format it stands for.

    `{"asctime": "2025-05-14 09:10:07,123", "levelname": "ERROR", "name":
    "vllm.v1.engine.core", "processName": "EngineCore_DP0", "process": 975,
    "message": "EngineCore failed to start.", "exc_info": "Traceback ..."}`
    becomes `(EngineCore_DP0 pid=975) ERROR 05-14 09:10:07 [vllm.v1.engine.core:0]
    EngineCore failed to start. | ValueError: ...` (the exception's last line kept,
    so that signatures see it).
    """
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or "levelname" not in record or "message" not in record:
        return None
    stamp = _JSON_TIME.search(str(record.get("asctime", "")))
    when = f"{stamp['md']} {stamp['hms']}" if stamp else "01-01 00:00:00"
    prefix = ""
    if record.get("processName") and isinstance(record.get("process"), int):
        prefix = f"({record['processName']} pid={record['process']}) "
    message = " ".join(str(record["message"]).split("\n"))
    exc = str(record.get("exc_info") or "").strip().splitlines()
    if exc:
        message += f" | {exc[-1]}"
    source = re.sub(r"[\s:\[\]]", "_", str(record.get("name") or "json"))
    return f"{prefix}{record['levelname']} {when} [{source}:0] {message}"


def unwrap(line: PhysicalLine) -> UnwrappedLine:
    """Remove escape codes, then any container/shipper prefixes and Ray suffix."""
    text = strip_escapes(line.text)
    if "[0m" in text:
        text = _LOST_ESCAPES.sub(" ", text).strip(" ") if text.startswith(" [") else text
    wrapper = ""
    match = _WRAPPERS.match(text)
    if match:
        wrapper = match.group(0)
        text = text[match.end() :]
    if text.startswith("{") and _JSON_RECORD.match(text):
        converted = _from_json_record(text)
        if converted is not None:
            wrapper, text = wrapper + text, converted
    if text.endswith("x across cluster]") or "(Ray deduplicates" in text:
        suffix = _RAY_REPEATED.search(text)
        if suffix:
            wrapper += suffix.group(0)
            text = text[: suffix.start()]
    return UnwrappedLine(line.number, text, wrapper)
