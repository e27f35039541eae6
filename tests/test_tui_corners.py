"""TUI corners of issue 33: the gap's host-op table shows its rows (item 6), full names
behind one key (8), the steps table's widths (11), ASCII in every widget (12), the
timeline's host rows kept after ``t`` (10) and the diff TUI's header and precision (13)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
from test_tui_host import DECODE_EAGER, _independent_longest_gap_and_ops
from tui_harness import drive, press

from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.gap import GapScreen

DATA = Path(__file__).parent / "data"


def screen_text(app) -> str:
    """Every character of the app's current screen, from its SVG screenshot's text."""
    svg = app.export_screenshot()
    return "\n".join(html.unescape(m.group(1)).replace("\xa0", " ") for m in re.finditer(r"<text [^>]*>(.*?)</text>", svg))


def test_gap_host_ops_table_shows_its_rows():
    """Item 6: the ops overlapping decode_eager's longest gap (aten::argmax, found in the
    JSON independently) are drawn, not only listed in the table's frame."""
    gs, ge, ops = _independent_longest_gap_and_ops()

    async def flow(app, pilot):
        gaps = app.main.view.gaps
        index = int(np.flatnonzero(gaps["start"].to_numpy() == gs)[0])
        await press(app, pilot, "2")
        app.main.timeline.show_gap(index)
        await press(app, pilot, "enter")
        await press(app, pilot)
        assert isinstance(app.screen, GapScreen)
        table = app.screen.query_one("#gap-ops")
        assert table.row_count == len(ops) > 0
        assert table.size.height >= 1 + len(ops)  # the header and every row
        lines = screen_text(app).splitlines()
        for name in ops:
            short = name.split("::")[-1]
            assert any(short in line and "ms" in line for line in lines), (name, lines)

    drive(TuiProfApp(DECODE_EAGER, use_cache=False), flow, size=(120, 35))


RESNET = DATA / "kineto" / "mi300__resnet_act_checkpoint.json.gz"


def test_t_from_hotspots_keeps_host_rows_on_screen():
    """Item 10: ``t`` on the hotspots tab jumps to the kernel's lane while the timeline tab is
    hidden; once it is shown, the host and op rows above the GPU lanes are drawn (every
    lane fits at 80x24), not the lanes from the kernel's queue down."""

    async def flow(app, pilot):
        await press(app, pilot, "t")
        timeline = app.main.timeline.timeline
        labels = [lane.label for lane in timeline.model.lanes]
        assert labels[0].startswith("host ") and any(label.startswith("GPU") for label in labels)
        assert len(labels) < timeline.size.height  # they all fit
        assert labels[timeline.lane_cursor].startswith("GPU")  # the kernel's lane is selected
        assert timeline.lane_top == 0
        drawn = [line.strip() for line in screen_text(app).splitlines()]
        for label in labels:
            assert label in drawn, (label, drawn)

    drive(TuiProfApp(RESNET, use_cache=False), flow, size=(80, 24))


COLD_TRAIN = DATA / "kineto" / "h200_cold" / "cold_train_memory.pt.trace.json.gz"


def table_lines(table) -> list[str]:
    """The lines a TableView draws (header first), as the terminal gets them."""
    return ["".join(seg.text for seg in table.render_line(y)) for y in range(table.size.height)]


