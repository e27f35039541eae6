"""rocpd loader read paths (issue 8): the big tables read in id chunks on several reader
threads (each with its own connection) give the same Run as one query per table on the main
connection, with id gaps, NULLs, REAL/TEXT values and extreme integers in the ranges; reader
connections are closed afterwards, and a damaged page read on a reader thread is a one-line
error naming the file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from tui_prof.loaders import rocpd
from tui_prof.loaders.base import DetectedFile, IssueSink
from tui_prof.model.run import TABLES


def _same(a: list, b: list) -> None:
    assert [r.meta.pid for r in a] == [r.meta.pid for r in b]
    for x, y in zip(a, b):
        assert repr(x.meta) == repr(y.meta) and repr(x.agents) == repr(y.agents) and x.warnings == y.warnings
        for name in TABLES:
            pd.testing.assert_frame_equal(getattr(x, name), getattr(y, name), check_exact=True)


def _table(con: sqlite3.Connection, view: str) -> str:
    return con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?", (view + "_%",)).fetchone()[0]


@pytest.fixture(scope="module")
def odd_db(tmp_path_factory) -> Path:
    """A generated database (3000 dispatches, 6000 regions) with id gaps and odd values."""
    from tui_prof.synth.spec import SynthSpec, build
    from tui_prof.synth.write_rocpd import write_rocpd

    synth = build(SynthSpec(iterations=300, kernels_per_iteration=10, streams=2, sync="per_launch"))
    path = write_rocpd(synth, tmp_path_factory.mktemp("odd") / "synthhost" / f"{synth.spec.pid}_results.db")
    con = sqlite3.connect(path)
    k, r, e = (_table(con, v) for v in ("rocpd_kernel_dispatch", "rocpd_region", "rocpd_event"))
    for sql in (
        f"DELETE FROM {k} WHERE id % 7 = 3",  # gaps: some id ranges hold fewer rows
        f"DELETE FROM {r} WHERE id BETWEEN 1000 AND 1700",  # a range with no row at all
        f"UPDATE {k} SET tid = NULL, private_segment_size = NULL WHERE id % 5 = 0",
        f"UPDATE {k} SET event_id = NULL WHERE id % 11 = 0",
        f"UPDATE {e} SET stack_id = NULL WHERE id % 13 = 0",
        f"UPDATE {k} SET grid_size_x = 12.75 WHERE id = 600",  # REAL: read again with CAST
        f"UPDATE {k} SET queue_id = 'abc' WHERE id = 1201",  # TEXT
        f"UPDATE {r} SET end = x'3132' WHERE id = 2500",  # BLOB
        f"UPDATE {k} SET grid_size_y = 9223372036854775807, grid_size_z = -9223372036854775808 WHERE id = 2998",
        f"UPDATE {r} SET start = -1 WHERE id = 5999",
    ):
        con.execute(sql)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("threads,chunk_rows", [(1, 257), (2, 257), (3, 1000), (5, 2_000_000)])
def test_split_reads_equal_one_query(monkeypatch, odd_db, threads, chunk_rows):
    monkeypatch.setattr(rocpd, "THREADS", 1)
    one = rocpd.load_db(odd_db)
    monkeypatch.setattr(rocpd, "THREADS", threads)
    monkeypatch.setattr(rocpd, "CHUNK_ROWS", chunk_rows)
    split = rocpd.load_db(odd_db)
    _same(one, split)
    _same(one, rocpd.load_db(odd_db, physical=False))
    kernels = one[0].kernels
    assert len(kernels) == 3000 - len(range(3, 3001, 7))
    assert kernels["grid_x"].max() > 0 and (kernels["tid"] == -1).any() and (kernels["correlation_id"] == -1).any()
    assert kernels["grid_y"].max() == 2**63 - 1 and kernels["grid_z"].min() == -(2**63)


def _open_fds_to(path: Path) -> int:
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}") == str(path.resolve())
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_reader_connections_are_closed(monkeypatch, odd_db):
    monkeypatch.setattr(rocpd, "THREADS", 3)
    monkeypatch.setattr(rocpd, "CHUNK_ROWS", 500)
    before = sorted(p.name for p in odd_db.parent.iterdir())
    rocpd.load_db(odd_db)
    assert _open_fds_to(odd_db) == 0
    assert sorted(p.name for p in odd_db.parent.iterdir()) == before  # no journal, WAL or shm file


def test_damaged_page_on_a_reader_thread_is_one_line_error(monkeypatch, odd_db, tmp_path):
    """Zeroed pages in the middle of the file (region and event rows): the error raised on a
    reader thread reaches the caller as one line naming the file; no connection stays open."""
    data = bytearray(odd_db.read_bytes())
    page = 4096
    middle = len(data) // page // 2
    data[middle * page : (middle + 8) * page] = b"\x00" * (8 * page)
    path = tmp_path / "damaged_results.db"
    path.write_bytes(bytes(data))
    monkeypatch.setattr(rocpd, "THREADS", 3)
    monkeypatch.setattr(rocpd, "CHUNK_ROWS", 300)
    issues = IssueSink()
    runs = rocpd.load([DetectedFile(path, "rocpd", "rocpd_db", "")], issues)
    assert runs == [] and len(issues.issues) == 1
    issue = issues.issues[0]
    assert issue.path == str(path) and "\n" not in issue.message and "damaged" in issue.message
    assert _open_fds_to(path) == 0
