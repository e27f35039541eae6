"""The multi-rank generator written rank by rank (``write_ranks_streaming``) gives the same
files and the same answers as the in-memory ``build_ranks`` + ``write_ranks``."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks, write_ranks_streaming


def _content(path: Path) -> bytes:
    return gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()  # gzip headers hold a time


@pytest.mark.parametrize("fmt", ["kineto", "csv"])
@pytest.mark.parametrize(
    "spec",
    [
        RankSpec(ranks=5, iterations=3, collectives=("AllReduce", "AllGather"), overlap_kernels=1, hosts=2, slow_rank=2),
        RankSpec(ranks=3, iterations=2, slow_rank=None),
    ],
)
def test_streaming_writes_the_same_run(tmp_path: Path, spec: RankSpec, fmt: str) -> None:
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    ranks = build_ranks(spec)
    write_ranks(ranks, whole, fmt)
    expected = write_ranks_streaming(spec, streamed, fmt)
    assert expected == ranks.expected
    files = sorted(p.relative_to(whole) for p in whole.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(streamed) for p in streamed.rglob("*") if p.is_file())
    assert len(files) >= spec.ranks
    for f in files:
        assert _content(whole / f) == _content(streamed / f), f


def test_answers_match_the_construction() -> None:
    """Independent of the generator's code: a straggler computing 50 % longer makes every
    other rank wait exactly the difference of its compute per collective instance."""
    spec = RankSpec(ranks=4, iterations=3, compute_kernels=2, compute_ns=100_000, slow_rank=1, slow_pct=50)
    exp = build_ranks(spec).expected
    assert exp.straggler == [1, 1, 1]
    assert exp.compute_ns == [600_000, 900_000, 600_000, 600_000]
    assert all(w == [100_000, 0, 100_000, 100_000] for w in exp.wait_ns)
    assert exp.communication_ns[1] == 3 * spec.collective_ns


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="csv or kineto"):
        write_ranks_streaming(RankSpec(), tmp_path, "rocpd")
