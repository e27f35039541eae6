"""``--cluster pool:N`` survives a worker process that dies (issue 36): the pool is started
again, the ranks that were running are retried once each alone, and a rank whose process
dies twice is named failed while the rest is summarised (no Dask needed)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tui_prof import cluster
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, comparable, merge_partials, rank_partials, run_label
from tui_prof.loaders import load_path
from tui_prof.model import RunSet
from tui_prof.synth.ranks import RankSpec, write_ranks_streaming

pytestmark = pytest.mark.timeout(300)
SPEC = RankSpec(ranks=6, slow_rank=4)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pool") / "kineto"
    write_ranks_streaming(SPEC, root, "kineto")
    return root


def die_once(task: cluster.RankTask) -> cluster.RankResult:
    """Kills its worker process the first time it runs rank 1 (a marker file remembers)."""
    marker = Path(os.environ["DIE_MARKER"])
    if task.label.startswith("rank1.") and not marker.exists():
        marker.write_text("x")
        os._exit(1)
    return cluster.rank_task(task)


def die_always(task: cluster.RankTask) -> cluster.RankResult:
    """Kills its worker process every time it runs rank 2."""
    if task.label.startswith("rank2."):
        os._exit(1)
    return cluster.rank_task(task)


def sigkill_on_0(task: cluster.RankTask) -> cluster.RankResult:
    """SIGKILLs its worker process every time it runs rank 0 (as the kernel's OOM killer would)."""
    if task.label.startswith("rank0."):
        os.kill(os.getpid(), signal.SIGKILL)
    return cluster.rank_task(task)


def raise_on_3(task: cluster.RankTask) -> cluster.RankResult:
    if task.label.startswith("rank3."):
        raise ValueError("rank 3 cannot be read")
    return cluster.rank_task(task)


def test_a_worker_killed_mid_run_has_its_rank_retried(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIE_MARKER", str(tmp_path / "died"))
    tasks = cluster.plan(str(run), use_cache=False).tasks
    seen: list[tuple[int, int]] = []
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, lambda s, d, t: seen.append((d, t)) if s == "ranks" else None, task=die_once)
    assert (tmp_path / "died").exists()  # the worker did die
    assert merged.failed == [] and len(merged.merge.ranks) == SPEC.ranks
    assert seen[-1] == (SPEC.ranks, SPEC.ranks) and [d for d, _ in seen] == list(range(1, SPEC.ranks + 1))
    # the merged sections equal those of the whole run merged in this process
    runset = load_path(str(run), use_cache=False)
    whole = merge_partials(
        rank_partials(runset), DEFAULT_CATEGORY_RULES, load=lambda label: RunSet(runset.root, [r for r in runset.runs if run_label(r) == label])
    )
    assert comparable(merged.document(20)) == comparable(whole) and whole["critical_path"]["processes"]


def test_a_rank_that_kills_its_worker_twice_is_named(run: Path) -> None:
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, task=die_always)
    assert [label for label, _ in merged.failed] == ["rank2.pt.trace.json.gz"]
    assert "died twice" in merged.failed[0][1]
    doc = merged.document(20)
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 3, 4, 5]
    assert doc["stragglers"]["rank"] == SPEC.slow_rank
    assert doc["partials"]["failed_ranks"] == [{"label": "rank2.pt.trace.json.gz", "reason": merged.failed[0][1]}]


def test_a_rank_whose_worker_is_sigkilled_is_named(run: Path) -> None:
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, task=sigkill_on_0)
    assert [label for label, _ in merged.failed] == ["rank0.pt.trace.json.gz"]
    assert sorted(r["rank"] for r in merged.document(20)["ranks"]) == [1, 2, 3, 4, 5]


def test_a_rank_that_raises_twice_is_named(run: Path) -> None:
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, task=raise_on_3)
    assert merged.failed == [("rank3.pt.trace.json.gz", "ValueError: rank 3 cannot be read")]
    assert len(merged.merge.ranks) == SPEC.ranks - 1


PATH_TASK = cluster.path_task  # the real one, where a test puts fail_path_of_2 in its place


def fail_path_of_2(task: cluster.PathTask) -> cluster.PathResult:
    if task.label.startswith("rank2."):
        raise ValueError("rank 2 cannot be read again")
    return PATH_TASK(task)


def test_a_rank_whose_path_task_fails_is_named_in_the_critical_path(run: Path) -> None:
    """The second pass fails for one rank (twice): the critical path says which rank it lacks
    and is built from the others; the first pass's sections are whole."""
    tasks = cluster.plan(str(run), use_cache=False).tasks
    seen: list[str] = []
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, lambda s, _d, _t: seen.append(s), paths=fail_path_of_2)
    doc = merged.document(20)
    assert seen.count("ranks") == seen.count("paths") == SPEC.ranks
    section = doc["critical_path"]
    assert [f["label"] for f in section["failed_ranks"]] == ["rank2.pt.trace.json.gz"] and "cannot be read again" in section["failed_ranks"][0]["reason"]
    assert [p["process"] for p in section["processes"]] == [f"rank{r}" for r in range(SPEC.ranks) if r != 2]
    assert merged.failed == [] and len(doc["ranks"]) == SPEC.ranks


def test_the_cli_names_a_rank_without_a_critical_path(run: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import json

    from tui_prof.cli import main

    monkeypatch.setattr(cluster, "path_task", fail_path_of_2)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert "rank rank2.pt.trace.json.gz: no critical path (ValueError: rank 2 cannot be read again)" in captured.err
    assert [f["label"] for f in doc["critical_path"]["failed_ranks"]] == ["rank2.pt.trace.json.gz"]
    assert doc["partials"]["failed_ranks"] == []  # its first pass merged: every other section has it


class _PoolBrokenAtSubmit:
    """A stand-in for ProcessPoolExecutor that runs tasks here: its first pool's first task is
    lost with its worker (the future says BrokenProcessPool) and its second submit finds the
    pool already broken and raises, as a real pool does once a dead worker is noticed."""

    made = 0

    def __init__(self, max_workers: int) -> None:
        type(self).made += 1
        self.first = type(self).made == 1
        self.submits = 0

    def submit(self, fn, arg):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        self.submits += 1
        if self.first and self.submits == 2:
            raise BrokenProcessPool("A child process terminated abruptly")
        fut: Future = Future()
        if self.first and self.submits == 1:
            fut.set_exception(BrokenProcessPool("A child process terminated abruptly"))
        else:
            fut.set_result(fn(arg))
        return fut

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def test_a_pool_found_broken_at_submit_is_started_again(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies between two submits: the task being submitted never ran and goes
    back to the queue (not charged), the one that was running is run again alone, and every
    rank is summarised."""
    monkeypatch.setattr(cluster, "ProcessPoolExecutor", _PoolBrokenAtSubmit)
    monkeypatch.setattr(_PoolBrokenAtSubmit, "made", 0)  # counted from this test's first pool (a rerun in one session too)
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_pool(tasks, DEFAULT_CATEGORY_RULES, 2, paths=None)  # the first pass's pools only
    assert merged.failed == [] and len(merged.merge.ranks) == SPEC.ranks
    assert _PoolBrokenAtSubmit.made == 3  # the broken pool, the pool for the rest, the lost rank's own
