"""``tuiprof diff A B --tui``: the app. Both runs are loaded, arranged and diffed in one
thread worker (:func:`tui_prof.analysis.diff.diff_runsets` for the starting match mode);
the screens are in :mod:`tui_prof.tui.diff.screens`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from textual.app import SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen, Screen

from tui_prof.analysis.api import DiffResult
from tui_prof.loaders.base import LoadCancelled
from tui_prof.model import RunSet
from tui_prof.render.safe import safe_text
from tui_prof.threads import use_daemon_threads
from tui_prof.tui.base import ProfApp
from tui_prof.tui.diff.recordings import DiffRecordings
from tui_prof.tui.diff.screens import DiffScreen, linked_models
from tui_prof.tui.diff.steps import StepDiffScreen
from tui_prof.tui.keys import app_sources, binding_rows, declared_in
from tui_prof.tui.messages import LoadFailed
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.screens.recordings import RecordingsScreen
from tui_prof.tui.view.lanes import TimelineModel
from tui_prof.tui.view.recordings import RECORDINGS_KEY, RecordingError
from tui_prof.tui.view.runview import RunView, build_view, load_failure, load_runset
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.tui.workers import deliver, thread_worker


class DiffLoaded(Message):
    def __init__(
        self,
        views: tuple[RunView, RunView],
        runsets: tuple[RunSet, RunSet],
        result: DiffResult,
        keys: tuple[np.ndarray, np.ndarray],
        models: tuple[TimelineModel, TimelineModel],
    ) -> None:
        super().__init__()
        self.views = views
        self.runsets = runsets
        self.result = result  # analysis.diff.diff_runsets, computed in the load worker
        self.keys = keys  # each side's match key per kernel row
        self.models = models  # A's and B's timelines on one span


class DiffApp(ProfApp):
    """tuiprof diff: two runs compared (sources are paths or loaded run sets)."""

    CSS_PATH = "../tuiprof.tcss"
    TITLE = "tuiprof diff"
    BINDINGS = [
        Binding("S", "step_diff", "Step diff", id="diff.steps"),
        Binding(RECORDINGS_KEY, "recordings", "Pick A's (then B's) recording of its folder", show=False, id="diff.recordings"),
    ]

    def __init__(
        self,
        source_a: str | Path | RunSet,
        source_b: str | Path | RunSet,
        *,
        by: str = "name",
        rules=None,
        noise_pct: float | None = None,
        noise_pp: float | None = None,
        use_cache: bool = True,
        steps: bool = False,
        step: int | None = None,
        step_b: int | None = None,
        recordings: tuple[int, int] | None = None,
        **kwargs,
    ) -> None:
        """``use_cache``: read/write the columnar cache (``tuiprof diff --tui --no-cache``: False);
        ``steps``: open the step-aligned diff (of steps ``step``/``step_b``) once loaded;
        ``recordings``: A's and B's recording when a side holds several (``--recording N,M``;
        None: each side's with most dispatches, said in a note; key R picks others)."""
        super().__init__(**kwargs)
        self.steps = {"open": steps or step is not None or step_b is not None, "step": step, "step_b": step_b}
        self.sources: tuple[str | Path | RunSet, str | Path | RunSet] = (source_a, source_b)
        self.use_cache = use_cache
        self.options: dict[str, Any] = {"by": by, "rules": rules, "noise_pct": noise_pct, "noise_pp": noise_pp}
        self.diff_screen = DiffScreen(**self.options)
        self.load_error = ""  # why there is nothing to compare (tuiprof diff --tui then exits 1; 2 for a bad --recording)
        self.sides = DiffRecordings(recordings)

    def on_mount(self) -> None:
        use_daemon_threads()  # quitting never waits for a load or an analysis
        self.push_screen(self.diff_screen)
        self.load()

    @thread_worker("loading the runs", group="load", exclusive=True)
    def load(self) -> None:
        try:
            wholes = [load_runset(source, use_cache=self.use_cache) for source in self.sources]
            a, b = self.sides.choose(wholes, self._note)
            views = (build_view(a, lazy=True), build_view(b, lazy=True))
            models = linked_models(views)  # the screen shows the lanes; the deltas come from analysis.diff
            screen = self.diff_screen
            result = screen.diff((a, b))
            empty = [f"{tag} ({rs.name})" for tag, rs, nothing in zip("AB", (a, b), result.empty) if nothing]
            if empty:  # a diff of nothing must not look like a clean result (the CLI exits 1 too)
                self.post_message(LoadFailed("\n".join(f"{side} holds no kernels, API calls, copies or statistics to compare" for side in empty)))
                return
            self.post_message(DiffLoaded(views, (a, b), result, screen.match_keys(views, screen.by), models))
        except LoadCancelled:  # the app is quitting
            return
        except RecordingError as err:  # a bad --recording N,M: said as it is (tuiprof diff exits 2)
            self.post_message(LoadFailed(str(err)))
        except Exception as err:  # shown in the app, never as a traceback
            self.post_message(LoadFailed(load_failure(err, "the runs")))

    def _note(self, text: str) -> None:
        deliver(self.diff_screen, lambda: self.notify(safe_text(text), severity="warning", timeout=20, markup=False))

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """R where A or B holds several recordings, not over a modal window."""
        if action == "recordings":
            return any(len(rows) > 1 for rows in self.sides.rows) and not isinstance(self.screen, ModalScreen)
        return super().check_action(action, parameters)

    def action_recordings(self) -> None:
        """A's recordings, then B's (each side that holds several); the diff is made again on
        the pair picked, from the runs kept in memory (nothing read again)."""
        sides = [i for i, rows in enumerate(self.sides.rows) if len(rows) > 1]
        picked = list(self.sides.shown)

        def ask(k: int) -> None:
            if k == len(sides):
                pair = (picked[0], picked[1])
                if pair != self.sides.shown:
                    self.run_worker(self._compare_again(pair), exclusive=True, group="recordings")
                return
            side = sides[k]

            def chosen(index: int | None) -> None:
                if index is not None:
                    picked[side] = index
                    ask(k + 1)

            rows = self.sides.rows[side]
            self.push_screen(RecordingsScreen(rows, title=f"{'AB'[side]}: {len(rows)} separate recordings of {self.sides.names[side]} (* compared)"), chosen)

        ask(0)

    async def _compare_again(self, pair: tuple[int, int]) -> None:
        """The diff of recordings ``pair`` on a fresh diff screen (the screens above it closed)."""
        while len(self.screen_stack) > 2 and self.screen is not self.diff_screen:
            await self.pop_screen()
        self.sides.wanted = pair
        self.sources = (self.sides.wholes[0], self.sides.wholes[1])
        self.diff_screen = DiffScreen(**self.options)
        await self.switch_screen(self.diff_screen)
        self.load()

    @classmethod
    def key_rows(cls) -> list[tuple[str, str, str]]:
        """(where, keys, action) of every binding of the diff app, its screens and widgets,
        from their BINDINGS (any other class of tui.diff that declares keys: under its name)."""
        sources = app_sources(cls) + [
            ("diff screen", DiffScreen),
            ("kernel table", TableView),
            ("focused timeline", Timeline),
            ("pair screen", BackScreen),
            ("step diff", StepDiffScreen),
        ]
        return binding_rows(sources + [(c.__name__, c) for c in declared_in("tui_prof.tui.diff")])

    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        diff = self.diff_screen
        yield SystemCommand("Summary", "Metric deltas, verdicts and why (1)", lambda: diff.action_section("summary"))
        yield SystemCommand("Kernels", "The kernel diff table (2)", lambda: diff.action_section("kernels"))
        yield SystemCommand("Timelines", "A's and B's timelines, zoom-linked (3)", lambda: diff.action_section("timelines"))
        yield SystemCommand("Match by next mode", "name / normalised name / category (m)", diff.action_match)
        yield SystemCommand("Order by |Δ total|", "The kernel table's default order (r)", diff.action_reset_order)
        yield SystemCommand("Zoom both in", "Both timelines (w + =)", lambda: diff.action_zoom(0.5))
        yield SystemCommand("Zoom both out", "Both timelines (-)", lambda: diff.action_zoom(2.0))
        yield SystemCommand("Pan both left", "Both timelines (a)", lambda: diff.action_pan(-0.25))
        yield SystemCommand("Pan both right", "Both timelines (d)", lambda: diff.action_pan(0.25))
        yield SystemCommand("Fit both", "Whole runs (0)", diff.action_fit)
        yield SystemCommand("Next gap", "A's next idle gap, B follows (n)", lambda: diff.action_gap(1))
        yield SystemCommand("Previous gap", "A's previous idle gap (N)", lambda: diff.action_gap(-1))
        yield SystemCommand("Kernel on timelines", "The selected kernel on both timelines (t)", diff.action_goto_kernel)
        yield SystemCommand("Step diff", "A's and B's steady steps kernel by kernel on one ruler (S)", self.action_step_diff)
        if any(len(rows) > 1 for rows in self.sides.rows):
            yield SystemCommand("Recordings", "Pick A's (then B's) recording of its folder (R)", self.action_recordings)
        yield SystemCommand("Keys", "Every key binding (?)", self.action_help)

    def on_diff_loaded(self, message: DiffLoaded) -> None:
        self.diff_screen.show(message.views, message.runsets, message.result, message.keys, message.models)
        if self.steps["open"]:
            self.action_step_diff()

    def action_step_diff(self) -> None:
        """The step-aligned diff (tui/diff/steps.py) of the loaded runs, computed in its screen."""
        runsets = self.diff_screen.runsets
        if runsets is None:
            self.notify("the runs are still loading")
            return
        self.push_screen(StepDiffScreen(runsets=runsets, step=self.steps["step"], step_b=self.steps["step_b"], noise_pct=self.diff_screen.noise_pct))

    def on_load_failed(self, message: LoadFailed) -> None:
        self.load_error = message.text
        self.diff_screen.show_failure(message.text)
