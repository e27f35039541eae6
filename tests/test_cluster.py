"""``tuiprof summary --cluster`` on a real Dask LocalCluster of 2 worker processes (issue 36):
the merged document equals the in-process summary's sections; a worker killed mid-run has
its rank retried; a rank that keeps killing its worker is named, the rest summarised; an
unreachable scheduler is one line and exit status 1, a missing Dask one line and 2
(as every missing extra)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")  # the [cluster] extra (in the test extra: CI runs these)

import cloudpickle

from tui_prof import cluster
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, comparable
from tui_prof.cli import main
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the tasks below run in the workers


def generated(root: Path, fmt: str, spec: RankSpec) -> Path:
    return write_ranks(build_ranks(spec), root / fmt, fmt)


def dumped(doc: dict) -> str:
    return json.dumps(comparable(doc))


@pytest.fixture(scope="module")
def scheduler():
    """A LocalCluster of 2 worker processes shared by the fault tests (its address), with
    the policy ``--cluster local`` sets: a task whose worker died runs once more, and a worker
    holds only the task it runs (so a death takes no other rank with it)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}):
        lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    try:
        yield lc.scheduler_address
    finally:
        lc.close()


@pytest.mark.parametrize(
    ("fmt", "spec"),
    [
        ("csv", RankSpec(ranks=4, slow_rank=3)),
        ("kineto", RankSpec(ranks=64, iterations=2, collectives=("AllReduce", "AllGather"), slow_rank=9, hosts=2)),
    ],
    ids=["csv4", "kineto64"],
)
def test_cluster_local_equals_the_summary(tmp_path: Path, capsys, monkeypatch, fmt: str, spec: RankSpec) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path, fmt, spec)
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--cluster", "local:2"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole)
    assert merged["stragglers"]["rank"] == spec.slow_rank
    assert merged["partials"]["merged"] == spec.ranks and not merged["partials"]["failed_ranks"]
    assert any((tmp_path / "cache").rglob("*"))  # the workers wrote the per-rank cache


