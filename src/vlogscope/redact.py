"""`--redact`: take secrets and identities out of a log before a report is shared.

Reports get pasted into public GitHub issues.  Logs carry API keys in
`non-default args`, Hugging Face tokens, bearer tokens, IP addresses, host
names, user names in home paths, and — with request logging on — users'
prompts.  The redactor rewrites each line right after the envelope stage,
so facts, findings and every output format only ever see placeholders.  The
same secret always gets the same placeholder (`redacted-ip-2` is one machine
throughout the report), and the report says how many of each were replaced.
Placeholders use only letters, digits and dashes so the line grammar still
parses them (e.g. inside Ray's `(RayWorkerWrapper pid=5, ip=...)` prefix).

Examples:
    >>> r = Redactor()
    >>> r("(RayWorkerWrapper pid=5, ip=10.0.0.7) token hf_abcdefghijklmnopqrstuvwx from 10.0.0.7")
    '(RayWorkerWrapper pid=5, ip=redacted-ip-1) token redacted-hf-token-1 from redacted-ip-1'
    >>> r("File \\"/home/alice/venv/x.py\\"; 'api_key': 'sk-proj-0123456789abcdefghij'")
    'File "/home/redacted-user-1/venv/x.py"; \\'api_key\\': \\'redacted-api-key-1\\''
    >>> r.counts
    {'hf-token': 1, 'ip': 1, 'api-key': 1, 'user': 1}
"""

from __future__ import annotations

import re
from collections.abc import Callable

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_HEX = r"[0-9a-fA-F]{1,4}"

# (kind, pattern, group holding the secret); order matters: specific before generic.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("hf-token", re.compile(r"\b(?P<s>hf_[A-Za-z0-9]{20,})\b"), "s"),
    ("api-key", re.compile(r"\b(?P<s>sk-[A-Za-z0-9_-]{16,})"), "s"),
    (
        "api-key",
        re.compile(
            r"""(?:api_key|hf_token|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|token)['"]?\s*[:=]\s*\[?['"]?(?P<s>(?!\*\*\*|None\b|redacted-)[^'",\s\])]{6,})"""
        ),
        "s",
    ),
    ("bearer-token", re.compile(r"[Bb]earer\s+(?P<s>(?!redacted-)[A-Za-z0-9._~+/=-]{8,})"), "s"),
    # 0.0.0.0 and loopback say nothing about anyone.
    (
        "ip",
        re.compile(rf"(?<![\w.])(?!0\.0\.0\.0|127\.)(?P<s>{_OCTET}(?:\.{_OCTET}){{3}})(?![\w.])"),
        "s",
    ),
    (
        "ip",
        re.compile(
            rf"(?<![\w:.])(?P<s>(?:{_HEX}:){{7}}{_HEX}|(?:{_HEX}:){{1,6}}:(?:{_HEX}:){{0,5}}{_HEX}"
            rf"|::(?:{_HEX}:){{0,5}}{_HEX})(?![\w:])"
        ),
        "s",
    ),
    (
        "user",
        re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\Users\\)(?P<s>(?!redacted-)[^/\\\s'\"]+)"),
        "s",
    ),
    (
        "host",
        re.compile(r"https?://(?P<s>(?!redacted-|0\.0\.0\.0|localhost|127\.)[A-Za-z][\w.-]*)"),
        "s",
    ),
    ("host", re.compile(r"^(?P<s>[A-Za-z][\w.-]*):\d+:\d+ \[\d+\] NCCL"), "s"),
    (
        "prompt",
        re.compile(r"""(?:prompt|output): (?P<s>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""),
        "s",
    ),
)


class Redactor:
    """Replaces secrets with stable placeholders and counts what it replaced."""

    def __init__(self) -> None:
        self._placeholders: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}

    def _placeholder(self, kind: str, secret: str) -> str:
        key = (kind, secret)
        if key not in self._placeholders:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self._placeholders[key] = f"redacted-{kind}-{self.counts[kind]}"
        return self._placeholders[key]

    def __call__(self, text: str) -> str:
        for kind, pattern, group in _RULES:
            text = pattern.sub(self._replacer(kind, group), text)
        return text

    def _replacer(self, kind: str, group: str) -> Callable[[re.Match[str]], str]:
        def replace(m: re.Match[str]) -> str:
            start, end = m.span(group)
            base = m.start()
            whole = m.group(0)
            secret = m.group(group)
            if kind == "prompt":
                secret_out = f"'{self._placeholder(kind, secret)}'"
            else:
                secret_out = self._placeholder(kind, secret)
            return whole[: start - base] + secret_out + whole[end - base :]

        return replace
