"""The work the main screen hands to thread workers (issue 18, event-loop stalls at 64
ranks): the steps pane's rows and header and the hardware pane's agents are built off the
event loop and shown complete; the key footer's rebuild restyles none of its keys and shows
what Textual's footer shows; a table line's cells are read from column arrays with the
values ``iloc`` gives. Data: the stepped generator (known steps) and a generated run
of 4 ranks."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from textual.widgets._footer import FooterKey
from tui_harness import drive, idle, settle, text_of, until

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.synth.ranks import RankSpec, build_ranks
from tui_prof.synth.steps import StepSpec, build_steps
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes import hardware, steps
from tui_prof.tui.panes.steps import StepsPane
from tui_prof.tui.widgets.footer import KeyFooter
from tui_prof.tui.widgets.table import TableModel


def stepped_runset() -> tuple[RunSet, object]:
    run, answers = build_steps(StepSpec())
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    r = Run(meta=meta, agents=run.agents, kernels=run.kernels, api=run.api, copies=run.copies, markers=run.markers, allocations=run.allocations)
    return RunSet(root="synthetic_steps", runs=[r]), answers


def record_threads(monkeypatch, module, name: str, seen: list[int]) -> None:
    """Wrap ``module.name`` so each call records the thread it ran on."""
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        seen.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


async def open_steps(app, pilot, seen: dict) -> StepsPane:
    """Note the loop's thread, wait for the run, open the steps tab (key 8)."""
    seen["loop"] = threading.get_ident()
    await settle(app, pilot)
    await pilot.press("8")
    await idle(app, pilot)
    return app.screen.query_one(StepsPane)


def show_steps(app, pane: StepsPane, seen: dict) -> None:
    """What the steps pane shows: its rows' labels, its steps and its header."""
    seen["labels"] = pane.table.model.frame["label"].tolist()
    seen["steps"] = [s["label"] for s in pane.steps]
    seen["header"] = text_of(app, "#steps-header")


def test_steps_rows_and_header_are_built_off_the_loop_and_shown(monkeypatch):
    runset, ans = stepped_runset()
    frames: list[int] = []
    headers: list[int] = []
    record_threads(monkeypatch, steps, "steps_frame", frames)
    record_threads(monkeypatch, steps, "steps_header", headers)
    seen: dict = {}

    async def flow(app, pilot):
        pane = await open_steps(app, pilot, seen)
        show_steps(app, pane, seen)
        seen["tab"] = app.screen.query_one("#tabs").active

    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert seen["tab"] == "steps"
    assert seen["labels"] == ["w " + ans.labels[0]] + ans.labels[1:]
    assert seen["steps"] == ans.labels
    assert "train_step" in seen["header"] and "slow train_step [6]" in seen["header"]
    assert frames and headers  # built, and never on the event loop's thread
    assert seen["loop"] not in frames and seen["loop"] not in headers


def test_m_builds_the_next_ranges_steps_off_the_loop(monkeypatch):
    """train_sync has ProfilerStep#2-#7 and repeated optimizer ranges: m shows the next one's steps."""
    trace = Path(__file__).parent / "data" / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
    frames: list[int] = []
    record_threads(monkeypatch, steps, "steps_frame", frames)
    seen: dict = {}

    async def flow(app, pilot):
        pane = await open_steps(app, pilot, seen)
        before = len(frames)
        await pilot.press("m")
        await until(app, pilot, lambda: pane.table.model.frame["label"].tolist()[0] != "ProfilerStep#2")
        seen["after"] = frames[before:]
        show_steps(app, pane, seen)

    drive(TuiProfApp(trace, use_cache=False), flow, size=(160, 50))
    assert seen["labels"] == [f"Optimizer.step#SGD.step [{i}]" for i in range(1, 7)] == seen["steps"]
    assert "Optimizer.step#SGD.step" in seen["header"]
    assert seen["after"] and seen["loop"] not in seen["after"]


