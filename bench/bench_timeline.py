"""Timeline frame time at 5M events in a 200×50 view (a benchmark, not a timed test).

Measures, with synthetic lanes (tui_prof.tui.view.lanes.synthetic_model):
  * bin + frame build (``build_frame``) for a new viewport, over 30 zoom steps;
  * the full widget path: every ``render_line`` of a 200×50 Timeline for a new viewport;
  * a repaint of an unchanged viewport (frame cache hit).
Target from issue 5: <= 16 ms per new frame. Run: python bench/bench_timeline.py [events] [lanes]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from tui_prof.tui.view.lanes import synthetic_model
from tui_prof.tui.widgets.timeline import Timeline, build_frame

WIDTH, HEIGHT = 200, 50


def views(span: int, steps: int = 30):
    """Zoom from the whole run towards its middle, one viewport per step."""
    out = []
    for i in range(steps):
        width = max(span >> i, 10_000)
        mid = span // 2 + i * 1_000
        out.append((mid - width // 2, mid - width // 2 + width))
    return out


def bench_frames(model) -> list[float]:
    times = []
    for t0, t1 in views(model.span):
        start = time.perf_counter()
        build_frame(model, t0, t1, WIDTH - 19)
        times.append((time.perf_counter() - start) * 1000)
    return times


async def bench_widget(model) -> tuple[list[float], list[float]]:
    from textual.app import App

    class Bench(App):
        def compose(self):
            yield Timeline(model, id="tl")

    app = Bench()
    new, cached = [], []
    async with app.run_test(size=(WIDTH, HEIGHT + 1)) as pilot:
        await pilot.pause()
        tl = app.query_one(Timeline)
        tl.styles.height = HEIGHT
        await pilot.pause()
        for t0, t1 in views(model.span):
            tl.t0, tl.t1 = t0, t1
            start = time.perf_counter()
            for y in range(HEIGHT):
                tl.render_line(y)
            new.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            for y in range(HEIGHT):
                tl.render_line(y)
            cached.append((time.perf_counter() - start) * 1000)
    return new, cached


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
    lanes = int(sys.argv[2]) if len(sys.argv) > 2 else 48
    start = time.perf_counter()
    model = synthetic_model(events, lanes)
    print(f"model: {events:,} events on {lanes} lanes, built in {time.perf_counter() - start:.2f}s")
    frames = bench_frames(model)
    new, cached = asyncio.run(bench_widget(model))
    for label, values in (("bin + frame build", frames), ("render_line × 50, new view", new), ("render_line × 50, same view", cached)):
        print(f"{label:30s} median {statistics.median(values):6.2f} ms   max {max(values):6.2f} ms")


if __name__ == "__main__":
    main()
