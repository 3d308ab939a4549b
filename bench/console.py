"""The console every benchmark report prints to.

rich sizes a console to the terminal, and to 80 columns when the output is a pipe or a file, which
wraps the comparison tables into unreadable cells in CI logs and in `tique bench compare > out.txt`.
Off a terminal the reports use a width that fits their widest table; COLUMNS still wins when set.
"""

from __future__ import annotations

import os
import sys
from typing import Any

REPORT_WIDTH_OFF_TERMINAL = 140


def report_console() -> Any:
    from rich.console import Console

    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=REPORT_WIDTH_OFF_TERMINAL)
