"""Print the corpus accuracy tables at the end of every test run."""

from __future__ import annotations

from typing import Any

from support import ACCURACY_REPORT


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if ACCURACY_REPORT:
        terminalreporter.section("accuracy on ../shared/corpus*")
        for block in ACCURACY_REPORT:
            terminalreporter.write_line(block)
