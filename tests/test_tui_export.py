"""The TUI's export action (key e, command palette): the run, or the timeline's window from
the timeline tab, written outside the run directory in a thread worker, and where it went said."""

from __future__ import annotations

import gzip
import json

from synthetic import synthetic_runset
from tui_harness import drive, idle, press

from tui_prof.tui.app import TuiProfApp


def _trace(path):
    with gzip.open(path, "rt", encoding="ascii") as fh:
        return json.load(fh)


def test_export_key_writes_the_run_then_the_timeline_window(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runset, synth = synthetic_runset("per_launch")
    seen: list[str] = []

    async def flow(app, pilot):
        monkeypatch.setattr(app.main, "notify", lambda text, **kw: seen.append(str(text)))
        await press(app, pilot, "1", "e")  # hotspots tab: the whole run
        whole = tmp_path / f"{runset.name}.tuiprof.json.gz"
        doc = _trace(whole)
        assert doc["tuiprof_export"]["window_ns"] is None
        assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel") == synth.expected.dispatches
        assert seen[-1].startswith(f"{len(doc['traceEvents'])} trace events written to {whole}")
        await press(app, pilot, "2", "w", "w", "e")  # timeline tab, zoomed in: its window
        timeline = app.main.timeline.timeline
        window = [app.main.view.origin + timeline.t0, app.main.view.origin + timeline.t1]
        part = tmp_path / f"{runset.name}.window.tuiprof.json.gz"
        doc = _trace(part)
        assert doc["tuiprof_export"]["window_ns"] == window
        k = runset.runs[0].kernels
        inside = int(((k["start"] < window[1]) & (k["end"] > window[0])).sum())
        assert 0 < inside < synth.expected.dispatches
        assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel") == inside
        await app.main.run_action("export('parquet')")
        await idle(app, pilot)
        assert (tmp_path / f"{runset.name}.tuiprof-parquet" / "kernels.parquet").is_file()
        assert seen[-1] == f"Parquet tables written to {tmp_path / (runset.name + '.tuiprof-parquet')}"

    drive(TuiProfApp(runset), flow)


def test_export_from_inside_the_run_directory_goes_to_tmpdir(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    elsewhere = tmp_path / "tmp"
    elsewhere.mkdir()
    monkeypatch.chdir(run_dir)
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    runset, _ = synthetic_runset("per_launch")
    runset.root = str(run_dir)

    async def flow(app, pilot):
        await press(app, pilot, "1", "e")
        assert list(run_dir.iterdir()) == []
        assert [p.name for p in elsewhere.iterdir()] == ["run.tuiprof.json.gz"]

    drive(TuiProfApp(runset), flow)


def test_export_reuses_the_summary_on_screen(tmp_path, monkeypatch):
    """The export writes the findings the findings pane shows, from the summary the panes
    were built from: the analysis does not run again (issue 29)."""
    from tui_prof.export import common, parquet, perfetto

    monkeypatch.chdir(tmp_path)
    runset, _ = synthetic_runset("per_launch")
    calls: list[str] = []
    original = common.analyse

    def counted(*args, **kwargs):
        calls.append("analyse")
        return original(*args, **kwargs)

    for module in (common, parquet, perfetto):
        monkeypatch.setattr(module, "analyse", counted, raising=False)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "1", "e")
        await app.main.run_action("export('parquet')")
        await idle(app, pilot)
        seen["shown"] = [f["code"] for f in app.main.findings.findings]

    drive(TuiProfApp(runset), flow)
    doc = _trace(tmp_path / f"{runset.name}.tuiprof.json.gz")
    exported = [e["args"]["code"] for e in doc["traceEvents"] if e.get("cat") == "tuiprof_finding"]
    import pandas as pd

    table = pd.read_parquet(tmp_path / f"{runset.name}.tuiprof-parquet" / "findings.parquet")
    assert calls == []
    assert seen["shown"] and exported == seen["shown"] == table["code"].astype(str).tolist()
