"""Inputs: files, directories, compressed logs, stdin; bad input is an InputError."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from pathlib import Path

import pytest

from vlogscope.source import InputError, Source, open_sources

LOG = b"INFO 05-14 09:10:07 a.py:1] one\r\nsecond\nthird without newline"


def _texts(source: Source) -> list[str]:
    return [line.text for line in source.lines()]


@pytest.mark.parametrize(
    "compress",
    [lambda b: b, gzip.compress, bz2.compress, lzma.compress],
    ids=["plain", "gz", "bz2", "xz"],
)
def test_compressed_files_are_recognised_by_magic_bytes_not_names(
    tmp_path: Path, compress: object
) -> None:
    path = tmp_path / "pod-7"  # no suffix tells the format
    path.write_bytes(compress(LOG))  # type: ignore[operator]
    [source] = open_sources([str(path)])
    assert _texts(source) == ["INFO 05-14 09:10:07 a.py:1] one", "second", "third without newline"]


def test_stdin_dash_reads_the_given_stream() -> None:
    [source] = open_sources(["-"], stdin=io.BytesIO(gzip.compress(LOG)))
    assert source.name == "<stdin>"
    assert len(_texts(source)) == 3


def test_progress_bar_redraws_keep_the_last_state() -> None:
    data = b"Loading shards:   0% | 0/2\rLoading shards:  50% | 1/2\rLoading shards: 100% | 2/2\r\n"
    assert _texts(Source.from_stream("x", io.BytesIO(data))) == ["Loading shards: 100% | 2/2"]


def test_invalid_utf8_is_replaced_not_rejected() -> None:
    assert _texts(Source.from_stream("x", io.BytesIO(b"a\xff\xfeb\n"))) == ["a\ufffd\ufffdb"]


def test_directory_contributes_its_log_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.log").write_bytes(b"x\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.log.1.gz").write_bytes(gzip.compress(b"y\n"))
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    names = [Path(s.name).name for s in open_sources([str(tmp_path)])]
    assert names == ["b.log", "a.log.1.gz"]


def test_missing_path_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no such file"):
        open_sources(["/definitely/not/here.log"])


def test_directory_without_logs_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(InputError, match="holds no log files"):
        open_sources([str(tmp_path)])


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(LOG * 100)[:40])
    [source] = open_sources([str(path)])
    with pytest.raises(InputError, match="cannot read"):
        _texts(source)


def test_a_prefixed_progress_bar_keeps_its_prefix_and_stays_one_line() -> None:
    """Ray prints the process prefix, then the child's line with its `\\r` redraws."""
    bars = (
        b"\x1b[36m(TaskRunner pid=38606)\x1b[0m \rGenerating train split: 0 examples [00:00, ? "
        b"examples/s]\rGenerating train split: 72123 examples [00:00, 1556211.80 examples/s]\n"
        b"(WorkerDict pid=39285) \rCapturing CUDA graphs:   0%|     | 0/67 [00:00<?, ?it/s]\n"
    )
    assert _texts(Source.from_stream("x", io.BytesIO(bars))) == [
        "\x1b[36m(TaskRunner pid=38606)\x1b[0m Generating train split: 72123 examples "
        "[00:00, 1556211.80 examples/s]",
        "(WorkerDict pid=39285) Capturing CUDA graphs:   0%|     | 0/67 [00:00<?, ?it/s]",
    ]


def test_cr_only_line_ends_still_split_into_lines() -> None:
    data = b"first line\rsecond line\rthird line\n"
    assert _texts(Source.from_stream("x", io.BytesIO(data))) == [
        "first line",
        "second line",
        "third line",
    ]


def test_records_of_one_process_joined_by_carriage_returns_are_all_kept() -> None:
    """Alike starts (the same process prefix) do not make two records one redrawn bar."""
    h = "(APIServer pid=7) ERROR 08-22 21:36:14 [serving_chat.py:250] "
    data = f"{h}Error in preprocessing prompt inputs\r{h}Traceback (most recent call last):\n"
    assert _texts(Source.from_stream("x", io.BytesIO(data.encode()))) == [
        f"{h}Error in preprocessing prompt inputs",
        f"{h}Traceback (most recent call last):",
    ]


def test_a_carriage_return_in_caret_notation_ends_a_line() -> None:
    """A paste through `cat -v` or a pager shows `\\r` as `^M`; a regular expression
    that a message quotes (`^Model`) keeps its caret."""
    h = "^[[1;36m(APIServer pid=7)^[[0;0m ERROR 08-22 21:36:14 [serving_chat.py:250] "
    data = f"{h}Error in preprocessing prompt inputs^M{h}Traceback (most recent call last):^M\n"
    data += "WARNING 08-22 21:36:15 [registry.py:1] no file matches ^Model.*\n"
    assert _texts(Source.from_stream("x", io.BytesIO(data.encode()))) == [
        f"{h}Error in preprocessing prompt inputs",
        f"{h}Traceback (most recent call last):",
        "WARNING 08-22 21:36:15 [registry.py:1] no file matches ^Model.*",
    ]
