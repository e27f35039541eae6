"""Per-rank partials (analysis.partials, issue 36): a merge of per-rank partials equals the
in-process summary's merged sections byte for byte; the process-pool path and
``summary --cluster pool:N`` give the same document."""

from __future__ import annotations

import json
import pickle
import random
import shutil
from pathlib import Path

import pytest

from tui_prof.analysis.api import MERGED_SECTIONS, SummaryOptions, build_summary, comparable, merge_partials, rank_partials
from tui_prof.cli import main
from tui_prof.loaders import load_path
from tui_prof.model import RunSet
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.timeout(300)


def dumped(doc: dict) -> str:
    return json.dumps(comparable(doc), sort_keys=False)


def partials_of(runset: RunSet) -> list:
    """Each process reduced alone, as a worker reduces the rank it loaded."""
    out = []
    for run in runset.runs:
        out += rank_partials(RunSet(root=runset.root, runs=[run]))
    return out


def generated(root: Path, fmt: str, spec: RankSpec) -> Path:
    return write_ranks(build_ranks(spec), root / fmt, fmt)


SPECS = {
    # 4 ranks, rocprofv3 CSV, a straggler, one collective type
    "csv4": ("csv", RankSpec(ranks=4, slow_rank=2)),
    # 64 ranks on two hosts (clocks apart), two collective types, kernels beside the collectives
    "kineto64": ("kineto", RankSpec(ranks=64, collectives=("AllReduce", "AllGather"), slow_rank=37, overlap_kernels=1, hosts=2)),
    # 256 ranks, one iteration (small), a straggler; built in memory (not written and parsed: fast)
    "memory256": ("memory", RankSpec(ranks=256, iterations=1, collectives=("ReduceScatter",), slow_rank=200)),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_merged_partials_equal_the_summary_on_generated_ranks(tmp_path: Path, name: str) -> None:
    fmt, spec = SPECS[name]
    runset = build_ranks(spec).runset() if fmt == "memory" else load_path(generated(tmp_path, fmt, spec), use_cache=False)
    assert len(runset.runs) == spec.ranks
    doc = build_summary(runset, SummaryOptions(logs=False))
    parts = partials_of(runset)
    merged = merge_partials(parts)
    assert list(merged) == list(MERGED_SECTIONS)
    assert dumped(merged) == dumped(doc)
    # the generator's straggler, found from the partials (a check independent of the summary)
    if spec.slow_rank is not None:
        assert merged["stragglers"]["rank"] == spec.slow_rank
    assert merged["kernels"]["dispatches"] == sum(len(r.kernels) for r in runset.runs)
    # in any order
    random.Random(7).shuffle(parts)
    assert dumped(merge_partials(parts)) == dumped(doc)


@pytest.mark.parametrize("folder", ["kineto/ranks", "kineto/h200"])
def test_merged_partials_equal_the_summary_on_recorded_runs(folder: str) -> None:
    """Real traces: two sampled ranks (HTA's trace_filter) and five H200 processes with
    operators (op-first categories, distinct durations: the median and stddev)."""
    runset = load_path(DATA / folder, use_cache=False)
    assert len(runset.runs) >= 2
    doc = build_summary(runset, SummaryOptions(logs=False))
    merged = merge_partials(partials_of(runset))
    assert dumped(merged) == dumped(doc)
    assert any(h["stddev_ns"] > 0 for h in merged["hotspots"])


def test_listed_gaps_merge_with_ties(tmp_path: Path) -> None:
    """Three gaps listed of many equally long ones (every rank idles alike): the merge picks
    the same ranks' gaps as the whole run's top-N (ties in rank, then agent and start order)."""
    runset = load_path(generated(tmp_path, "kineto", RankSpec(ranks=8, slow_rank=5)), use_cache=False)
    doc = build_summary(runset, SummaryOptions(logs=False, max_gaps=3, gap_threshold_ns=1000))
    parts = []
    for run in runset.runs:
        parts += rank_partials(RunSet(root=runset.root, runs=[run]), threshold_ns=1000, max_gaps=3)
    random.Random(3).shuffle(parts)
    merged = merge_partials(parts, threshold_ns=1000, max_gaps=3)
    durations = [g["duration_ns"] for g in doc["gaps"]["listed"]]
    assert len(durations) == 3 and doc["gaps"]["count"] > 3 and len(set(durations)) < 3  # ties decided the list
    assert merged["gaps"] == doc["gaps"] and merged["gpu"] == doc["gpu"]


def test_partials_are_small_and_serialisable(tmp_path: Path) -> None:
    """A partial pickles (for a worker's result) and grows with distinct durations (and the
    listed gaps, at most ``max_gaps``), not with dispatches: ten times the iterations
    (dispatches), about the same size."""
    sizes = []
    for iterations in (3, 30):
        runset = load_path(generated(tmp_path / str(iterations), "kineto", RankSpec(ranks=2, iterations=iterations)), use_cache=False)
        parts = rank_partials(RunSet(root=runset.root, runs=runset.runs[:1]), max_gaps=3)
        blob = pickle.dumps(parts[0])
        assert pickle.loads(blob).record == parts[0].record
        sizes.append(len(blob))
        assert parts[0].dispatches == len(runset.runs[0].kernels)
    assert sizes[1] < sizes[0] * 1.5


def test_pool_and_cli_pool_equal_the_summary(tmp_path: Path, capsys, monkeypatch) -> None:
    """The process-pool path (one machine, many ranks) through ``summary --cluster pool:2``."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path, "kineto", RankSpec(ranks=6, collectives=("AllReduce", "Broadcast"), slow_rank=4))
    assert main(["summary", str(run), "--json", "--no-cache", "--max-gaps", "4", "--gap-threshold", "2us"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--cluster", "pool:2", "--max-gaps", "4", "--gap-threshold", "2us"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole)
    assert merged["partials"] == {"ranks": 6, "merged": 6, "failed_ranks": [], "sections": list(MERGED_SECTIONS)}
    # the workers wrote the per-rank cache: a second run reads it and says the same
    assert any((tmp_path / "cache").rglob("*"))
    assert main(["summary", str(run), "--json", "--cluster", "pool:2", "--max-gaps", "4", "--gap-threshold", "2us"]) == 0
    assert json.loads(capsys.readouterr().out) == merged


def test_a_broken_rank_is_named_and_the_rest_summarised(tmp_path: Path, capsys) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=4))
    broken = run / "rank2.pt.trace.json.gz"
    broken.write_bytes(broken.read_bytes()[:200])  # cut: the gzip stream ends early
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["partials"]["merged"] == 3
    assert [f["label"] for f in doc["partials"]["failed_ranks"]] == ["rank2.pt.trace.json.gz"]
    assert "rank rank2.pt.trace.json.gz failed" in captured.err
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 3]


def test_cluster_refuses_what_needs_the_whole_run(tmp_path: Path, capsys) -> None:
    run = generated(tmp_path, "csv", RankSpec(ranks=2))
    assert main(["summary", str(run), "--md", "--cluster", "pool:1"]) == 2
    assert "--md needs the whole run" in capsys.readouterr().err
    assert main(["open", str(run), "--cluster", "pool:1", "--recording", "0"]) == 2
    assert "--recording needs the whole run" in capsys.readouterr().err
    assert main(["summary", str(run), "--cluster", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "local[:N]" in err


def test_hostile_kernel_name_stays_plain_in_the_merged_text(tmp_path: Path, capsys) -> None:
    run = generated(tmp_path, "kineto", RankSpec(ranks=2))
    for trace in run.glob("*.json.gz"):
        import gzip

        text = gzip.decompress(trace.read_bytes()).decode()
        text = text.replace("Cijk_Alik_Bljk", "Cijk\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J")
        trace.write_bytes(gzip.compress(text.encode()))
    assert main(["summary", str(run), "--no-cache", "--cluster", "pool:1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "Top kernels" in out


def test_split_units_are_refused(tmp_path: Path, capsys) -> None:
    """A work unit that is not one process's files (here a rocpd database beside the ranks
    would be): the partials path says so instead of summarising part of the run."""
    run = generated(tmp_path, "kineto", RankSpec(ranks=2))
    shutil.copy(DATA / "smi" / next(p.name for p in (DATA / "smi").iterdir() if p.suffix == ".csv"), run / "smi.csv")
    status = main(["summary", str(run), "--no-cache", "--cluster", "pool:1"])
    err = capsys.readouterr().err
    assert status == 1 and "without --cluster" in err


def test_one_process_in_two_formats_is_merged_once(tmp_path: Path, capsys) -> None:
    """The same process written as rocprofv3 CSV and as a rocpd database: a whole-run load keeps
    one; the partials path merges one and names the other unit ("counted once")."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    for sub, fmt in (("a", "csv"), ("b", "rocpd")):
        cmd = [sys.executable, "-m", "tui_prof.synth", str(tmp_path / "run" / sub), "--format", fmt, "--dispatches", "200", "--pid", "77"]
        subprocess.run(cmd, check=True, cwd=repo, capture_output=True)
    run = tmp_path / "run"
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:1"]) == 0
    captured = capsys.readouterr()
    merged = json.loads(captured.out)
    assert len(whole["processes"]) == 1 and merged["partials"]["merged"] == 1
    assert merged["kernels"] == whole["kernels"] and merged["kernels"]["dispatches"] == 200
    assert [f["reason"].endswith("counted once") for f in merged["partials"]["failed_ranks"]] == [True]
    assert "counted once" in captured.err


def test_one_process_in_several_traces_is_named_left_out(capsys) -> None:
    """h200's four Kineto traces of pid 427 (separate recordings of one process): a whole-run
    load merges them into one process, which partials cannot; the partials path keeps one
    and names the other three, never counting the process four times."""
    assert main(["summary", str(DATA / "kineto" / "h200"), "--json", "--no-cache", "--cluster", "pool:1"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["partials"]["ranks"] == 5 and doc["partials"]["merged"] == 2
    reasons = [f["reason"] for f in doc["partials"]["failed_ranks"]]
    assert len(reasons) == 3 and all("pid 427" in r and r.endswith("left out") for r in reasons)
    assert sorted(p["pid"] for p in doc["processes"]) == [426, 427]
