"""Long runs in the background say where they are: where stderr is not a terminal the progress bar
writes plain lines (rich draws nothing there), at most one per interval."""

from __future__ import annotations

import io
import time

from rich.console import Console

from verirag.cli._shared import LoggedProgress, progress


def _run(console: Console, log_every: float) -> str:
    with LoggedProgress(console=console, log_every=log_every, transient=True) as bar:
        task = bar.add_task("[bold]reading[/bold] the examples", total=4)
        for _ in range(4):
            time.sleep(0.15)
            bar.advance(task)
            bar.refresh()
    return console.file.getvalue()


def test_a_log_file_gets_plain_lines_of_the_tasks_state():
    text = _run(Console(file=io.StringIO(), force_terminal=False, width=100), log_every=0.1)
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines and all(line.startswith("reading the examples: ") for line in lines), text  # markup stripped
    assert any("/4 (" in line for line in lines)


def test_no_line_before_the_interval_and_none_on_a_terminal():
    assert _run(Console(file=io.StringIO(), force_terminal=False), log_every=3600).strip() == ""
    drawn = _run(Console(file=io.StringIO(), force_terminal=True), log_every=0.1)
    assert "reading the examples: " not in drawn  # a terminal gets the bar, not log lines


def test_every_command_gets_the_logging_bar():
    assert isinstance(progress(), LoggedProgress)
