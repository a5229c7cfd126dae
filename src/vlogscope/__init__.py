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

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlogscope.pipeline import Diagnosis, Verdict

if TYPE_CHECKING:
    from vlogscope.log import Log, read

__version__ = "0.1.0"
__all__ = ["Diagnosis", "Log", "Verdict", "__version__", "diagnose", "read"]


def __getattr__(name: str) -> Any:
    """`read` and `Log` bring in pandas; the command line does not pay for it unless used."""
    if name in ("read", "Log"):
        from vlogscope import log

        return getattr(log, name)
    raise AttributeError(f"module 'vlogscope' has no attribute {name!r}")


def diagnose(path_or_lines: str | Path | Iterable[str]) -> Diagnosis:
    """The one-call shortcut: diagnose a path or the log's lines as strings."""
    from vlogscope.log import read

    return read(path_or_lines).diagnosis
