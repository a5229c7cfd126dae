"""Sample logs shipped with vlogscope, for a first run and for the docs.

Examples:
    >>> sample_path("kimi-k25-launch1").name
    'v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLES = {
    "kimi-k25-launch1": "v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log",
    "kimi-k25-launch2": "v0.16-kimi-k25-tp8-launch2-kv-auto-stops-mid-startup.log",
    "healthy": "v0.16-llama31-8b-healthy-startup.log",
}


def sample_path(name: str) -> Path:
    """Where the sample log `name` is installed."""
    return Path(str(resources.files(__name__))) / SAMPLES[name]
