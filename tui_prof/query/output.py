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
import math
import uuid
from typing import Any, BinaryIO, TextIO

from tui_prof.guard import jsonout
from tui_prof.query.engine import Result, Stream
from tui_prof.render.fmt import shorten
from tui_prof.render.safe import md_text, safe_text

CELL_WIDTH = 100  # the text table cuts a longer cell (CSV, JSON and Markdown keep it whole)
TEXT_ROWS = 10_000  # rows the text table shows at most (it aligns columns, so it holds them); CSV and JSON stream every row
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


def _whole(result: Result) -> Stream:
    return Stream(result.columns, result.types, iter([result.rows]))


def write_json(stream: Stream, out: TextIO) -> None:
    """A JSON list of row objects, written batch by batch (strict JSON through
    :mod:`tui_prof.guard.jsonout`, ASCII only, so no control character reaches a terminal)."""
    names = unique_columns(stream.columns)
    first = True
    out.write("[")
    for batch in stream.batches:
        for row in batch:
            out.write("\n  " if first else ",\n  ")
            out.write(jsonout.dumps({name: json_value(value) for name, value in zip(names, row)}, ensure_ascii=True))
            first = False
    out.write("\n]\n" if not first else "]\n")


def to_json(result: Result) -> str:
    buffer = io.StringIO()
    write_json(_whole(result), buffer)
    return buffer.getvalue()


def text_result(stream: Stream, limit: int = TEXT_ROWS) -> tuple[Result, int]:
    """The first ``limit`` rows of ``stream`` for the text table, and the number of rows in all."""
    rows: list[tuple] = []
    total = 0
    for batch in stream.batches:
        total += len(batch)
        rows.extend(batch[: max(0, limit - len(rows))])
    return Result(stream.columns, stream.types, rows), total


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
        return jsonout.dumps(json_value(value))
    return str(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def to_text(result: Result, total: int | None = None) -> str:
    """An aligned text table (numbers right-aligned), every cell sanitised, long cells cut;
    the row count below it (``total``: the result's rows when ``result`` holds only the first)."""
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
    count = len(result.rows) if total is None else total
    shown = f"; the first {len(result.rows)} shown: use LIMIT, --csv or --json" if count > len(result.rows) else ""
    out.append(f"({count} row{'s' if count != 1 else ''}{shown})")
    return "\n".join(out) + "\n"


def _csv_value(value: Any) -> Any:
    """A value for the CSV writer: numbers exact (``repr``), NULL empty, lists and structs as JSON."""
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple)):
        return jsonout.dumps(json_value(value))
    return value


def write_csv(stream: Stream, out: TextIO, terminal: bool = False) -> None:
    """RFC 4180 CSV with a header row, written batch by batch; NULL as an empty field, floats
    as Python writes them (exact). ``terminal``: strings shown through ``safe_text``."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([safe_text(c) if terminal else c for c in stream.columns])
    for batch in stream.batches:
        if terminal:
            writer.writerows([safe_text(v) if isinstance(v, str) else _csv_value(v) for v in row] for row in batch)
        else:
            writer.writerows([v if isinstance(v, (int, str, float)) else _csv_value(v) for v in row] for row in batch)


def write_csv_arrow(reader: Any, out: BinaryIO) -> None:
    """CSV of an Arrow record-batch stream, written by pyarrow (exact values, strings
    quoted); a result holding lists or structs, which pyarrow cannot write as CSV, goes
    through :func:`write_csv` instead."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    schema = reader.schema
    if any(pa.types.is_nested(field.type) for field in schema):
        batches = (list(zip(*(column.to_pylist() for column in batch.columns))) for batch in reader)
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        write_csv(Stream(schema.names, [str(f.type) for f in schema], batches), text)
        text.detach()
        return
    with pcsv.CSVWriter(out, schema) as writer:
        for batch in reader:
            writer.write_batch(batch)


def to_csv(result: Result, terminal: bool = False) -> str:
    buffer = io.StringIO()
    write_csv(_whole(result), buffer, terminal)
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
