"""vlogscope: log forensics for vLLM engine logs.

Examples:
    >>> import vlogscope
    >>> d = vlogscope.diagnose([
    ...     "INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0",
    ...     "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"])
    >>> d.facts.value("vllm_version"), str(d.verdict)
    ('0.5.0', 'healthy')
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.source import Source, open_sources

__version__ = "0.1.0"
__all__ = ["Diagnosis", "Verdict", "__version__", "diagnose"]


def diagnose(path_or_lines: str | Path | Iterable[str]) -> Diagnosis:
    """Diagnose one log: a path (file, `.gz`, ...) or the log's lines as strings."""
    if isinstance(path_or_lines, str | Path):
        [source] = open_sources([str(path_or_lines)])
    else:
        data = "\n".join(line.rstrip("\n") for line in path_or_lines).encode()
        source = Source.from_stream("<lines>", io.BytesIO(data))
    return analyze(source)
