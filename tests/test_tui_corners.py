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
        term.wait_for(b"sort total_ns")  # the run is loaded: the hotspot table's status
        term.wait_quiet(0.5)
        for key, drawn in ((b"2", b"host rows"), (b"4", b"gpu-idle"), (b"1", b"sort total_ns"), (b"\r", b"dispatches")):
            mark = len(term.output())
            term.key(key, 0.2)
            term.wait_for(drawn, after=mark)  # the key's screen was drawn
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


def _top_long_kernel(path: Path, longer_than: int = 80) -> str:
    """Of the kernels whose name is longer than ``longer_than``, the one with the largest
    summed duration, from the JSON."""
    import gzip
    import json

    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    totals: dict[str, int] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0) + round(e["dur"] * 1000)
    return max((n for n in totals if len(n) > longer_than), key=totals.__getitem__)


def _fullname_text(app) -> str:
    """The names the full-name screen draws, their folded lines joined."""
    from tui_prof.tui.screens.fullname import FullNameScreen

    assert isinstance(app.screen, FullNameScreen)
    return "".join(str(w.render()) for w in app.screen.query(".fullname-name"))


def test_full_name_key_on_hotspots_dispatches_and_detail():
    """Item 8: ``F`` shows the whole kernel name (found in the JSON) on the hotspot table,
    the dispatch list (whose title cuts it with an ellipsis at 80 columns) and the
    dispatch detail; ``c`` copies it as plain text; Esc closes."""
    from tui_prof.tui.screens.detail import DispatchDetailScreen
    from tui_prof.tui.screens.drilldown import DispatchesScreen
    from tui_prof.tui.screens.fullname import FullNameScreen

    name = _top_long_kernel(DECODE_EAGER)  # a C++ template name, longer than the screen

    async def flow(app, pilot):
        table = app.main.query_one("#hotspot-table")
        for _ in range(table.row_count):
            if str(table.current_row["name"]) == name:
                break
            await press(app, pilot, "j")
        await press(app, pilot, "F")
        assert (name in _fullname_text(app)) and any(n == name for _, n in app.screen.names)
        await press(app, pilot, "c")
        assert app.clipboard.splitlines()[0] == name
        await press(app, pilot, "escape")
        await press(app, pilot, "enter")
        assert isinstance(app.screen, DispatchesScreen)
        title = next(line for line in screen_text(app).splitlines() if line.strip().startswith("name: "))
        assert title.rstrip().endswith("…") and len(title.rstrip()) <= 80
        await press(app, pilot, "F")
        assert isinstance(app.screen, FullNameScreen) and app.screen.names[0] == ("name", name)
        await press(app, pilot, "escape", "enter")
        assert isinstance(app.screen, DispatchDetailScreen)
        await press(app, pilot, "F")
        assert app.screen.names[0] == ("name", name) and name in _fullname_text(app)
        await press(app, pilot, "escape")
        assert isinstance(app.screen, DispatchDetailScreen)

    drive(TuiProfApp(DECODE_EAGER, use_cache=False), flow, size=(80, 24))


def test_full_name_of_a_hostile_name_is_sanitised():
    """Item 8: a name with an OSC 52 clipboard sequence, a bidi override and markup is shown
    and copied with its controls made visible (render.safe.safe_text), never as they are."""
    from test_safe_output import _run_named

    from tui_prof.render.safe import safe_text

    name = "\x1b]52;c;ZXZpbA==\x07kern\u202e[link=file:///etc/passwd]x[/link]" + "_t" * 60

    async def flow(app, pilot):
        table = app.main.query_one("#hotspot-table")
        for _ in range(table.row_count):
            if str(table.current_row["name"]) == name:
                break
            await press(app, pilot, "j")
        await press(app, pilot, "F")
        shown = _fullname_text(app)
        assert safe_text(name) in shown and "\x1b" not in shown and "\u202e" not in shown
        await press(app, pilot, "c")
        assert app.clipboard.splitlines()[0] == safe_text(name)
        assert "\x1b" not in app.clipboard and "\u202e" not in app.clipboard

    drive(TuiProfApp(_run_named(name)), flow, size=(100, 30))


def test_findings_cut_names_with_an_ellipsis():
    """Item 8: a finding's message cuts a long kernel name with "…" (its numbers keep it whole)."""
    from tui_prof.analysis.findings import clip_name

    long = "void ck_tile::kentry<1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVS<float, 128>>>" * 2
    assert clip_name(long, 60) == long[:59] + "…" and len(clip_name(long, 60)) == 60
    assert clip_name("short", 60) == "short"


DECODE_GRAPH = DATA / "kineto" / "h200" / "decode_graph.pt.trace.json.gz"


