"""Seeded mutations of one file's bytes. ``mutate(rng, name, data, corpus)`` returns the new
bytes and a short description ("truncate@1234", "csv.swap_columns 2<->5", ...).

Classes: byte-level (truncate at a random, line, SQLite-page or gzip-member offset; bit
flips; insert/delete/duplicate a range; splice a chunk of another seed file), line/CSV-level
(duplicate/delete/shuffle lines, drop/add/swap columns, hostile field values, a huge name),
JSON-level (wrong types, deleted keys, deep nesting, NaN/negative/huge numbers, reordered
lists) and SQLite-level (drop/rename a table, NULL/text/huge/negative values, end before
start, duplicate rows, corrupt pages). A gzip file is mutated either as raw bytes or as its
decompressed content, recompressed.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sqlite3
import tempfile
import zlib

HOSTILE_VALUES = (
    "",
    "NaN",
    "nan",
    "-1",
    "-0",
    "inf",
    "-inf",
    "1e308",
    "-9223372036854775808",
    "9223372036854775807",
    "18446744073709551616",
    "99999999999999999999999999",
    "0x10",
    "1.5",
    '"',
    '""',
    "N/A",
    "null",
    "true",
    "\u00fc\u540d",
    "\ufeff",
    "\x00",
    "a" * 5000,
    "Agent 99999",
    "GPU -1",
    "KERNEL_DISPATCH_UNKNOWN",
)
HOSTILE_BYTES = (b"\xff\xfe", b"\x00\x00\x00", b"\xc3\x28", b"\r", b"\n\n", b",", b'"', b"\xef\xbb\xbf", b"\x1f\x8b")


def _pick_offset(rng: random.Random, data: bytes) -> int:
    """An offset from one of the classes: anywhere, the first bytes, a line boundary
    (and one past it), a 512/4096-byte page boundary (SQLite pages), near the end."""
    n = len(data)
    if n == 0:
        return 0
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(n + 1)
    if kind == 1:
        return rng.randrange(min(n, 64) + 1)
    if kind == 2:
        lines = [i + 1 for i in range(n) if data[i] == 10] if n < 2_000_000 else []
        if lines:
            return min(n, rng.choice(lines) + rng.choice((-1, 0, 0, 1)))
    if kind == 3:
        page = rng.choice((512, 1024, 4096, 4096, 100))
        k = rng.randrange(n // page + 1)
        return min(n, k * page + rng.choice((0, 0, 1, -1, 16)))
    if kind == 4:
        return max(0, n - rng.randrange(1, 64))
    return rng.randrange(n + 1)


# --------------------------------------------------------------------------- bytes


def truncate(rng, data, corpus):
    at = _pick_offset(rng, data)
    return data[:at], f"truncate@{at}"


def flip(rng, data, corpus):
    if not data:
        return b"\x00", "flip(empty)"
    buf = bytearray(data)
    count = rng.choice((1, 1, 2, 4, 16))
    for _ in range(count):
        i = _pick_offset(rng, data) % len(buf)
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf), f"flip x{count}"


def insert(rng, data, corpus):
    at = _pick_offset(rng, data)
    if rng.random() < 0.5:
        chunk = rng.choice(HOSTILE_BYTES)
    else:
        chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    return data[:at] + chunk + data[at:], f"insert {len(chunk)}B@{at}"


def delete(rng, data, corpus):
    a = _pick_offset(rng, data)
    b = min(len(data), a + rng.choice((1, 2, 8, 100, 4096)))
    return data[:a] + data[b:], f"delete {a}:{b}"


def duplicate(rng, data, corpus):
    a = _pick_offset(rng, data)
    b = min(len(data), a + rng.choice((1, 16, 200, 4096)))
    return data[:b] + data[a:b] + data[b:], f"duplicate {a}:{b}"


def splice(rng, data, corpus):
    other = rng.choice(corpus) if corpus else data
    a = _pick_offset(rng, other)
    chunk = other[a : a + rng.choice((16, 256, 4096))]
    at = _pick_offset(rng, data)
    return data[:at] + chunk + data[at + rng.choice((0, len(chunk))) :], f"splice {len(chunk)}B@{at}"


BYTE_MUTATIONS = (truncate, truncate, flip, flip, insert, delete, duplicate, splice)


# --------------------------------------------------------------------------- lines / CSV


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _cells(line: bytes) -> list[bytes]:
    return line.split(b",")


def line_dup(rng, data, corpus):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return b"\n".join(lines), f"line.dup {i}"


def line_del(rng, data, corpus):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    del lines[i]
    return b"\n".join(lines), f"line.del {i}"


def line_shuffle(rng, data, corpus):
    lines = _lines(data)
    head, body = lines[:1], lines[1:]
    rng.shuffle(body)
    return b"\n".join(head + body), "line.shuffle (unsorted rows)"


def col_swap(rng, data, corpus):
    lines = _lines(data)
    width = max(len(_cells(l)) for l in lines)
    i, j = rng.randrange(width), rng.randrange(width)
    header_only = rng.random() < 0.3
    out = []
    for k, line in enumerate(lines):
        cells = _cells(line)
        if (k == 0 or not header_only) and i < len(cells) and j < len(cells):
            cells[i], cells[j] = cells[j], cells[i]
        out.append(b",".join(cells))
    return b"\n".join(out), f"csv.swap_columns {i}<->{j}{' header only' if header_only else ''}"


def col_drop(rng, data, corpus):
    lines = _lines(data)
    width = max(len(_cells(l)) for l in lines)
    i = rng.randrange(width)
    scope = rng.choice(("all", "header", "body"))
    out = []
    for k, line in enumerate(lines):
        cells = _cells(line)
        if i < len(cells) and (scope == "all" or (scope == "header") == (k == 0)):
            del cells[i]
        out.append(b",".join(cells))
    return b"\n".join(out), f"csv.drop_column {i} ({scope})"


def col_add(rng, data, corpus):
    lines = _lines(data)
    value = rng.choice(HOSTILE_VALUES[:20]).encode()
    out = [l + b",Extra_Column" if k == 0 else (l + b"," + value if l else l) for k, l in enumerate(lines)]
    if rng.random() < 0.5:
        out = [out[0].replace(b",Extra_Column", b"")] + out[1:]  # extra cells without a header
    return b"\n".join(out), "csv.add_column"


def field_value(rng, data, corpus):
    lines = _lines(data)
    rows = [k for k, l in enumerate(lines) if l.strip()]
    if not rows:
        return data + b"NaN", "field(empty file)"
    count = rng.choice((1, 1, 3, 50))
    value = b""
    for _ in range(count):
        k = rng.choice(rows)
        cells = _cells(lines[k])
        c = rng.randrange(len(cells))
        value = rng.choice(HOSTILE_VALUES).encode("utf-8")
        if rng.random() < 0.1:
            value = b"\xff\xfe\x80bad"
        cells[c] = value if rng.random() < 0.5 else b'"' + value + b'"'
        lines[k] = b",".join(cells)
    return b"\n".join(lines), f"csv.field x{count} e.g. {value[:20]!r}"


def end_before_start(rng, data, corpus):
    """Swap two numeric cells of a row that look like timestamps (> 10^9)."""
    lines = _lines(data)
    for _ in range(len(lines)):
        k = rng.randrange(len(lines))
        cells = _cells(lines[k])
        big = [i for i, c in enumerate(cells) if c.strip(b'" ').isdigit() and len(c.strip(b'" ')) >= 10]
        if len(big) >= 2:
            i, j = big[-2], big[-1]
            cells[i], cells[j] = cells[j], cells[i]
            lines[k] = b",".join(cells)
            return b"\n".join(lines), f"csv.end_before_start row {k}"
    return data, "csv.end_before_start (no timestamps)"


def huge_name(rng, data, corpus):
    """Replace one quoted field (usually a kernel name) with a 10 MB string."""
    size = 10 * 1024 * 1024
    at = data.find(b'"', rng.randrange(max(1, len(data))))
    if at < 0:
        return data + b"," + b"k" * size, "huge field appended"
    end = data.find(b'"', at + 1)
    end = len(data) if end < 0 else end
    return data[: at + 1] + b"K" * size + data[end:], "huge_name 10MB"


def header_only(rng, data, corpus):
    return _lines(data)[0] + b"\n", "header only"


def claim_rows(rng, data, corpus):
    """Repeat the last full data line many times (a file that claims far more rows)."""
    lines = [l for l in _lines(data) if l.strip()]
    if len(lines) < 2:
        return data, "claim_rows (no body)"
    count = max(1, min(20000, (20 << 20) // (len(lines[-1]) + 1)))  # at most ~20 MB more
    return data + (lines[-1] + b"\n") * count, f"claim_rows +{count}"


TEXT_MUTATIONS = (line_dup, line_del, line_shuffle, col_swap, col_drop, col_add, field_value, field_value, end_before_start, header_only)
RARE_TEXT_MUTATIONS = (huge_name, claim_rows)


# --------------------------------------------------------------------------- JSON


def _walk(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:50]):
            yield from _walk(v, path + (i,))


def _set(root, path, value):
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _wrong(rng, value):
    choices = [None, "text", -1, 2**64, -(2**63) - 1, 1.5, float("nan"), float("inf"), [], {}, True, [1, 2], {"x": 1}, "\u00fc\u540d", "9" * 40]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        choices += [-value, value * 10**12, 0]
    if isinstance(value, list):
        choices += [value[::-1], value + value[:3], value[: len(value) // 2]]
    return rng.choice(choices)


def json_mutate(rng, data, corpus):
    try:
        root = json.loads(data)
    except (ValueError, RecursionError):
        return flip(rng, data, corpus)
    nodes = [p for p, _ in _walk(root) if p]
    op = rng.randrange(5)
    if not nodes:
        return json.dumps([root]).encode(), "json.wrap"
    path = rng.choice(nodes)
    node = root
    for key in path:
        node = node[key]
    if op == 0:
        _set(root, path, _wrong(rng, node))
        desc = f"json.wrong_type {'/'.join(map(str, path))[:60]}"
    elif op == 1:
        parent = root
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        desc = f"json.delete {'/'.join(map(str, path))[:60]}"
    elif op == 2:
        deep = node
        depth = rng.choice((100, 2000, 100000))
        for _ in range(depth):
            deep = [deep] if rng.random() < 0.5 else {"a": deep}
        _set(root, path, deep)
        desc = f"json.deep_nesting {depth}"
    elif op == 3:
        lists = [p for p, v in _walk(root) if isinstance(v, list) and len(v) > 1]
        if lists:
            p = rng.choice(lists)
            target = root
            for key in p:
                target = target[key]
            if p:
                shuffled = list(target)
                rng.shuffle(shuffled)
                shuffled += shuffled[:2]  # duplicate ids
                _set(root, p, shuffled)
        desc = "json.shuffle_dup_list"
    else:
        _set(root, path, "K" * rng.choice((1000, 10 * 1024 * 1024)))
        desc = "json.huge_string"
    try:
        text = json.dumps(root)
    except (RecursionError, ValueError):
        return data[: len(data) // 2], desc + " (unserialisable: truncated instead)"
    return text.encode(), desc


# --------------------------------------------------------------------------- SQLite


def sqlite_mutate(rng, data, corpus):
    """Change a copy of the database with SQL (or corrupt a page) and return its bytes."""
    fd, path = tempfile.mkstemp(suffix=".db")
    os.close(fd)
    try:
        with open(path, "wb") as fh:
            fh.write(data)
        con = sqlite3.connect(path)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
            views = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='view'")]
            if not tables:
                raise sqlite3.DatabaseError("no tables")
            table = rng.choice(tables)
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            op = rng.randrange(8)
            if op == 0:
                con.execute(f'DROP TABLE "{table}"')
                desc = f"sql.drop {table}"
            elif op == 1 and views:
                view = rng.choice(views)
                con.execute(f'DROP VIEW "{view}"')
                desc = f"sql.drop_view {view}"
            elif op == 2:
                con.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_x"')
                desc = f"sql.rename {table}"
            elif op == 3 and cols:
                col = rng.choice(cols)
                value = rng.choice((None, "text", -1, 2**63 - 1, -(2**63), 1.5e300, b"\xff\xfe", "", "\u00fc\u540d"))
                con.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid % ? = 0', (value, rng.choice((1, 2, 7))))
                desc = f"sql.set {table}.{col}={value!r:.20}"
            elif op == 4:
                start = [c for c in cols if "start" in c.lower() or "begin" in c.lower()]
                end = [c for c in cols if "end" in c.lower() or "stop" in c.lower()]
                if start and end:
                    con.execute(f'UPDATE "{table}" SET "{start[0]}" = "{end[0]}", "{end[0]}" = "{start[0]}"')
                desc = f"sql.end_before_start {table}"
            elif op == 5:
                try:
                    con.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}" LIMIT 5')
                except sqlite3.DatabaseError:
                    pass
                desc = f"sql.duplicate_rows {table}"
            elif op == 6:
                con.execute(f'DELETE FROM "{table}" WHERE rowid % 2 = 0')
                desc = f"sql.delete_rows {table}"
            else:
                con.execute(f'CREATE TABLE "other_schema_{rng.randrange(99)}" (a, b)')
                for t in tables:
                    con.execute(f'DROP TABLE IF EXISTS "{t}"') if rng.random() < 0.5 else None
                desc = "sql.other_schema"
            con.commit()
        finally:
            con.close()
        with open(path, "rb") as fh:
            out = fh.read()
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError, MemoryError):  # a damaged copy (stacked mutation)
        return flip(rng, data, corpus)
    finally:
        os.unlink(path)
    return out, desc


def corrupt_page(rng, data, corpus):
    """Overwrite part of one SQLite page (not the 100-byte header) with junk."""
    page = int.from_bytes(data[16:18], "big") if len(data) > 100 else 4096
    page = 65536 if page == 1 else (page or 4096)
    pages = max(1, len(data) // page)
    k = rng.randrange(pages)
    start = k * page + (100 if k == 0 else 0) + rng.randrange(page // 2)
    junk = bytes(rng.randrange(256) for _ in range(rng.choice((4, 64, 512))))
    return data[:start] + junk + data[start + len(junk) :], f"sqlite.corrupt_page {k}"


# --------------------------------------------------------------------------- dispatcher


def kind_of(name: str, data: bytes) -> str:
    if data.startswith(b"SQLite format 3"):
        return "sqlite"
    stripped = data.lstrip(b"\xef\xbb\xbf \r\n\t")[:1]
    if stripped in (b"{", b"["):
        return "json"
    if name.endswith((".csv", ".txt")):
        return "text"
    return "binary"


def mutate(rng: random.Random, name: str, data: bytes, corpus: list[bytes]) -> tuple[bytes, str]:
    """One mutation of ``data`` (the file called ``name``)."""
    if data[:2] == b"\x1f\x8b" and rng.random() < 0.6:
        try:
            plain = gzip.decompress(data)
        except (OSError, EOFError, ValueError, zlib.error):
            plain = None
        if plain is not None:
            inner, desc = mutate(rng, name.removesuffix(".gz"), plain, corpus)
            return gzip.compress(inner, 6, mtime=0), "gz(" + desc + ")"
    kind = kind_of(name, data)
    r = rng.random()
    if r < 0.45:
        fn = rng.choice(BYTE_MUTATIONS)
    elif kind == "sqlite":
        fn = sqlite_mutate if r < 0.85 else corrupt_page
    elif kind == "json":
        fn = json_mutate if r < 0.97 else rng.choice(RARE_TEXT_MUTATIONS)
    elif kind == "text" or b"," in data[:4096]:
        fn = rng.choice(TEXT_MUTATIONS) if r < 0.97 else rng.choice(RARE_TEXT_MUTATIONS)
    else:
        fn = rng.choice(BYTE_MUTATIONS)
    out, desc = fn(rng, data, corpus)
    if rng.random() < 0.15:  # stack a second mutation
        out, more = mutate(rng, name, out, corpus)
        desc += " + " + more
    return out, desc
