"""Issue 34: the dispatch list speaks the platform's words. On an NVIDIA run (Kineto from
CUPTI) it has no LDS/VGPR/SGPR/queue/dispatch-id columns (AMD-only, never recorded there)
but the grid in blocks, the block size, shared memory per block and registers per thread,
each equal to the trace's own kernel args; an AMD run keeps LDS, VGPR and SGPR."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tui_harness import drive, press

from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.widgets.table import TableView

KINETO = Path(__file__).parent / "data" / "kineto"
NVIDIA = KINETO / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
AMD = KINETO / "mi300__gaunernst_bert-small-uncased__1016001.json.gz"


def kernel_args(path: Path) -> dict[int, dict]:
    """Each kernel event's args by correlation id, straight from the JSON."""
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    return {e["args"]["correlation"]: e["args"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"}


def _dispatch_table(path: Path) -> tuple[list[str], object]:
    out: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "enter")  # the top hotspot's dispatches
        assert isinstance(app.screen, DispatchesScreen)
        table = app.screen.query_one("#dispatches", TableView)
        out["titles"] = [c.title for c in table.columns]
        out["frame"] = table.model.frame
        out["header"] = table.render_line(0).text

    drive(TuiProfApp(path), flow, size=(200, 40))
    return out["titles"], out


def test_nvidia_dispatch_list_in_cuda_words():
    titles, out = _dispatch_table(NVIDIA)
    assert titles == ["start", "duration", "device", "stream", "grid", "block", "shared mem", "regs/thread", "corr id"]
    for amd_only in ("LDS", "vgpr", "sgpr", "queue", "dispatch", "wg x"):
        assert amd_only not in titles and amd_only not in out["header"]
    frame, args = out["frame"], kernel_args(NVIDIA)
    assert len(frame)
    for row in frame.itertuples():
        a = args[int(row.correlation_id)]
        assert row.grid_blocks == "x".join(str(v) for v in a["grid"])  # CUPTI's grid is in blocks, all three dimensions
        assert row.block_dims == "x".join(str(v) for v in a["block"])
        assert int(row.lds_bytes) == a["shared memory"]
        assert int(row.arch_vgpr) == a["registers per thread"]


def test_amd_dispatch_list_keeps_lds_and_registers():
    titles, out = _dispatch_table(AMD)
    assert titles[:3] == ["start", "duration", "agent"]
    for amd in ("LDS", "vgpr", "sgpr", "wg x", "grid x"):
        assert amd in titles
    assert "regs/thread" not in titles and "grid_blocks" not in out["frame"].columns


def test_dispatch_detail_in_the_platform_s_words():
    """The detail of one dispatch: CUDA fields on NVIDIA (no queue, scratch, LDS, VGPR or
    dispatch id), rocprofv3's on AMD; the NVIDIA values are the kernel's args."""
    from tui_prof.loaders import load_path
    from tui_prof.tui.view.dispatch import dispatch_detail
    from tui_prof.tui.view.runview import build_view

    view = build_view(load_path(NVIDIA, use_cache=False))
    row = view.kernels.iloc[0]
    pairs = dict(dispatch_detail(view, row).pairs)
    a = kernel_args(NVIDIA)[int(row["correlation_id"])]
    assert pairs["stream"] == str(a["stream"]) and pairs["correlation id"] == str(a["correlation"])
    assert pairs["block"] == " × ".join(str(v) for v in a["block"]) and pairs["registers / thread"] == str(a["registers per thread"])
    assert pairs["device"].startswith(f"{a['device']} NVIDIA")
    for amd_only in ("agent", "queue / stream", "workgroup", "LDS / workgroup", "scratch / item", "SGPR", "correlation / dispatch"):
        assert amd_only not in pairs
    amd = build_view(load_path(AMD, use_cache=False))
    amd_pairs = dict(dispatch_detail(amd, amd.kernels.iloc[0]).pairs)
    for label in ("agent", "queue / stream", "workgroup", "LDS / workgroup", "arch / accum VGPR", "SGPR", "correlation / dispatch"):
        assert label in amd_pairs


def test_nvidia_grid_and_block_sort_by_size_and_show_whole():
    """The grid and block cells are XxYxZ strings, yet sorting orders them by the number of
    blocks (threads), not by text: 8x2x1 (16 blocks) after 9x1x1 (9), "-" (unknown) first."""
    import pandas as pd

    from tui_prof.tui.view.dispatch import cuda_dispatch_rows
    from tui_prof.tui.widgets.table import TableModel

    rows = pd.DataFrame(
        {"grid_x": [2304, 2048, 0, 16384], "grid_y": [1, 2, 1, 1], "grid_z": [1, 1, 1, 1], "wg_x": [256, 256, 64, 1024], "wg_y": [1] * 4, "wg_z": [1] * 4}
    )
    out = cuda_dispatch_rows(rows)
    assert out["grid_blocks"].tolist() == ["9x1x1", "8x2x1", "-", "16x1x1"]  # work-items / block per dimension
    model = TableModel(out)
    assert [out["grid_blocks"][i] for i in model.sorted_rows("grid_blocks", False)] == ["-", "9x1x1", "8x2x1", "16x1x1"]
    assert [out["block_dims"][i] for i in model.sorted_rows("block_dims", True)] == ["1024x1x1", "256x1x1", "256x1x1", "64x1x1"]
