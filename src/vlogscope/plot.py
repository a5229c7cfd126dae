"""Pictures of a serving run: throughput, queues and KV-cache usage over time.

Matplotlib is an optional extra (`pip install 'vlogscope[plot]'`): the
command-line tool and the library work without it, and asking for a picture
without it is a clear error, not a traceback.  Findings are drawn as
vertical lines where they happened, so a throughput collapse can be read
against the preemption warning that explains it.

Examples:
    >>> sparkline([0, 1, 2, 3, 4, 5, 6, 7])
    '▁▂▃▄▅▆▇█'
    >>> sparkline([])
    ''
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

_BARS = "▁▂▃▄▅▆▇█"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def sparkline(values: Sequence[float], width: int = 60) -> str:
    """A one-line chart for terminals: the series resampled to `width` bars."""
    clean = [float(v) for v in values if v == v]  # drop NaN
    if not clean:
        return ""
    if len(clean) > width:
        step = len(clean) / width
        clean = [max(clean[int(i * step) : int((i + 1) * step) or 1]) for i in range(width)]
    low, high = min(clean), max(clean)
    span = (high - low) or 1.0
    return "".join(_BARS[min(7, int((v - low) / span * 7.999))] for v in clean)


def plot_metrics(
    metrics: pd.DataFrame, marks: pd.DataFrame | None = None, path: Path | None = None
) -> Any:
    """Three stacked panels; `marks` has `time` and `label` columns (findings)."""
    try:
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("plots need matplotlib: pip install 'vlogscope[plot]'") from exc
    panels = (
        ("tokens/s", ["prompt_throughput", "generation_throughput"]),
        ("requests", ["running", "waiting", "swapped"]),
        ("KV cache %", ["gpu_kv_cache_usage", "cpu_kv_cache_usage", "prefix_cache_hit_rate"]),
    )
    figure, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(11, 7))
    for axis, (unit, columns) in zip(axes, panels, strict=True):
        shown = [c for c in columns if c in metrics and metrics[c].notna().any()]
        for column in shown:
            axis.plot(metrics.index, metrics[column], label=column.replace("_", " "))
        axis.set_ylabel(unit)
        if shown:
            axis.legend(loc="upper left", fontsize="small")
        if marks is not None:
            for _, mark in marks.dropna(subset=["time"]).iterrows():
                axis.axvline(mark["time"], color="red", linestyle="--", linewidth=0.8)
    if marks is not None:
        for _, mark in marks.dropna(subset=["time"]).iterrows():
            axes[0].annotate(
                str(mark["label"])[:40],
                (mark["time"], 1),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                fontsize="x-small",
                color="red",
            )
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=110)
        plt.close(figure)
    return figure
