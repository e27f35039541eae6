"""A Line-API table over a pandas DataFrame: sort and regex filter work on numpy
index arrays, and only the visible rows are ever formatted.

Sorting 1M rows is one packed-key ``np.sort`` per column and direction, cached; filtering
a category column tests each distinct string once and maps the result through the
category codes. A row's formatted text is kept once made, so the repaint of a cursor move
(every visible line) formats nothing again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from tui_prof.render.fmt import fmt_at, fmt_value, shorten_name, shorten_names
from tui_prof.render.safe import safe_text


@dataclass
class Column:
    """A table column: DataFrame key, header title, cell width and formatter kind."""

    key: str
    title: str
    width: int
    kind: str = "int"  # "text", "int", "ns", "pct", "float"
    # a later text column that takes the width left (``width`` is then its least): the
    # first column keeps its own width; without one, a text first column takes it
    grow: bool = False


def stable_order(keys: np.ndarray, descending: bool = False) -> np.ndarray:
    """Row indices that sort ``keys`` (ties keep their index order, in both directions).

    Integer keys whose range leaves room for the row index are packed into one int64
    ``(key - min) << bits | index`` (or ``max - key`` for descending) and sorted with
    ``np.sort`` (numpy's SIMD quicksort, ~15-35 ms for 1M rows); the index in the low bits
    makes the result stable. Other keys fall back to ``np.argsort(kind="stable")``.
    """
    n = int(keys.size)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if keys.dtype.kind == "b":
        keys = keys.astype(np.int8)
    if keys.dtype.kind in "iu":
        k = keys.astype(np.int64, copy=False)
        lo, hi = int(k.min()), int(k.max())
        bits = max(n - 1, 1).bit_length()
        if hi - lo < (1 << (62 - bits)):
            rel = (hi - k) if descending else (k - lo)
            packed = (rel << bits) | np.arange(n, dtype=np.int64)
            packed.sort()
            return packed & ((1 << bits) - 1)
    return np.argsort(-keys if descending else keys, kind="stable").astype(np.int64)


class TableModel:
    """Rows of a DataFrame in filtered + sorted order (``order`` indexes the frame).

    Speed on 1M rows (bench/bench_table.py): each column's sort order is computed once
    per direction and cached, so a later sort or a filter change only applies the row
    mask to the cached order (one boolean gather); a regex filter runs the regex once per
    distinct string of the text column and maps the hits through the category codes.
    """

    def __init__(self, frame: pd.DataFrame, text_key: str | None = None) -> None:
        self.frame = frame.reset_index(drop=True)
        self.text_key = text_key
        self.sort_key: str | None = None
        self.descending = False
        self.pattern = ""
        self._mask: np.ndarray | None = None  # None = every row
        self._orders: dict[tuple[str, bool], np.ndarray] = {}
        self._text: tuple[np.ndarray, list[str]] | None = None
        self.order = np.arange(len(self.frame), dtype=np.int64)
        self._arrays: dict[str, Any] | None = None  # column -> its values, for rows' cells

    def __len__(self) -> int:
        return int(self.order.size)

    def cells(self, frame_row: int, keys: list[str]) -> dict[str, Any]:
        """The values of ``keys`` in frame row ``frame_row``, as ``frame.iloc[frame_row]``
        gives them, read from each column's array (``iloc`` builds a Series of the whole row:
        ≈ 0.5 ms, most of a table line's paint). A frame of numeric columns only, of
        several dtypes, takes the ``iloc`` path: its row upcasts the values to one dtype."""
        if self._arrays is None:
            dtypes = set(self.frame.dtypes)
            upcast = len(dtypes) > 1 and all(isinstance(d, np.dtype) and d.kind != "O" for d in dtypes)
            self._arrays = {} if upcast or not self.frame.columns.is_unique else {c: self._array(c) for c in self.frame.columns}
        if not self._arrays:
            row = self.frame.iloc[frame_row]
            return {key: row[key] for key in keys}
        return {key: self._arrays[key][frame_row] for key in keys}

    def _array(self, column: str) -> Any:
        series = self.frame[column]
        # numpy columns of plain scalars as numpy gives them; the rest (Arrow, categories,
        # datetimes: Timestamp) as the pandas array gives each element, as iloc does
        return series.to_numpy() if isinstance(series.dtype, np.dtype) and series.dtype.kind in "biufcO" else series.array

    def _keys(self, column: str) -> tuple[np.ndarray, np.ndarray | None]:
        """The sort keys of ``column`` and, for a nullable numeric column (``Int64``,
        ``Float64``) with missing cells, which rows are missing (None: none is)."""
        series = self.frame[column]
        if pd.api.types.is_extension_array_dtype(series.dtype) and pd.api.types.is_numeric_dtype(series.dtype):
            missing = series.isna().to_numpy()
            values = series.to_numpy(dtype=series.dtype.numpy_dtype, na_value=0)
            return values, (missing if missing.any() else None)
        return self._plain_keys(series), None

    @staticmethod
    def _plain_keys(series: pd.Series) -> np.ndarray:
        if isinstance(series.dtype, pd.CategoricalDtype):
            # an ordered categorical sorts in its own order (e.g. 2048x1x1 by size), others by text
            categories = series.cat.categories
            ranks = np.arange(len(categories)) if series.cat.ordered else np.argsort(np.argsort(categories.astype(str).to_numpy(), kind="stable"))
            codes = series.cat.codes.to_numpy()
            return np.where(codes >= 0, ranks[np.maximum(codes, 0)], -1)
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            return series.astype("category").cat.codes.to_numpy()  # categories are sorted
        return series.to_numpy()

    def sorted_rows(self, column: str, descending: bool) -> np.ndarray:
        """All rows of the frame ordered by ``column`` (cached per column and direction);
        missing cells of a nullable column come after every value, in both directions."""
        key = (column, descending)
        if key not in self._orders:
            keys, missing = self._keys(column)
            if missing is None:
                self._orders[key] = stable_order(keys, descending)
            else:
                present = np.flatnonzero(~missing)
                self._orders[key] = np.concatenate([present[stable_order(keys[present], descending)], np.flatnonzero(missing)])
        return self._orders[key]

    def _text_codes(self) -> tuple[np.ndarray, list[str]]:
        if self._text is None:
            series = self.frame[self.text_key]
            if not isinstance(series.dtype, pd.CategoricalDtype):
                series = series.astype(str).astype("category")
            self._text = (series.cat.codes.to_numpy(), [str(c) for c in series.cat.categories])
        return self._text

    def text_matches(self, regex: re.Pattern) -> np.ndarray:
        codes, cats = self._text_codes()
        hit = np.fromiter((bool(regex.search(c)) for c in cats), dtype=bool, count=len(cats))
        hit = np.append(hit, False)  # code -1 (missing) -> the appended False
        return hit[codes]

    def set_filter(self, pattern: str) -> None:
        """Keep rows whose text column matches ``pattern`` (Python regex, case-insensitive).

        Raises ``re.error`` for a bad pattern (the old filter stays).
        """
        if not pattern or not self.text_key:
            mask = None
        else:
            mask = self.text_matches(re.compile(pattern, re.IGNORECASE))
        self.pattern = pattern
        self._mask = mask
        self._reorder()

    def set_sort(self, column: str | None, descending: bool) -> None:
        self.sort_key, self.descending = column, descending
        self._reorder()

    def _reorder(self) -> None:
        if self.sort_key is not None:
            rows = self.sorted_rows(self.sort_key, self.descending)
            if self._mask is not None:
                rows = rows[self._mask[rows]]
        elif self._mask is not None:
            rows = np.flatnonzero(self._mask)
        else:
            rows = np.arange(len(self.frame))
        self.order = rows.astype(np.int64, copy=False)

    def row(self, position: int) -> pd.Series:
        return self.frame.iloc[int(self.order[position])]


NAME_COLUMNS = ("name", "key")  # text columns of kernel names: shortened by render.fmt.shorten_names
SHORT_NAMES_MAX = 2_000  # distinct names shortened as one set (a hotspot table; ~50 ms on the event loop)


class TableView(Widget, can_focus=True):
    """Keyboard-first table: j/k rows, h/l columns, s sort; filtering is the owner's (``apply_filter``)."""

    DEFAULT_CSS = """
    TableView { height: 1fr; }
    TableView > .tableview--header { text-style: bold; color: $text; background: $panel; }
    TableView > .tableview--header-cursor { text-style: bold reverse; }
    TableView > .tableview--cursor { background: $accent 40%; }
    TableView:focus > .tableview--cursor { background: $accent; color: $text; }
    TableView > .tableview--dim { color: $text-muted; }
    """
    COMPONENT_CLASSES = {
        "tableview--header",
        "tableview--header-cursor",
        "tableview--cursor",
        "tableview--dim",
    }
    BINDINGS = [
        Binding("j,down", "move(1)", "Down", show=False),
        Binding("k,up", "move(-1)", "Up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("g,home", "jump(0)", "Top", show=False),
        Binding("G,end", "jump(-1)", "Bottom", show=False),
        Binding("h,left", "column(-1)", "Column left", show=False),
        Binding("l,right", "column(1)", "Column right", show=False),
        Binding("s", "sort", "Sort col", id="table.sort"),
        Binding("left_square_bracket", "sort_dir(False)", "Sort asc", show=False),
        Binding("right_square_bracket", "sort_dir(True)", "Sort desc", show=False),
        Binding("enter", "select", "Open", id="table.open"),
    ]

    cursor = reactive(0, always_update=True)

    class Highlighted(Message):
        """The cursor moved to ``row`` (None: the table is empty)."""

        def __init__(self, table: TableView, row: pd.Series | None) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> TableView:
            return self.table

    class Selected(Message):
        """Enter (or a click) on ``row``."""

        def __init__(self, table: TableView, row: pd.Series) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> TableView:
            return self.table

    def __init__(self, columns: list[Column], *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.columns = [dataclasses.replace(c) for c in columns]  # per table: titles may change
        self.model: TableModel | None = None
        self.col_cursor = 0
        self.col_offset = 1  # the first of the columns after the first one shown (they scroll)
        self.top = 0
        self.formatters: dict[str, Callable] = {}
        self._shorts: dict[tuple, dict[str, str]] = {}
        # formatted text of frame rows, by (frame row, (column key, kind, width) shown): a
        # cursor move repaints every visible line, and formatting a row (a pandas row
        # lookup, the formatters, the sanitiser) is most of a line's cost (15 ms for a page
        # of 47 dispatch rows, 160 columns); cleared with the data and the formatters
        self._lines: dict[tuple, str] = {}
        self._paint: tuple[Style, list[tuple[Column, int]]] | None = None  # see render_lines

    # -- data ---------------------------------------------------------------------
    def set_data(self, frame: pd.DataFrame, text_key: str | None = None, sort: tuple[str, bool] | None = None) -> None:
        self.model = TableModel(frame, text_key or self.columns[0].key)
        self._lines = {}
        if sort:
            self.model.set_sort(*sort)
            self.col_cursor = next((i for i, c in enumerate(self.columns) if c.key == sort[0]), 0)
        self.top = 0
        self.cursor = 0
        height = self.styles.height
        self.refresh(layout=height is not None and height.is_auto)  # a table of height auto grows to its rows
        self._post_highlight()

    def get_content_height(self, container, viewport, width: int) -> int:
        """The header and every row (or the "no rows" line): what ``height: auto`` gives,
        bounded by the owner's ``max-height``."""
        return 1 + max(self.row_count, 1)

    @property
    def row_count(self) -> int:
        return len(self.model) if self.model else 0

    @property
    def current_row(self) -> pd.Series | None:
        if not self.model or not len(self.model):
            return None
        return self.model.row(min(self.cursor, len(self.model) - 1))

    @property
    def sort_column(self) -> str | None:
        return self.model.sort_key if self.model else None

    def apply_filter(self, pattern: str) -> None:
        if self.model is None:
            return
        self.model.set_filter(pattern)
        self.top = 0
        self.cursor = 0
        self.refresh()
        self._post_highlight()

    def time_offsets(self, key: str, frame: pd.DataFrame, dur_key: str = "dur") -> None:
        """Show column ``key`` (ns from the run start) with the digits that tell its rows
        apart: resolution one tenth of the shortest positive duration, at least 1 ns."""
        dur = frame[dur_key].to_numpy() if dur_key in frame and len(frame) else np.zeros(0)
        positive = dur[dur > 0]
        resolution = max(float(positive.min()) / 10, 1.0) if positive.size else 1.0
        self.formatters[key] = lambda v, r=resolution: fmt_at(v, r)
        self._lines = {}

    def show_row(self, position: int, above: int = 0) -> None:
        """Put the cursor on row ``position`` (display order), shown ``above`` rows below
        the top."""
        position = self._clamp(position)
        self.top = max(0, min(position - above, self.row_count - self._page_rows()))
        self.cursor = position
        self._post_highlight()

    # -- actions --------------------------------------------------------------------
    def _page_rows(self) -> int:
        return max(1, self.size.height - 1)

    def _clamp(self, value: int) -> int:
        return max(0, min(value, self.row_count - 1)) if self.row_count else 0

    def watch_cursor(self, value: int) -> None:
        rows = self._page_rows()
        if value < self.top:
            self.top = value
        elif value >= self.top + rows:
            self.top = value - rows + 1
        self.refresh()

    def _post_highlight(self) -> None:
        self.post_message(self.Highlighted(self, self.current_row))

    def action_move(self, delta: int) -> None:
        self.cursor = self._clamp(self.cursor + delta)
        self._post_highlight()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * self._page_rows())

    def action_jump(self, where: int) -> None:
        self.cursor = self._clamp(0 if where == 0 else self.row_count - 1)
        self._post_highlight()

    def action_column(self, delta: int) -> None:
        self.col_cursor = max(0, min(self.col_cursor + delta, len(self.columns) - 1))
        self.refresh()

    def action_sort(self) -> None:
        """Sort by the cursor column; again on the same column flips the direction."""
        if self.model is None:
            return
        key = self.columns[self.col_cursor].key
        if self.model.sort_key == key:
            descending = not self.model.descending
        else:
            descending = self.columns[self.col_cursor].kind != "text"
        self.sort_by(key, descending)

    def action_sort_dir(self, descending: bool) -> None:
        if self.model is not None:
            self.sort_by(self.columns[self.col_cursor].key, descending)

    def set_columns(self, columns: list[Column]) -> None:
        """Show ``columns`` (copies: their titles may change) from the first, the column cursor on it."""
        self.columns = [dataclasses.replace(c) for c in columns]
        self.col_cursor, self.col_offset = 0, 1
        self.refresh()

    def set_title(self, index: int, title: str) -> None:
        """The header of column ``index`` (the grouping or table a first column shows)."""
        self.columns[index].title = title
        self.refresh()

    def sort_by(self, key: str, descending: bool) -> None:
        if self.model is None:
            return
        self.model.set_sort(key, descending)
        self.col_cursor = next((i for i, c in enumerate(self.columns) if c.key == key), self.col_cursor)
        self.cursor = 0
        self.top = 0
        self.refresh()
        self._post_highlight()

    def action_select(self) -> None:
        row = self.current_row
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_mouse_scroll_down(self) -> None:
        self.action_move(3)

    def on_mouse_scroll_up(self) -> None:
        self.action_move(-3)

    def on_click(self, event) -> None:
        if event.y >= 1:
            self.cursor = self._clamp(self.top + event.y - 1)
            self._post_highlight()

    # -- rendering ------------------------------------------------------------------
    def _visible_columns(self, width: int) -> list[tuple[Column, int]]:
        """The first column always, then columns from ``col_offset`` that fit; the name
        column gets the remaining width."""
        if not self.columns:
            return []
        first = self.columns[0]
        rest = self.columns[1:]
        if self.col_cursor >= 1 and self.col_cursor < self.col_offset:
            self.col_offset = self.col_cursor
        min_first = min(first.width, max(12, width // 3))
        while True:
            used, shown = 0, []
            for col in rest[self.col_offset - 1 :]:
                if used + col.width + 1 > width - min_first:
                    break
                shown.append(col)
                used += col.width + 1
            last = self.col_offset - 1 + len(shown)
            if self.col_cursor <= last or self.col_offset >= len(self.columns) - 1:
                break
            self.col_offset += 1
        grow = next((c for c in shown if c.grow), None)
        if grow is not None and width - used - first.width > 0:  # the first column at its width, the rest to ``grow``
            spare = width - used - first.width
            return [(first, first.width)] + [(c, c.width + spare if c is grow else c.width) for c in shown]
        first_width = max(4, width - used) if first.kind == "text" else first.width
        return [(first, first_width)] + [(c, c.width) for c in shown]

    def _short(self, key: str, width: int) -> dict[str, str]:
        """Names of text column ``key`` shortened to ``width`` as one set
        (render.fmt.shorten_names: rows that differ stay distinguishable); computed once
        per column and width, for columns of at most SHORT_NAMES_MAX distinct values."""
        cache_key = (id(self.model), key, width)
        if cache_key not in self._shorts:
            column = self.model.frame[key] if self.model is not None else None
            values: list[str] = []
            if column is not None:
                uniques = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.unique()
                if len(uniques) <= SHORT_NAMES_MAX:
                    values = [str(v) for v in uniques]
            self._shorts = {k: v for k, v in self._shorts.items() if k[0] == id(self.model)}
            self._shorts[cache_key] = dict(zip(values, shorten_names(values, width))) if values else {}
        return self._shorts[cache_key]

    def _cell(self, text: str, width: int, kind: str) -> str:
        # Line-API segments reach the terminal as they are: a name from the trace is
        # sanitised here (an OSC/escape sequence or a bidi control is shown, not obeyed)
        text = safe_text(text)
        if len(text) > width:
            text = text[: max(0, width - 1)] + "…"
        return text.ljust(width) if kind == "text" else text.rjust(width)

    def render_lines(self, crop: Region) -> list[Strip]:
        """One paint of the lines in ``crop``: the widget's style and the columns shown are
        looked up once for all of them (0.1 ms per line each otherwise)."""
        self._paint = (self.rich_style, self._visible_columns(self.size.width))
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base, cols = self._paint if self._paint is not None else (self.rich_style, self._visible_columns(width))
        if y == 0:
            head = self.get_component_rich_style("tableview--header")
            hcur = self.get_component_rich_style("tableview--header-cursor")
            segs = []
            for i, (col, w) in enumerate(cols):
                title = col.title
                if self.model and self.model.sort_key == col.key:
                    title += " ▼" if self.model.descending else " ▲"
                index = self.columns.index(col)
                style = hcur if index == self.col_cursor else head
                text = self._cell(title, w, col.kind if col.kind == "text" else "num")
                segs.append(Segment(text + (" " if i < len(cols) - 1 else ""), base + style))
            return Strip(segs).extend_cell_length(width, base + head).crop(0, width)
        index = self.top + y - 1
        if self.model is None or index >= len(self.model):
            if self.model is not None and len(self.model) == 0 and y == 1:
                msg = "no rows match the filter" if self.model.pattern else "no rows"
                dim = self.get_component_rich_style("tableview--dim")
                return Strip([Segment(msg.ljust(width)[:width], base + dim)])
            return Strip([Segment(" " * width, base)])
        line = self._row_text(int(self.model.order[index]), cols, width)
        style = base + self.get_component_rich_style("tableview--cursor") if index == self.cursor else base
        return Strip([Segment(line, style)])

    def _row_text(self, frame_row: int, cols: list[tuple[Column, int]], width: int) -> str:
        """Frame row ``frame_row`` formatted in ``cols``, ``width`` cells (cached)."""
        key = (frame_row, width, tuple((col.key, col.kind, w) for col, w in cols))
        line = self._lines.get(key)
        if line is None:
            assert self.model is not None
            row = self.model.cells(frame_row, [col.key for col, _ in cols])
            parts = []
            for col, w in cols:
                custom = self.formatters.get(col.key)
                value = custom(row[col.key]) if custom is not None else fmt_value(row[col.key], col.kind)
                if col.key in NAME_COLUMNS and len(value) > w:  # kernel names; prose is cut at its end
                    value = self._short(col.key, w).get(value) or shorten_name(value, w)
                parts.append(self._cell(value, w, col.kind))
            line = " ".join(parts).ljust(width)[:width]
            if len(self._lines) >= 2048:  # a few pages of rows in a few layouts
                self._lines.clear()
            self._lines[key] = line
        return line