def test_steps_table_fits_120_columns_and_aligns_warmup():
    """Item 11: at 120 columns the steps table shows every column up to ``top kernel``
    (the step column keeps its width, the top kernel takes what is left), and the step
    names of warm-up rows (``w ``) line up with the others'."""
    from tui_prof.analysis.api import SummaryOptions, build_summary
    from tui_prof.loaders import load_path

    # the run's steps, from the analysis (10 train_step ranges, the first 2 warm-up)
    steps = build_summary(load_path(COLD_TRAIN, use_cache=False), SummaryOptions(logs=False))["steps"]
    warm = [s["label"] for s in steps["steps"] if s["warmup"]]
    steady = [s["label"] for s in steps["steps"] if not s["warmup"]]
    assert warm and steady

    async def flow(app, pilot):
        await press(app, pilot, "8")
        table = app.screen.query_one("#steps-table")
        lines = table_lines(table)
        header = lines[0]
        assert header.rstrip().endswith("top kernel")
        assert header.index("wall") < 30  # the step column is not padded to ~50 cells
        rows = lines[1 : 1 + table.row_count]
        column = {label: next(line.index(label) for line in rows if label in line) for label in warm + steady}
        assert len(set(column.values())) == 1, column  # one column for every step name
        assert all(line.rstrip() and len(line) == 120 for line in rows)
        kernel_col = header.index("top kernel")
        assert all(line[kernel_col:].strip() for line in rows)  # a top kernel in every row

    drive(TuiProfApp(COLD_TRAIN, use_cache=False), flow, size=(120, 35))


def test_ascii_cells_keeps_every_width():
    """Item 12: each character becomes ASCII text of its own width in cells, so a screen
    drawn for UTF-8 keeps its layout."""
    from rich.cells import cell_len

    from tui_prof.tui.glyphs import ascii_cells

    samples = ["3.20 µs ±4.1% · 2 ▼", "━━━╸━━╺ ▏^p", "café 漢字 x\u0301 \u202e 🔎", "▁▂▃▄▅▆▇█░▓▚≈ ⟷ → …"]
    for text in samples:
        out = ascii_cells(text)
        assert out.isascii() and cell_len(out) == cell_len(text), (text, out)
    assert ascii_cells("3.20 µs · x") == "3.20 us - x"
    assert ascii_cells("\x1b[1;31mplain\x1b[0m") == "\x1b[1;31mplain\x1b[0m"  # escape sequences pass


def test_ascii_terminal_gets_only_ascii_bytes(tmp_path):
    """Item 12: ``tuiprof open`` under LC_ALL=C on a pseudo-terminal: every byte it writes
    while it shows hotspots, the timeline (host rows, legend), findings and a drill-down
    and its footer is ASCII (the tab underline, borders, footer separator, µ and · too)."""
    from pty_harness import Terminal

    root = Path(__file__).resolve().parents[1]
    env = {"LC_ALL": "C", "LANG": "C", "LC_CTYPE": ""}
    term = Terminal(root, DECODE_EAGER, 100, 30, env=env)
    try:
        term.wait_quiet(1.5)
        for key in (b"2", b"4", b"8", b"1", b"\r"):
            term.key(key, 0.2)
            term.wait_quiet(0.3)
        out = term.output()
    finally:
        term.close()
    assert b"GPU0" in out and b"host T427" in out and b"host rows" in out  # the timeline and its legend were drawn
    assert b"us" in out  # a duration in microseconds, with µ as u
    bad = sorted({chr(b) for b in out if b > 127})
    assert out.isascii(), bad


def test_ascii_legend_gives_each_mark_one_meaning():
    """Item 12: the ASCII legend names the partly busy levels together and does not show a
    level mark again for the host rows (the same marks, told apart by colour only)."""
    from tui_prof.tui.glyphs import ASCII
    from tui_prof.tui.panes.timeline import ASCII_LEGEND, ASCII_RANK_LEGEND, legend

    for rows, ranks in ((ASCII_LEGEND, False), (ASCII_RANK_LEGEND, True)):
        text = legend(ascii=True, ranks=ranks).plain
        assert text.isascii()
        marks = [glyph for glyph, _, _ in rows if len(glyph) <= 4 and not glyph.isalpha()]
        seen = [c for mark in marks for c in mark]
        assert len(seen) == len(set(seen)), marks  # no mark in two entries
    # every level mark the timeline draws in ASCII is in the legend's levels or busy entry
    levels = {ASCII[g] for g in "▁▂▃▄▅▆▇█"}
    assert levels <= set(",:+*#")
