"""Times without a year: vLLM prints `MM-DD HH:MM:SS` and nothing more.

Every vLLM version formats time as `%m-%d %H:%M:%S` (local time, no year, no
milliseconds), so a timeline needs the year from elsewhere: the user's
`--year`, else the year the file was last written (a log is written while
the server runs), else this year.  A log that runs over New Year shows the
month going from 12 back to 01; from there on, the year is one more.
Lines are ordered only to the second; ties keep input order.

Examples:
    >>> clock = Clock(2025)
    >>> [str(clock.read(t)) for t in ("12-31 23:59:58", "01-01 00:00:03")]
    ['2025-12-31 23:59:58', '2026-01-01 00:00:03']
    >>> clock.read("02-30 10:00:00") is None
    True
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def year_of(path: str | Path | None, explicit: int | None = None) -> int:
    """The year a log's first line most likely belongs to."""
    if explicit is not None:
        return explicit
    if path is not None:
        try:
            mtime = Path(path).stat().st_mtime
        except OSError:
            pass
        else:
            return dt.datetime.fromtimestamp(mtime).year
    return dt.date.today().year


class Clock:
    """Turns `MM-DD HH:MM:SS` into datetimes, moving to the next year at a rollover.

    Reading must be in input order.  When the year comes from the file's
    mtime it is the year of the *last* line: subtract `rollovers(...)` first.
    """

    def __init__(self, year: int) -> None:
        self.year = year
        self._last_month = 0

    def read(self, stamp: str | None) -> dt.datetime | None:
        if not stamp:
            return None
        try:
            month, day = int(stamp[0:2]), int(stamp[3:5])
            hour, minute, second = int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14])
        except ValueError:
            return None
        if month < self._last_month - 6:  # December -> January, not a shuffled line
            self.year += 1
        try:
            moment = dt.datetime(self.year, month, day, hour, minute, second)
        except ValueError:
            return None
        self._last_month = month
        return moment


def rollovers(stamps: list[str | None]) -> int:
    """How many New Years a sequence of stamps crosses (to date a log by its end)."""
    clock = Clock(2000)  # a leap year, so that 02-29 parses
    for stamp in stamps:
        clock.read(stamp)
    return clock.year - 2000


# A stamp's own shape; what follows (a fraction of a second, text) is ignored.
_STAMP_SHAPE = r"^[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
_STAMP_FORMAT = "%m-%d %H:%M:%S"


def stamp_times(stamps: pd.Series, last_year: int) -> pd.Series:
    """`Clock` over a whole column at once: the same datetimes, in C loops.

    A million-line log cannot afford a Python call per stamp.  Like `Clock`,
    a month more than six below the last valid one is a New Year, and a stamp
    that is not a date gives NaT.  `last_year` is the year of the last stamp.
    A log has far fewer distinct seconds than lines, so each distinct stamp is
    parsed once (per year) and the rows pick theirs.  Arrow's strptime rolls
    `02-30` over into March, so a parsed time counts only if it prints back as
    the stamp it came from.
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pa.array(stamps, from_pandas=True).cast(pa.large_string())
    distinct = pc.unique(text).drop_null()
    rows = pc.index_in(text, value_set=distinct)  # null where the stamp is null
    shaped = pc.match_substring_regex(distinct, _STAMP_SHAPE)
    head = pc.utf8_slice_codeunits(pc.if_else(shaped, distinct, pa.scalar(None, text.type)), 0, 14)
    dash = pa.scalar("-", pa.large_string())

    def in_year(year: int) -> Any:
        """Each distinct stamp as a time in `year` (null if not a date then)."""
        joined = pc.binary_join_element_wise(pa.scalar(str(year), pa.large_string()), head, dash)
        moment = pc.strptime(joined, format="%Y-" + _STAMP_FORMAT, unit="s", error_is_null=True)
        printed_back = pc.equal(pc.strftime(moment, format=_STAMP_FORMAT), head)
        return pc.if_else(printed_back, moment, pa.scalar(None, moment.type))

    def per_row(values: Any) -> Any:
        return values.take(rows).to_numpy(zero_copy_only=False)

    valid = per_row(pc.is_valid(in_year(2000))).astype(bool)  # a leap year; null stamp: False
    month = pd.Series(per_row(pc.utf8_slice_codeunits(head, 0, 2).cast(pa.float64())))
    last_valid_month = month.where(valid).ffill().shift(1).fillna(0)
    new_year = (month < last_valid_month - 6).to_numpy().astype("int64")
    years = last_year - int(new_year.sum()) + np.cumsum(new_year)
    moments = np.full(len(years), np.datetime64("NaT"), dtype="datetime64[us]")
    for year in np.unique(years):
        in_this_year = years == year
        times = per_row(in_year(int(year)).cast(pa.timestamp("us")))
        moments[in_this_year] = times[in_this_year]
    return pd.Series(moments, index=stamps.index, name=stamps.name)
