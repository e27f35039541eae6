"""A query result as text for a terminal, CSV, strict JSON or Markdown.

Strings in a result may come from the trace (kernel, marker, file names): the text table
and Markdown pass them through :mod:`tui_prof.render.safe`; JSON keeps the exact string
(escaped by JSON, ``ensure_ascii``, so no control character reaches a terminal); CSV keeps
it exact for the tools that read it, and shows control characters visibly only when written
to a terminal (``terminal=True``).
"""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import io
import json
import math
import uuid
from typing import Any

from tui_prof.query.engine import Result
from tui_prof.render.fmt import shorten
from tui_prof.render.safe import md_text, safe_text

CELL_WIDTH = 100  # the text table cuts a longer cell (CSV, JSON and Markdown keep it whole)
NULL = "NULL"


def unique_columns(columns: list[str]) -> list[str]:
    """Column names made unique for JSON objects (``a``, ``a_2``, ...)."""
    taken: set[str] = set()
    out = []
    for name in columns:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def json_value(value: Any) -> Any:
    """A DuckDB value as strict JSON data: NaN and infinities as null, decimals as numbers,
    times as ISO 8601 text, bytes as base64, lists and structs element by element."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def rows_json(result: Result) -> list[dict[str, Any]]:
    """The result as a list of row objects (the ``--json`` output and the MCP ``sql`` tool)."""
    names = unique_columns(result.columns)
    return [{name: json_value(value) for name, value in zip(names, row)} for row in result.rows]


def to_json(result: Result) -> str:
    return json.dumps(rows_json(result), indent=2, allow_nan=False) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return NULL
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4f}".rstrip("0").rstrip(".") if abs(value) >= 1e-4 else f"{value:.4g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(json_value(value), ensure_ascii=False)
    return str(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def to_text(result: Result) -> str:
    """An aligned text table (numbers right-aligned), every cell sanitised, long cells cut;
    the row count below it."""
    if not result.columns:
        return "OK\n"
    header = [shorten(safe_text(c), CELL_WIDTH) for c in result.columns]
    body = [[shorten(safe_text(_cell(v)), CELL_WIDTH) for v in row] for row in result.rows]
    right = [bool(result.rows) and all(_numeric(row[i]) or row[i] is None for row in result.rows) for i in range(len(header))]
    widths = [max([len(header[i])] + [len(r[i]) for r in body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in body]
    out.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    return "\n".join(out) + "\n"


def to_csv(result: Result, terminal: bool = False) -> str:
    """RFC 4180 CSV with a header row; NULL as an empty field."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    show = safe_text if terminal else str
    writer.writerow([show(c) for c in result.columns])
    for row in result.rows:
        writer.writerow(["" if v is None else show(_cell(v)) for v in row])
    return buffer.getvalue()


def to_markdown(result: Result) -> str:
    """A GitHub table, every cell escaped (no link, HTML or cell break can start in a name)."""
    if not result.columns:
        return "OK\n"
    lines = ["| " + " | ".join(md_text(c, line_start=False) for c in result.columns) + " |"]
    lines.append(
        "|" + "|".join("---:" if result.rows and all(_numeric(r[i]) or r[i] is None for r in result.rows) else "---" for i in range(len(result.columns))) + "|"
    )
    for row in result.rows:
        lines.append("| " + " | ".join(md_text(_cell(v), line_start=False) for v in row) + " |")
    return "\n".join(lines) + "\n"
