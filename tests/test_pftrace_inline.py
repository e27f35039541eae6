"""pftrace with names written inline on every event (Perfetto writers that do not intern):
the same tables as the interned layout rocprofv3 writes, through the packet-layout fast path
and through the general path (small chunks), and exact string ids when hashes collide."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tui_prof.loaders import pftrace
from tui_prof.synth.spec import SynthSpec, build
from tui_prof.synth.write_pftrace import write_pftrace

TABLES = ("kernels", "api", "copies", "series")


@pytest.fixture(scope="module")
def synth():
    return build(SynthSpec(iterations=12, kernels_per_iteration=6, streams=2, gpus=2, sync="per_launch", seed=5))


def _values(run, table: str) -> pd.DataFrame:
    """A table with category columns as text (the two layouts may number names differently)."""
    frame = getattr(run, table).copy()
    for col in frame.columns:
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            frame[col] = frame[col].astype(str)
    return frame


@pytest.mark.parametrize("layout,clear_every", [("queue", None), ("stream", 97)])
def test_inline_names_give_the_interned_tables(tmp_path, synth, layout, clear_every):
    interned = write_pftrace(synth, tmp_path / "a.pftrace", layout=layout, clear_every=clear_every)
    inline = write_pftrace(synth, tmp_path / "b.pftrace", layout=layout, clear_every=clear_every, names="inline")
    assert inline.stat().st_size > interned.stat().st_size  # names repeated on every event
    want, problem_a = pftrace.read_trace(interned)
    got, problem_b = pftrace.read_trace(inline)
    small, problem_c = pftrace.read_trace(inline, chunk_bytes=4093)  # packets split across chunks: general path too
    assert problem_a is problem_b is problem_c is None
    assert len(got.kernels) == synth.expected.dispatches
    by_name = (got.kernels["end"] - got.kernels["start"]).groupby(got.kernels["name"].astype(str)).agg(["count", "sum"]).sort_index()
    assert by_name["count"].tolist() == synth.expected.kernels.sort_index()["calls"].tolist()
    assert by_name["sum"].tolist() == synth.expected.kernels.sort_index()["total_ns"].tolist()
    for table in TABLES:
        pd.testing.assert_frame_equal(_values(got, table), _values(want, table))
        pd.testing.assert_frame_equal(_values(small, table), _values(want, table))


def test_block_ids_exact_when_every_hash_collides(monkeypatch):
    names = [b"hipLaunchKernel_", b"hipMemcpyAsync__", b"hipLaunchKernel_", b"hipStreamSync___", b"hipMemcpyAsync__"]
    block = np.frombuffer(b"".join(names), dtype=np.uint8).reshape(len(names), 16)
    monkeypatch.setattr(pftrace, "_HASH_MULTIPLIERS", np.zeros_like(pftrace._HASH_MULTIPLIERS))  # every key 0
    decoder = pftrace._Decoder()
    ids = decoder._block_ids(block)
    assert [decoder.strings[i] for i in ids.tolist()] == [n.decode() for n in names]
    short = np.frombuffer(b"tidkndtid", dtype=np.uint8).reshape(3, 3)  # one word: the key is the bytes
    assert [decoder.strings[i] for i in decoder._block_ids(short).tolist()] == ["tid", "knd", "tid"]
