"""``tuiprof open RUN --cluster WHERE``: the rank table of a many-rank run, from the ranks
merged out of per-rank partials (the CLI computes them on the cluster before the app starts:
tui_prof.cluster); Enter on a rank loads that rank alone -- its own files, through the per-rank
cache the workers wrote -- and opens its own panes (the rank screen of ``tuiprof open``).
The app never holds more than one rank's kernels."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_prof.model import RunSet
from tui_prof.render.safe import safe_text
from tui_prof.threads import use_daemon_threads
from tui_prof.tui.base import ProfApp
from tui_prof.tui.keys import binding_rows
from tui_prof.tui.panes.ranks import RANK_COLUMNS, RanksTable, ranks_frame, ranks_header
from tui_prof.tui.safe import plain
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.workers import deliver, thread_worker


class MergedRanksScreen(Screen):
    """The merged rank table; the header says how the ranks were summarised and which failed."""

    DEFAULT_CSS = "#merged-header { height: auto; max-height: 4; } #merged-ranks { height: 1fr; }"
    SECTIONS = ("ranks", "stragglers", "communication", "partials")  # every section of the document it reads

    def __init__(self, doc: dict[str, Any], files: dict[str, tuple[str, tuple[str, ...]]], use_cache: bool) -> None:
        """``files``: per rank label (``ranks[].label``), its run root and files."""
        super().__init__()
        self.doc, self.files, self.use_cache = doc, files, use_cache
        self.labels = [r["label"] for r in doc.get("ranks") or []]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="merged-header")
            yield RanksTable(list(RANK_COLUMNS), id="merged-ranks")
        yield Footer()

    def on_mount(self) -> None:
        parts = self.doc.get("partials") or {}
        failed = parts.get("failed_ranks") or []
        header = ranks_header(self.doc)
        note = f"\n{parts.get('merged', 0)} of {parts.get('ranks', 0)} ranks merged from per-rank partials; Enter loads one rank alone"
        if failed:
            note += f"; failed: {', '.join(f['label'] for f in failed[:5])}" + (" …" if len(failed) > 5 else "")
        header.append_text(plain(note, "dim"))
        self.query_one("#merged-header", Static).update(header)
        table = self.query_one("#merged-ranks", RanksTable)
        table.set_data(ranks_frame(self.doc, self.labels), text_key="host", sort=("rank", False))
        table.focus()

    @on(TableView.Selected, "#merged-ranks")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        run = int(event.row["run"])
        if 0 <= run < len(self.labels) and self.labels[run] in self.files:
            self.notify(safe_text(f"loading rank {int(event.row['rank'])}…"), timeout=3, markup=False)
            self.open_rank(self.labels[run], int(event.row["rank"]))

    @thread_worker("loading the rank", group="merged-rank", exclusive=True)
    def open_rank(self, label: str, rank: int) -> None:
        from tui_prof.cluster import load_rank

        runset, run = load_rank(self.files, label, self.use_cache)
        deliver(self, self._show_rank, runset, run, rank)

    def _show_rank(self, runset: RunSet, run: int, rank: int) -> None:
        from tui_prof.tui.screens.main import RankScreen  # every pane: imported when a rank is opened, not before the first screen

        self.app.push_screen(RankScreen(runset, run, rank))


class MergedRanksApp(ProfApp):
    """tuiprof over the merged ranks of a run summarised rank by rank."""

    CSS_PATH = "tuiprof.tcss"
    TITLE = "tuiprof"

    def __init__(self, doc: dict[str, Any], files: dict[str, tuple[str, tuple[str, ...]]], *, use_cache: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.screen_ranks = MergedRanksScreen(doc, files, use_cache)

    def on_mount(self) -> None:
        use_daemon_threads()
        self.push_screen(self.screen_ranks)

    @classmethod
    def key_rows(cls) -> list[tuple[str, str, str]]:
        return binding_rows((("everywhere", cls), ("ranks", RanksTable), ("tables", TableView)))
