"""Times with the digits the view needs (issue 20 item 8): dispatch start offsets that
tell the rows apart (the rocpd run's 150 dispatches 2.52 s in), and the timeline's view
ends at high zoom."""

from __future__ import annotations

from pathlib import Path

from tui_harness import drive, press

from tui_prof.render.fmt import fmt_at
from tui_prof.tui.screens.drilldown import DispatchesScreen

DB = Path(__file__).parent / "data" / "rocpd" / "28_results.db"


def test_fmt_at_digits_follow_the_resolution():
    assert fmt_at(2_520_113_456, 1_000) == "2.520113 s"
    assert fmt_at(2_520_113_456, 100_000) == "2.5201 s"
    assert fmt_at(40_512_345, 1_690) == "40.512 ms"
    assert fmt_at(0, 1_000) == "0 ns" and fmt_at(987, 1) == "987 ns"


def test_dispatch_starts_distinct_and_timeline_view_ends_distinct():
    from tui_prof.tui.app import TuiProfApp

    async def flow(app, pilot):
        await press(app, pilot, "enter")
        assert isinstance(app.screen, DispatchesScreen)
        table = app.screen.query_one("#dispatches")
        frame = table.model.frame
        starts = frame["t"].to_numpy()[table.model.order]
        assert len(starts) > 100 and starts.min() > 2_000_000_000  # 2.5 s into the run
        shown = [table.formatters["t"](t) for t in starts]
        assert len(set(shown)) == len(set(starts.tolist()))  # distinct starts read differently
        assert table.render_line(1).text.strip().startswith(shown[table.cursor])
        await press(app, pilot, "escape", "2")
        timeline = app.main.timeline.timeline
        timeline.set_window(40_512_000, 40_512_000 + 16_900)
        await press(app, pilot)
        status = app.main.timeline.query_one("#tl-status").render()
        text = str(getattr(status, "plain", status))
        head = text.split("(")[0]
        a, b = head.removeprefix("view ").strip().split("–")
        assert a != b, text

    drive(TuiProfApp(DB, use_cache=False), flow, size=(120, 30))


def test_kineto_grid_in_the_profilers_units():
    """decode_eager (CUPTI): the kernel event's grid [2, 64, 1] blocks of 384 threads is
    shown as recorded, beside 768 × 64 × 1 threads (the JSON read here)."""
    import gzip
    import json

    from tui_prof.loaders import load_path
    from tui_prof.tui.view.dispatch import dispatch_detail
    from tui_prof.tui.view.runview import build_view

    path = Path(__file__).parent / "data" / "kineto" / "h200" / "decode_eager.pt.trace.json.gz"
    with gzip.open(path, "rt") as f:
        first = next(e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel" and e["args"]["grid"] == [2, 64, 1])
    view = build_view(load_path(path, use_cache=False))
    k = view.kernels
    row = k[(k["t"] + view.origin == round(first["ts"] * 1000))].iloc[0]
    pairs = dict(dispatch_detail(view, row).pairs)
    assert pairs["grid (blocks)"] == "[2, 64, 1]"
    assert pairs["grid (threads)"] == f"{2 * first['args']['block'][0]} × 64 × 1" == "768 × 64 × 1"
    assert pairs["block"] == "384 × 1 × 1"