def _kernel_events(path: Path) -> list[dict]:
    import gzip
    import json

    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def _diff_drive(flow, size):
    import asyncio

    from tui_harness import idle

    from tui_prof.tui.diff.app import DiffApp

    async def main():
        app = DiffApp(DECODE_EAGER, DECODE_GRAPH, use_cache=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(500):
                await idle(app, pilot)
                if getattr(app.screen, "result", None) is not None:
                    break
            await flow(app, pilot)

    asyncio.run(main())


def _parse_at(text: str) -> float:
    """ns of a time as render.fmt writes it ("2.520113 s", "459.0 µs")."""
    value, unit = text.split()
    return float(value) * {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_diff_pair_screen_80x24_and_start_precision():
    """Item 13: at 80x24 each side's statistics stay in its half (A's line no longer runs on
    into B's), with A's and B's dispatch counts as the JSON has them; the start column tells
    every dispatch apart, as the main dispatch list does."""
    from tui_prof.tui.diff.screens import PairScreen

    async def flow(app, pilot):
        await press(app, pilot, "2", "enter")
        assert isinstance(app.screen, PairScreen)
        key = app.screen.key
        await press(app, pilot, "F")  # the pair's whole name, then back
        assert app.screen.names[0] == ("name", key)
        await press(app, pilot, "escape")
        assert isinstance(app.screen, PairScreen)
        counts = [sum(e["name"] == key for e in _kernel_events(p)) for p in (DECODE_EAGER, DECODE_GRAPH)]
        lines = screen_text(app).splitlines()
        for tag, count in zip("AB", counts):
            line = next(line for line in lines if f"{tag}: " in line and "dispatches" in line)
            assert f"{tag}: {count} dispatches · total" in line
            assert ("B: " not in line) if tag == "A" else ("A: " not in line)  # one side per line
        for side in ("a", "b"):
            stats = app.screen.query_one(f"#pair-{side}-stats")
            assert stats.size.height == 3 and all(len(t) <= stats.size.width for t in str(stats.render()).splitlines())
            table = app.screen.query_one(f"#pair-{side}")
            shown = [table._row_text(int(r), [(table.columns[0], 12)], 12).strip() for r in table.model.order]
            assert len(set(shown)) == len(shown)  # every start apart
            starts = table.model.frame["t"].to_numpy()[table.model.order]
            assert all(abs(_parse_at(s) - t) <= 0.05 * float(table.model.frame["dur"].min()) + 1 for s, t in zip(shown, starts))

    _diff_drive(flow, (80, 24))


def test_diff_timeline_status_ends_differ_when_zoomed():
    """Item 13: zoomed to a few µs, the diff's timeline status writes the view's two ends
    with the digits that tell them apart (as the main timeline's status), not "37.7 ms–37.7 ms"."""

    async def flow(app, pilot):
        await press(app, pilot, "3")
        await press(app, pilot, *["w"] * 16)
        tl = app.screen.query_one("#tl-a")
        status = str(app.screen.query_one("#tl-status").render())
        ends = status.split("view ", 1)[1].split(" (", 1)[0].split("–")
        assert ends[0] != ends[1], status
        cell = (tl.t1 - tl.t0) / tl.cells
        assert abs(_parse_at(ends[0]) - tl.t0) <= cell and abs(_parse_at(ends[1]) - tl.t1) <= cell

    _diff_drive(flow, (120, 35))


def test_dispatch_detail_start_to_a_tenth_of_its_duration():
    """Item 13: the dispatch detail's start has the digits of a tenth of the dispatch's
    duration (2.520113 s, not 2.52 s)."""
    from tui_prof.tui.screens.detail import DispatchDetailScreen

    async def flow(app, pilot):
        await press(app, pilot, "enter", "G", "enter")
        screen = app.screen
        assert isinstance(screen, DispatchDetailScreen) and screen.detail is not None
        start = dict(screen.detail.pairs)["start"]
        t, dur = int(screen.row["t"]), int(screen.row["dur"])
        assert abs(_parse_at(start) - t) <= max(dur / 10, 1)

    drive(TuiProfApp(DECODE_EAGER, use_cache=False), flow, size=(120, 35))


def test_stats_only_measurement_line_says_what_its_pointer_means():
    """Item 13: the stats-only measurement line points at the timeline tab in words, not "(2)"."""
    saltfish = DATA / "legacy_rocprof" / "saltfish"

    async def flow(app, pilot):
        measure = str(app.main.query_one("#measure").render())
        assert "need a trace" in measure and "(2)" not in measure and "tab 2" in measure

    drive(TuiProfApp(saltfish, use_cache=False), flow, size=(120, 35))


def test_multi_process_run_opens_on_hotspots():
    """Item 13: a run of two ranks (hta-ranks) shows its rank rows while it loads, then
    opens on its hotspots, as one process does, when no key was pressed meanwhile; the
    ranks stay on tab 7."""
    ranks_dir = DATA / "kineto" / "ranks"

    async def flow(app, pilot):
        tabs = app.main.query_one("#tabs")
        assert len(app.main.view.runset.runs) == 2
        assert tabs.active == "hotspots" and app.main.hotspots.table.has_focus
        await press(app, pilot, "7")
        assert tabs.active == "ranks" and app.main.query_one("#ranks-table").row_count == 2

    drive(TuiProfApp(ranks_dir, use_cache=False), flow, size=(120, 35))