def test_agents_of_a_run_of_ranks_are_built_off_the_loop_and_shown(monkeypatch):
    built = build_ranks(RankSpec(ranks=4, iterations=20, compute_kernels=3, slow_rank=1, slow_pct=20))
    calls: list[int] = []
    record_threads(monkeypatch, hardware, "agents_renderable", calls)
    seen: dict = {}

    async def flow(app, pilot):
        seen["loop"] = threading.get_ident()
        await settle(app, pilot)
        await pilot.press("3")
        await idle(app, pilot)
        seen["body"] = text_of(app, "#hardware-body")

    runset = built.runset()
    expected = {a.arch for r in runset.runs for a in r.agents if a.type == "GPU" and a.arch}
    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert calls and seen["loop"] not in calls
    assert expected and all(arch in seen["body"] for arch in expected)


def test_footer_rebuild_restyles_no_key_and_keeps_textuals_classes(monkeypatch):
    runset, _ = stepped_runset()
    seen: dict = {"restyled": []}

    async def flow(app, pilot):
        await settle(app, pilot)
        original = app.update_styles

        def update_styles(node=None, animate=True):
            if isinstance(node, FooterKey):
                seen["restyled"].append(node.key)
            return original(node, animate=animate)

        monkeypatch.setattr(app, "update_styles", update_styles)
        footer = app.screen.query_one(KeyFooter)
        keys_before = [k.key for k in footer.query(FooterKey)]
        await pilot.press("8")  # the steps table focused: its keys join the footer (a rebuild)
        await idle(app, pilot)
        keys = list(footer.query(FooterKey))
        seen["changed"] = [k.key for k in keys] != keys_before
        seen["classes"] = [(k.key, k.has_class("-compact"), k.compact, k.has_class("-command-palette")) for k in keys]
        seen["compact"] = footer.compact

    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert seen["changed"]
    assert seen["restyled"] == []
    # as Textual's footer leaves them: the keys bound to the footer take its compact (False
    # here), the command palette's key (not bound) keeps FooterKey's default (compact)
    assert seen["compact"] is False
    for key, has_class, compact, palette in seen["classes"]:
        assert has_class == compact == palette, key
    assert sum(c[3] for c in seen["classes"]) == 1


def test_table_cells_are_the_values_iloc_gives():
    """TableModel.cells reads each column's array; the values (and their types: numpy
    scalars, None, NA, Timestamp, categories, Arrow scalars) are iloc's, and a frame of
    numeric columns of several dtypes keeps iloc's upcast."""
    frames = [
        pd.DataFrame(
            {
                "a": [1, 2, 3],
                "b": [1.5, np.nan, 2.0],
                "s": ["x", None, "z"],
                "c": pd.Categorical(["p", "q", "p"]),
                "t": pd.to_datetime([1, 2, 3]),
                "ar": pd.array([1, None, 3], dtype="int64[pyarrow]"),
                "as": pd.array(["u", None, "w"], dtype=pd.ArrowDtype(pa.string())),
                "bo": [True, False, True],
            },
            index=[7, 8, 9],
        ),
        pd.DataFrame({"a": [1, 2, 3], "b": [1.5, np.nan, 2.0]}),
        pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}),
        pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "s": ["x", "y", "z"]}),
    ]
    for frame in frames:
        model = TableModel(frame)
        for i in range(len(frame)):
            expected = frame.iloc[i]
            got = model.cells(i, list(frame.columns))
            assert [(type(got[k]), repr(got[k])) for k in frame.columns] == [(type(expected[k]), repr(expected[k])) for k in frame.columns]
    assert isinstance(TableModel(frames[1]).cells(0, ["a"])["a"], np.floating)  # iloc's upcast to float


def test_no_worker_is_named_by_the_repr_of_a_run_set(monkeypatch):
    """Textual names a @work worker by the repr of its arguments unless given a description:
    the repr of a RunSet (a dataclass: every table) took 0.5–1.7 s of the event loop at 64
    ranks. Opening a run of several processes (the rank rows and the agents are computed by
    workers given the RunSet) and cycling the step range never takes it."""
    built = build_ranks(RankSpec(ranks=4, iterations=20, compute_kernels=3, slow_rank=1, slow_pct=20))
    reprs: list[int] = []
    original = RunSet.__repr__

    def recorded(self):
        reprs.append(1)
        return original(self)

    monkeypatch.setattr(RunSet, "__repr__", recorded)
    seen: dict = {}

    async def flow(app, pilot):
        await settle(app, pilot)
        await pilot.press("7")
        await idle(app, pilot)
        seen["ranks"] = app.screen.query_one("#ranks-table").row_count

    drive(TuiProfApp(built.runset()), flow, size=(160, 50))
    assert seen["ranks"] == 4
    assert reprs == []