def test_cluster_local_on_a_folder_of_recordings_with_statistics(tmp_path: Path, capsys, monkeypatch) -> None:
    """The rocprofv3 documentation's folder (statistics files, a prefix of agent records only,
    a process spanning days: twelve recordings) on a LocalCluster: the recording ``summary``
    picks, its stats, source and warnings, byte for byte, and the same stderr lines."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = str(Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7")
    assert main(["summary", run, "--json", "--no-cache"]) == 0
    whole = capsys.readouterr()
    assert main(["summary", run, "--json", "--no-cache", "--cluster", "local:2"]) == 0
    merged = capsys.readouterr()
    assert dumped(json.loads(merged.out)) == dumped(json.loads(whole.out))
    assert [line for line in merged.err.splitlines() if "recording" in line] == [line for line in whole.err.splitlines() if "recording" in line]
    # the statistics files cover every recording: the cut process's parts leave them out and say so
    assert any("cover every recording: left out" in w for w in json.loads(merged.out)["warnings"])


def die_once(task: cluster.RankTask) -> cluster.RankResult:
    """Kills its worker process the first time it runs rank 1 (a marker file remembers)."""
    marker = Path(task.root).parent / "died"
    if task.label.startswith("rank1.") and not marker.exists():
        marker.write_text("x")
        os._exit(1)
    return cluster.rank_task(task)


def die_always(task: cluster.RankTask) -> cluster.RankResult:
    """Kills its worker process every time it runs rank 2."""
    if task.label.startswith("rank2."):
        os._exit(1)
    return cluster.rank_task(task)


def test_a_worker_killed_mid_run_has_its_rank_retried(tmp_path: Path, scheduler: str) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_cluster(tasks, DEFAULT_CATEGORY_RULES, scheduler, task=die_once)
    assert (tmp_path / "died").exists()  # the worker did die
    assert merged.failed == [] and len(merged.merge.ranks) == 4


def not_this_run() -> str:
    return "a result of another run"


def test_two_runs_on_one_scheduler_keep_their_own_results(tmp_path: Path, scheduler: str) -> None:
    """Another client holds results under the keys a run with fixed task keys would use: the
    run still gets its own ranks (its keys carry a token of their own)."""
    from distributed import Client

    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    tasks = cluster.plan(str(run), use_cache=False).tasks
    with Client(scheduler, timeout="10s") as other:
        held = [other.submit(not_this_run, key=f"tuiprof-rank-{i}", pure=False) for i in range(4)]
        other.gather(held)
        merged = cluster.summarise_cluster(tasks, DEFAULT_CATEGORY_RULES, scheduler)
        assert [f.result() for f in held] == ["a result of another run"] * 4  # still held by the other client
    assert merged.failed == []
    assert sorted(r["rank"] for r in merged.document(20)["ranks"]) == [0, 1, 2, 3]


def test_the_wait_table_is_sent_once_not_in_every_path_task(tmp_path: Path, scheduler: str, monkeypatch, capsys) -> None:
    """The second pass's tasks go to Dask without the run's wait table (scattered once to the
    workers and given back there): the merged document is the same as in one process."""
    from distributed import Client, Future

    sent: list[tuple[list, dict]] = []
    real_map = Client.map

    def recording_map(self, func, *iterables, **kwargs):
        sent.append((list(iterables[0]), {k: v for k, v in kwargs.items() if k in ("table", "run")}))
        return real_map(self, func, *iterables, **kwargs)

    monkeypatch.setattr(Client, "map", recording_map)
    spec = RankSpec(ranks=4, iterations=3, slow_rank=2)
    run = generated(tmp_path, "kineto", spec)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", scheduler]) == 0
    doc = json.loads(capsys.readouterr().out)
    paths = [(items, extra) for items, extra in sent if items and isinstance(items[0], cluster.PathTask)]
    assert len(paths) == 1 and len(paths[0][0]) == 4
    items, extra = paths[0]
    assert all(t.table is None for t in items) and isinstance(extra["table"], Future)
    assert doc["critical_path"]["ranks_on_path"]["rank"] == spec.slow_rank  # the waits reached the workers
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    assert dumped(doc) == dumped(json.loads(capsys.readouterr().out))


def test_a_rank_that_kills_its_worker_twice_is_named(tmp_path: Path, scheduler: str) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    tasks = cluster.plan(str(run), use_cache=False).tasks
    merged = cluster.summarise_cluster(tasks, DEFAULT_CATEGORY_RULES, scheduler, task=die_always)
    assert [label for label, _ in merged.failed] == ["rank2.pt.trace.json.gz"]
    assert "KilledWorker" in merged.failed[0][1]
    doc = merged.document(20)
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 3]
    assert doc["partials"]["failed_ranks"][0]["label"] == "rank2.pt.trace.json.gz"


def test_a_broken_rank_file_is_named_on_the_cluster(tmp_path: Path, scheduler: str, capsys) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=3))
    broken = run / "rank0.pt.trace.json.gz"
    broken.write_bytes(broken.read_bytes()[:200])  # recognised by its head, cut short
    (run / "rank9.pt.trace.json").write_text("{not json")  # recognised by nothing: the scan's error
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", scheduler]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [f["label"] for f in doc["partials"]["failed_ranks"]] == ["rank0.pt.trace.json.gz"]
    assert sorted(r["rank"] for r in doc["ranks"]) == [1, 2]
    assert "rank rank0.pt.trace.json.gz failed" in captured.err
    assert "rank9.pt.trace.json: not recognised" in captured.err


def test_ctrl_c_cancels_the_tasks(tmp_path: Path, scheduler: str) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    tasks = cluster.plan(str(run), use_cache=False).tasks

    def interrupt(stage: str, done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cluster.summarise_cluster(tasks, DEFAULT_CATEGORY_RULES, scheduler, progress=interrupt)
    # the scheduler holds no task of this run any more
    from distributed import Client

    with Client(scheduler) as client:
        assert not [k for k in client.who_has() if str(k).startswith("tuiprof-rank-")]


def test_unreachable_scheduler_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    import socket

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = generated(tmp_path, "csv", RankSpec(ranks=2))
    assert main(["summary", str(run), "--no-cache", "--cluster", f"tcp://127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in err


def test_without_dask_cluster_says_so(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    run = generated(tmp_path, "csv", RankSpec(ranks=2))
    assert main(["summary", str(run), "--no-cache", "--cluster", "local:2"]) == 2  # as every missing extra
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'tuiprof[cluster]'" in err


def test_check_on_the_cluster_equals_check(tmp_path: Path, scheduler: str, capsys) -> None:
    """``check --cluster``: each rank's checks run in the workers; the merged tuiprof.check/1
    document and the exit status equal the in-process ``check --json`` (a cut rank: 5)."""
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    broken = run / "rank3.pt.trace.json.gz"
    broken.write_bytes(broken.read_bytes()[:200])
    assert main(["check", str(run), "--json", "--no-cache"]) == 5
    alone = capsys.readouterr().out
    assert main(["check", str(run), "--json", "--no-cache", "--cluster", scheduler]) == 5
    assert capsys.readouterr().out == alone
    assert json.loads(alone)["issues"][0]["affects"]["files"] == [str(broken)]


def test_a_rank_whose_worker_died_is_a_file_not_loaded_in_the_check(tmp_path: Path, scheduler: str) -> None:
    """A rank lost with its worker twice: the merged check report names its file (degraded),
    which a report of the other ranks alone would not."""
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    planned = cluster.plan(str(run), use_cache=False)
    merged = cluster.summarise_cluster(planned.tasks, DEFAULT_CATEGORY_RULES, scheduler, task=die_always)
    merged.planned = planned
    record = cluster.check_report(merged, str(run)).record()
    assert record["degraded"]
    (issue,) = record["issues"]
    assert issue["code"] == "file-unreadable" and issue["affects"]["files"] == [str(run / "rank2.pt.trace.json.gz")]
    assert "KilledWorker" in issue["message"]
