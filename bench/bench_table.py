"""Sort and filter of a 1M-row dispatch table (a benchmark, not a timed test).

Target from issue 5: <= 100 ms for a sort or a filter of 1M rows. Measures, on a
synthetic dispatch table shaped like the TUI's dispatch list (int64 ns start/duration,
small-int agent/queue, resources, a categorical kernel name with 5,000 distinct names):
  * the first sort of each column (order computed and cached) and a repeat sort;
  * a regex filter on the names, then a sort under that filter, then clearing it;
  * the widget path: sort key handling + render_line of a 160×50 page (key -> repaint).
Run: python bench/bench_table.py [rows]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import numpy as np
import pandas as pd

from tui_prof.tui.screens.drilldown import DISPATCH_COLUMNS
from tui_prof.tui.widgets.table import TableModel, TableView

WIDTH, HEIGHT = 160, 50


def dispatch_frame(rows: int, names: int = 5_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cats = [f"void gemm_kernel_{i}<float, {i % 7}, {i % 13}>(float const*, float*, int)" for i in range(names)]
    return pd.DataFrame(
        {
            "name": pd.Categorical.from_codes(rng.integers(0, names, rows), cats),
            "t": np.sort(rng.integers(0, 60 * 10**9, rows)),
            "dur": rng.integers(1_000, 5_000_000, rows),
            "agent": rng.integers(1, 9, rows),
            "queue": rng.integers(0, 4, rows),
            "stream": np.full(rows, -1),
            "grid_x": rng.choice([256, 1024, 4096, 65536], rows),
            "wg_x": rng.choice([64, 128, 256], rows),
            "lds_bytes": rng.choice([0, 16384, 32768], rows),
            "arch_vgpr": rng.integers(16, 256, rows),
            "sgpr": rng.integers(16, 104, rows),
            "correlation_id": np.arange(rows),
            "dispatch_id": np.arange(rows),
        }
    )


def ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def bench_model(frame: pd.DataFrame) -> list[tuple[str, list[float]]]:
    model = TableModel(frame, text_key="name")
    columns = [c.key for c in DISPATCH_COLUMNS]
    first, repeat, flip = [], [], []
    for col in columns:
        first.append(ms(lambda col=col: model.set_sort(col, True)))
        flip.append(ms(lambda col=col: model.set_sort(col, False)))
    for col in columns:
        repeat.append(ms(lambda col=col: model.set_sort(col, True)))
    patterns = ["gemm_kernel_1\\d\\d<", "float, 3", "^void gemm_kernel_42<", "int\\)$"]
    filt, filt_sort, clear = [], [], []
    for pattern in patterns:
        filt.append(ms(lambda pattern=pattern: model.set_filter(pattern)))
        filt_sort.append(ms(lambda: model.set_sort("dur", False)))
        clear.append(ms(lambda: model.set_filter("")))
    return [
        ("first sort of a column (desc + asc each)", first + flip),
        ("repeat sort (cached order)", repeat),
        ("regex filter", filt),
        ("sort under a filter", filt_sort),
        ("clear filter", clear),
    ]


async def bench_widget(frame: pd.DataFrame) -> list[float]:
    from textual.app import App

    class Bench(App):
        def compose(self):
            yield TableView(DISPATCH_COLUMNS, id="t")

    app = Bench()
    out = []
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        table = app.query_one(TableView)
        table.set_data(frame, text_key="name")
        await pilot.pause()
        for col in range(len(DISPATCH_COLUMNS)):
            table.col_cursor = col

            def key_and_paint():
                table.action_sort()
                for y in range(HEIGHT):
                    table.render_line(y)

            out.append(ms(key_and_paint))
    return out


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    start = time.perf_counter()
    frame = dispatch_frame(rows)
    print(f"table: {rows:,} rows, built in {time.perf_counter() - start:.2f}s")
    results = bench_model(frame)
    results.append(("key 's' + repaint 160×50 (widget)", asyncio.run(bench_widget(frame))))
    for label, values in results:
        print(f"{label:42s} median {statistics.median(values):7.2f} ms   max {max(values):7.2f} ms")


if __name__ == "__main__":
    main()