def test_the_run_and_its_summary_are_frozen_out_of_the_collector_while_shown(monkeypatch):
    """gc.freeze() once the run is shown and once its summary is (the objects then alive
    leave the collector's passes); a rank's screen freezes nothing; the app's exit unfreezes."""
    built = build_ranks(RankSpec(ranks=4, iterations=20, compute_kernels=3, slow_rank=1, slow_pct=20))
    gc.unfreeze()
    freezes: list[str] = []
    freeze = gc.freeze

    def counted() -> None:
        freezes.append(type(app.screen).__name__)
        freeze()

    monkeypatch.setattr(gc, "freeze", counted)
    seen: dict = {}

    async def flow(app, pilot):
        await settle(app, pilot)
        seen["view"] = app.main.view
        seen["frozen"] = gc.get_freeze_count()
        seen["tracked"] = len(gc.get_objects())  # the collector's passes see only these
        seen["freezes"] = list(freezes)
        await pilot.press("7")
        await idle(app, pilot)
        await pilot.press("enter")  # the rank's own screen
        await idle(app, pilot)
        seen["rank_screen"] = type(app.screen).__name__
        seen["freezes_rank"] = list(freezes)

    app = TuiProfApp(built.runset())
    drive(app, flow, size=(160, 50))
    assert seen["view"] is not None and seen["rank_screen"] == "RankScreen"
    assert seen["frozen"] > seen["tracked"]  # the imports, the run and the summary
    assert len(seen["freezes"]) == 3  # the screen mounted, the run shown, the summary shown
    assert seen["freezes_rank"] == seen["freezes"]  # none for the rank's screen
    assert gc.get_freeze_count() == 0


def shown_keys(footer: KeyFooter) -> list[tuple[str, str, bool]]:
    """The keys Footer.compose shows for the screen's bindings now, in its order: one per
    action (its first binding), the command palette's last."""
    seen: dict[str, tuple[str, str, bool]] = {}
    for _, binding, enabled, _ in footer.screen.active_bindings.values():
        if binding.show and binding.action not in seen:
            seen[binding.action] = (binding.key, binding.description, not enabled)
    keys = list(seen.values())
    palette = footer.screen.active_bindings.get(footer.app.COMMAND_PALETTE_BINDING)
    if palette is not None and footer.show_command_palette and footer.app.ENABLE_COMMAND_PALETTE:
        keys.append((palette[1].key, palette[1].description, not palette[2]))
    return keys


def test_footer_update_keeps_unchanged_keys_and_shows_what_compose_would():
    runset, _ = stepped_runset()
    seen: dict = {"states": []}

    async def flow(app, pilot):
        await settle(app, pilot)
        footer = app.screen.query_one(KeyFooter)
        for key in ["8", "2", "1", "8", "4", "1"]:
            before = {id(k) for k in footer.query(FooterKey)}
            await pilot.press(key)
            await idle(app, pilot)
            keys = list(footer.query(FooterKey))
            # grouped pane keys have no description of their own (the group's label has it)
            got = [(k.key, k.description if not k.has_class("-grouped") else None, k.has_class("-disabled")) for k in keys]
            want = [
                (k, d if g is None else None, dis)
                for (k, d, dis), g in zip(shown_keys(footer), [footer_group(footer, k) for k, _, _ in shown_keys(footer)], strict=True)
            ]
            seen["states"].append((key, got == want, len(before & {id(k) for k in keys}), len(keys)))

    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert all(ok for _, ok, _, _ in seen["states"]), seen["states"]
    assert all(n > 0 for _, _, n, _ in seen["states"])  # some key widgets were kept each time
    assert any(kept < total for _, _, kept, total in seen["states"])  # and some replaced


def footer_group(footer: KeyFooter, key: str):
    """The group of ``key``'s binding where Footer.compose groups it (a group of several actions), else None."""
    bindings = [b for _, b, _, _ in footer.screen.active_bindings.values() if b.show]
    binding = next((b for b in bindings if b.key == key), None)
    if binding is None or binding.group is None:  # the command palette's key
        return None
    return binding.group if len({b.action for b in bindings if b.group == binding.group}) > 1 else None
