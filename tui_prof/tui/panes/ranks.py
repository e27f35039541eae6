"""Ranks pane (tab 7): one row per process of the run, sortable; the straggler and
communication in the header; Enter on a rank posts :class:`~tui_prof.tui.messages.RankOpened`
and the screen opens that rank's own panes.

Its rows come from one path: the load (tui_prof.tui.view.rankrows.RankRows, the sections
analysis.ranks computes, as the processes load and once all are in), handed down by the
screen (:meth:`RanksPane.show_rows`); it needs no lazy piece of the view."""

from __future__ import annotations

import pandas as pd
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from tui_prof.render.fmt import fmt_ns, fmt_pct, fmt_value
from tui_prof.tui.messages import RankOpened
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import COMPUTING

RANK_COLUMNS = (
    Column("rank", "rank", 6, "int"),
    Column("host", "host", 10, "text"),
    Column("gpus", "GPU", 14, "text"),
    Column("span_ns", "span", 9, "ns"),
    Column("compute_ns", "compute", 9, "ns"),
    Column("communication_ns", "comm", 9, "ns"),
    Column("copy_ns", "copy", 9, "ns"),
    Column("idle_pct", "idle %", 7, "pct"),
    Column("sync_ns", "sync", 9, "ns"),
    Column("wait_ns", "wait", 9, "ns"),
    Column("top_kernel", "top kernel", 40, "text"),
)


def ranks_frame(doc: dict | None, labels: list[str]) -> pd.DataFrame:
    """One row per ``ranks[]`` record with ``run`` = its process's index in ``labels``.

    The figures are nullable columns (``Int64``, ``Float64``): a figure not known yet (a
    rank still loading, a wait before every rank is in) is missing, never a number; the
    table sorts missing cells after every value and shows them as pending."""
    rows = (doc or {}).get("ranks") or []
    index = {label: i for i, label in enumerate(labels)}
    figures = {c.key: pd.array([r[c.key] for r in rows], dtype="Float64" if c.kind == "pct" else "Int64") for c in RANK_COLUMNS if c.kind != "text"}
    return pd.DataFrame(
        {
            **figures,
            "host": [r["host"] or "-" for r in rows],
            "gpus": [r["gpus"] or "-" for r in rows],
            "top_kernel": [r["top_kernel"] or "-" for r in rows],
            "run": pd.Series([index.get(r["label"], -1) for r in rows], dtype="int64"),
        }
    )[[c.key for c in RANK_COLUMNS] + ["run"]]


def ranks_header(doc: dict | None) -> Text:
    """Where the rank numbers come from, the straggler and the communication share."""
    doc = doc or {}
    rows = doc.get("ranks") or []
    if not rows:
        return plain("No processes with data in this run.", "dim")
    sources = {r["rank_source"] for r in rows}  # distributedInfo, environment (RANK, OMPI_COMM_WORLD_RANK, ...) or order
    source = rows[0]["rank_source"] if len(sources) == 1 and "order" not in sources else "host, pid order (no rank recorded)"
    parts = [f"{len(rows)} rank(s), rank from {source}"]
    strag = doc.get("stragglers") or {}
    if strag.get("rank") is not None:
        parts.append(
            f"straggler: rank {strag['rank']} (last at {strag['last_in']} of {strag['instances']} collectives); "
            f"the others wait {fmt_ns(strag['others_wait_ns'])} ({fmt_pct(strag['others_wait_pct'])} of their time)"
        )
    comm = doc.get("communication") or {}
    if comm.get("kernel_ns"):
        parts.append(f"communication {fmt_pct(comm['pct_of_time'])} of time, {fmt_pct(comm['overlap_pct'])} of it overlaps compute")
    busbw = [f"{t['type']} {t['bus_bandwidth_gbs']:.2f} GB/s" for t in comm.get("by_type", []) if t.get("bus_bandwidth_gbs") is not None]
    if busbw:  # only where the trace records message sizes (docs/metrics.md, Collective bandwidth)
        parts.append("bus bandwidth " + ", ".join(busbw))
    return plain(" · ".join(parts))


def pending_text(kind: str):
    """The cell formatter of a ``kind`` column: "…" where the figure is missing, i.e. not
    known yet: it needs ranks still loading (a wait compares every rank's collectives), or
    its rank has not loaded (tui.view.rankrows.pending_row)."""
    return lambda value: "…" if value is pd.NA else fmt_value(value, kind)


class RanksTable(TableView):
    """The rank table; Enter opens the rank's own panes."""

    BINDINGS = [Binding("enter", "select", "Open rank", id="ranks.open")]


class RanksPane(Pane, Vertical):
    """Tab 7, for runs of several processes."""

    TAB, TITLE, KEY, FOCUS, PIECE = "ranks", "Ranks", "7", "#ranks-table", None

    DEFAULT_CSS = "RanksPane { height: 1fr; } #ranks-header { height: auto; max-height: 3; }"

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="ranks-header")
        yield RanksTable(list(RANK_COLUMNS), id="ranks-table")

    @property
    def table(self) -> RanksTable:
        return self.query_one("#ranks-table", RanksTable)

    final = False  # the rows of every rank are shown (waits and straggler included)
    loading = False  # the header shows the loading line
    _shown: dict = {}  # the rank sections shown

    def show_rows(self, doc: dict, labels: list[str], done: int, total: int, final: bool) -> None:
        """The rows of the ranks loaded so far (``final``: every rank, with waits and the
        straggler), keeping the user's sort and cursor; a refill is one small frame of the rows."""
        if self.final and not final:
            return
        shown = {key: doc.get(key) for key in ("ranks", "communication", "stragglers")}
        if self.final and shown == self._shown:
            return  # the summary's rank sections are the rows shown while loading: no refill
        self._shown = shown
        table = self.table
        model = table.model
        sort = (model.sort_key, model.descending) if model is not None and model.sort_key else ("rank", False)
        cursor, had_focus = table.cursor, table.has_focus
        table.set_data(ranks_frame(doc, labels), text_key="host", sort=sort)
        for column in RANK_COLUMNS:
            if column.kind != "text":
                table.formatters[column.key] = pending_text(column.kind)
        table.cursor = min(cursor, max(table.row_count - 1, 0))
        if had_focus:
            table.focus()
        loaded = sum(1 for row in doc.get("ranks") or [] if not row.get("pending"))
        header = (
            ranks_header(doc) if final else plain(f"Loading: {loaded} of {max(total, loaded)} ranks loaded · waits and the straggler once all are in", "italic")
        )
        # the loading line keeps its height: no layout of the screen for it after the first
        self.query_one("#ranks-header", Static).update(header, layout=final or not self.loading)
        self.final, self.loading = final, not final

    @classmethod
    def available(cls, view: RunView | None) -> bool:
        return view is not None and len(view.runset.runs) > 1

    def show_error(self, text: Text) -> None:
        self.query_one("#ranks-header", Static).update(text)

    @on(TableView.Selected, "#ranks-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        run = int(event.row["run"])
        if run >= 0:
            self.post_message(RankOpened(run, int(event.row["rank"])))
