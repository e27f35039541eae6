"""Per-rank partials (analysis.partials, issue 36): a merge of per-rank partials equals the
in-process summary's merged sections byte for byte; the process-pool path and
``summary --cluster pool:N`` give the same document."""

from __future__ import annotations

import json
import pickle
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_prof.analysis.api import (
    DEFAULT_CATEGORY_RULES,
    MERGED_SECTIONS,
    SummaryOptions,
    build_summary,
    check_partial,
    check_run,
    comparable,
    median_of,
    merge_partials,
    merged_check,
    merged_counts,
    merged_sections,
    percentile_of,
    rank_partials,
    value_counts,
)
from tui_prof.cli import main
from tui_prof.loaders import load_path
from tui_prof.model import RunSet
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.timeout(300)


# the sections compared: the merged ones but ``logs`` (the driver's scan of the run directory,
# not in a merge of partials alone; compared where the CLI made both)
COMPARED = [key for key in MERGED_SECTIONS if key != "logs"]


def dumped(doc: dict) -> str:
    return json.dumps(comparable(doc, COMPARED), sort_keys=False)


def partials_of(runset: RunSet) -> list:
    """Each process reduced alone, as a worker reduces the rank it loaded."""
    out = []
    for run in runset.runs:
        out += rank_partials(RunSet(root=runset.root, runs=[run]))
    return out


def loader(runset: RunSet):
    """A rank by its label, as the driver loads the slowest rank again (its run alone)."""
    from tui_prof.analysis.api import run_label

    return lambda label: RunSet(runset.root, [run for run in runset.runs if run_label(run) == label])


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
    merged = merge_partials(parts, load=loader(runset))
    assert list(merged) == [key for key in MERGED_SECTIONS if key != "logs"]  # the run directory's logs: the driver's (cluster.py)
    assert dumped(merged) == dumped(doc)
    # the generator's straggler, found from the partials (a check independent of the summary)
    if spec.slow_rank is not None:
        assert merged["stragglers"]["rank"] == spec.slow_rank
    assert merged["kernels"]["dispatches"] == sum(len(r.kernels) for r in runset.runs)
    # in any order
    random.Random(7).shuffle(parts)
    assert dumped(merge_partials(parts, load=loader(runset))) == dumped(doc)


@pytest.mark.parametrize(
    "folder",
    [
        "kineto/ranks",
        "kineto/h200",
        "rocprofv3_csv/rocprofv3-docs-rocm7",
        "rocprofv3_csv/rocprofv3-docs-rocm6.3",
        "rocprofv3_csv/hpctraining-extracted",
        "legacy_rocprof/hip-programming",
        "legacy_rocprof",
        "rocprofv2",
    ],
)
def test_merged_partials_equal_the_summary_on_recorded_runs(folder: str) -> None:
    """Real traces: two sampled ranks (HTA's trace_filter) and five H200 processes with
    operators (op-first categories, distinct durations: the median and stddev); rocprofv3
    and legacy rocprof runs with the profiler's statistics (stats, their checks against the
    trace, the load's warnings and skipped files: stats, warnings, source)."""
    runset = load_path(DATA / folder, use_cache=False)
    assert len(runset.runs) >= 2
    doc = build_summary(runset, SummaryOptions(logs=False))
    merged = merge_partials(partials_of(runset), load=loader(runset), issues=runset.issues)
    assert dumped(merged) == dumped(doc)
    assert any(h["stddev_ns"] > 0 for h in merged["hotspots"]) or not folder.startswith("kineto")
    # independent of the summary: the API table's calls are the traced calls
    if merged["api"]["source"] == "trace" and top_all(merged):
        assert sum(r["calls"] for r in merged["api"]["rows"]) == sum(len(r.api) for r in runset.runs)


def top_all(doc: dict) -> bool:
    """Every API function is listed (no domain cut at --top)."""
    domains = [r["domain"] for r in doc["api"]["rows"]]
    return all(domains.count(d) < 20 for d in set(domains))


def test_api_statistics_stand_in_when_no_call_was_traced() -> None:
    """No traced API call: the api section comes from the processes' API statistics files,
    and the kernel statistics stand in for the kernels, as in one process."""
    runset = load_path(DATA / "rocprofv3_summary", use_cache=False)
    doc = build_summary(runset, SummaryOptions(logs=False))
    merged = merge_partials(partials_of(runset), load=loader(runset), issues=runset.issues)
    assert dumped(merged) == dumped(doc)
    assert merged["api"]["source"] == "stats" and merged["api"] == doc["api"]
    assert merged["api"]["rows"] and all(r["calls"] > 0 for r in merged["api"]["rows"])
    assert merged["hotspots_source"] == "stats" and merged["source"]["skipped"] == doc["source"]["skipped"] != []


def test_legacy_statistics_tables_combine_as_their_files_say() -> None:
    """Four legacy rocprof processes with a kernel statistics file each: the merged table's
    calls and total are those of the four files, parsed here exactly (csv, integers), without
    rocprof's "<barrier packet>" pseudo-kernel (a packet's wait, which the loader leaves out)."""
    import csv

    runset = load_path(DATA / "legacy_rocprof", use_cache=False)
    merged = merge_partials(partials_of(runset), load=loader(runset), issues=runset.issues, top=None)
    (table,) = [t for t in merged["stats"]["tables"] if t["key"] == "kernel_stats"]
    files = sorted((DATA / "legacy_rocprof").rglob("*.stats.csv"))
    rows = [row for f in files for row in csv.DictReader(f.open(newline="")) if row["Name"] != "<barrier packet>"]
    assert table["processes"] == len(files) == 4
    assert table["calls"] == sum(int(r["Calls"]) for r in rows)
    assert table["total_ns"] == sum(int(r["TotalDurationNs"]) for r in rows)
    assert len(table["rows"]) == len({r["Name"] for r in rows})


def _kernel_rows(text: str) -> list[list[str]]:
    """The KERNEL_DISPATCH table's rows of a rocprofv3 --summary file (name, calls, ns, ...)."""
    part = text.split("ROCPROFV3 KERNEL_DISPATCH SUMMARY:", 1)[1].split("ROCPROFV3 ", 1)[0]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in part.splitlines() if line.startswith("| ")]
    return [c for c in cells if c[1] == "KERNEL_DISPATCH"]


def test_a_statistics_only_run_of_two_processes_merges_its_stand_in(tmp_path: Path, capsys) -> None:
    """Two rocprofv3 --summary files (no trace): the second cut by a row (its Percentage
    column says so) and with a hostile kernel name. ``summary --cluster pool:2`` equals the
    whole-run summary: the statistics stand in for kernels, hotspots and categories, the cut
    table is warned about; the kernel table's calls and time are the two files' rows, parsed
    here; the text shows no escape sequence."""
    text = (DATA / "rocprofv3_summary" / "summary.txt").read_text()
    hostile = "multiply\x1b]52;c;ZXZpbA==\x07_kernel"
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("| subtract_kernel")).replace("multiply_kernel", hostile)
    for sub, body in (("a", text), ("b", cut.encode().decode("unicode_escape"))):
        (tmp_path / "run" / sub).mkdir(parents=True)
        (tmp_path / "run" / sub / "summary.txt").write_text(body)
    run = tmp_path / "run"
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole) and merged["logs"] == whole["logs"]
    assert merged["hotspots_source"] == "stats" and merged["partials"]["merged"] == 2
    rows = _kernel_rows(text) + _kernel_rows(cut.encode().decode("unicode_escape"))
    (table,) = [t for t in merged["stats"]["tables"] if t["key"] == "kernel_stats"]
    assert table["calls"] == merged["kernels"]["dispatches"] == sum(int(r[2]) for r in rows) == 56
    assert table["total_ns"] == merged["kernels"]["total_ns"] == sum(int(r[3]) for r in rows)
    assert table["cut"] and any("the table is cut" in w for w in merged["warnings"])
    assert sum(merged["categories"].values()) == table["total_ns"]
    assert main(["summary", str(run), "--no-cache", "--cluster", "pool:2"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "Top kernels (from rocprofv3 --summary; no trace in this run)" in out


def test_listed_gaps_merge_with_ties(tmp_path: Path) -> None:
    """Three gaps listed of many equally long ones (every rank idles alike): the merge picks
    the same ranks' gaps as the whole run's top-N (ties in rank, then agent and start order)."""
    runset = load_path(generated(tmp_path, "kineto", RankSpec(ranks=8, slow_rank=5)), use_cache=False)
    doc = build_summary(runset, SummaryOptions(logs=False, max_gaps=3, gap_threshold_ns=1000))
    parts = []
    for run in runset.runs:
        parts += rank_partials(RunSet(root=runset.root, runs=[run]), threshold_ns=1000, max_gaps=3)
    random.Random(3).shuffle(parts)
    merged = merge_partials(parts, threshold_ns=1000, max_gaps=3, load=loader(runset))
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
    shutil.copy(DATA / "analysis" / "logs" / "rocprofv3_pmc.log", run / "rocprofv3_pmc.log")  # a known profiler error: the logs section
    assert main(["summary", str(run), "--json", "--no-cache", "--max-gaps", "4", "--gap-threshold", "2us"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--cluster", "pool:2", "--max-gaps", "4", "--gap-threshold", "2us"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole)
    assert merged["partials"] == {"ranks": 6, "merged": 6, "failed_ranks": [], "sections": list(MERGED_SECTIONS)}
    assert merged["logs"] == whole["logs"] and merged["logs"][0]["path"].endswith("rocprofv3_pmc.log")
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
    assert main(["open", str(run), "--cluster", "pool:1", "--recording", "2"]) == 2  # as without --cluster: one recording
    assert "--recording 2: the run holds one recording" in capsys.readouterr().err
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
    # the second pass's findings and critical paths name the kernel too: plain as well
    assert "Findings" in out and "Critical path (rank0)" in out and "Cijk\\x1b]52;c;ZXZpbA==" in out


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


def test_profiler_sessions_of_one_pid_are_processes_of_their_own(capsys) -> None:
    """h200's four Kineto traces of pid 427 are four profiler sessions: a whole-run load keeps
    them apart (loaders/sessions.py), and so does the merge of their partials, which applies
    the assembly's own rule (loaders.detect.merge_plan); the merge of every rank equals the
    in-process summary of the whole folder (``summary`` then picks one recording of them: the
    next test) and its check report."""
    from tui_prof.cluster import plan, summarise_pool

    h200 = DATA / "kineto" / "h200"
    planned = plan(str(h200), use_cache=False)
    merged = summarise_pool(planned.tasks, DEFAULT_CATEGORY_RULES, 1)
    merged.planned = planned
    doc = merged.document(20)
    assert doc["partials"]["ranks"] == 5 and doc["partials"]["merged"] == 5 and doc["partials"]["failed_ranks"] == []
    runset = load_path(h200, use_cache=False)
    whole = build_summary(runset, SummaryOptions(logs=False))
    assert dumped(doc) == dumped(whole)
    # independent of the summary: every kernel of the five files, counted once
    assert doc["kernels"]["dispatches"] == sum(len(r.kernels) for r in runset.runs) == 8850
    assert sorted(p["pid"] for p in doc["processes"]) == [426, 427, 427, 427, 427]
    # the operator table merged with recorded shapes and FLOP rates
    assert any("shapes" in r and "flops" in r for r in doc["hotspots_by_operator"])
    assert main(["check", str(h200), "--json", "--no-cache"]) == 5
    alone = capsys.readouterr().out
    assert main(["check", str(h200), "--json", "--no-cache", "--cluster", "pool:1"]) == 5
    assert capsys.readouterr().out == alone


def test_source_and_warnings_name_what_the_scan_and_the_ranks_could_not_read(tmp_path: Path, capsys, monkeypatch) -> None:
    """A cut rank file, a file no loader recognises, a README and an empty file: the merged
    ``source`` (errors, skipped) and ``warnings`` equal the whole-run summary's, cold and from
    the partial cache; they name exactly the files put there."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path, "kineto", RankSpec(ranks=4, slow_rank=1))
    broken = run / "rank2.pt.trace.json.gz"
    broken.write_bytes(broken.read_bytes()[:200])
    (run / "rank9.pt.trace.json").write_text("{not json")
    (run / "README.txt").write_text("notes")
    (run / "empty.csv").write_text("")
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    for _ in range(2):  # the second run merges the three good ranks from the partial cache
        assert main(["summary", str(run), "--json", "--cluster", "pool:2"]) == 0
        merged = json.loads(capsys.readouterr().out)
        assert dumped(merged) == dumped(whole)
    source = merged["source"]
    assert [e["path"] for e in source["errors"]] == [str(run / "rank9.pt.trace.json"), str(broken)]
    assert [e["path"] for e in source["skipped"]] == [str(run / "README.txt"), str(run / "empty.csv")]
    assert [w for w in merged["warnings"] if w.startswith(str(run))] == [f"{e['path']}: {e['message']}" for e in source["errors"]]


def _quiet(err: str) -> list[str]:
    """stderr without progress lines."""
    return [line for line in err.splitlines() if not any(w in line for w in ("ranks ", "loading", "scanning", "analysing", "done"))]


def test_a_bad_recording_number_ends_before_the_second_pass(tmp_path: Path, capsys, monkeypatch) -> None:
    """``--recording 99`` on a folder of several recordings: the usage error comes right after
    the first pass, no rank is loaded again for the critical path."""
    from tui_prof import cluster

    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    made: list[int] = []
    real = cluster.path_tasks
    monkeypatch.setattr(cluster, "path_tasks", lambda merged, tasks: made.append(len(tasks)) or real(merged, tasks))
    assert main(["summary", str(DATA / "kineto/h200"), "--json", "--cluster", "pool:2", "--recording", "99"]) == 2
    assert "--recording 99: the run holds" in capsys.readouterr().err
    assert made == []
    assert main(["summary", str(DATA / "kineto/h200"), "--json", "--cluster", "pool:2"]) == 0  # a good pick: one second pass
    capsys.readouterr()
    assert len(made) == 1


@pytest.mark.parametrize(
    ("folder", "cache"),
    [("rocprofv3_csv/rocprofv3-docs-rocm7", False), ("kineto/h200", True)],
)
def test_cluster_summarises_the_recording_summary_picks(tmp_path: Path, capsys, monkeypatch, folder: str, cache: bool) -> None:
    """A folder of several recordings (issue 32): ``summary --cluster`` picks the recording
    ``summary`` picks (most dispatches, or ``--recording N``), with the same stderr lines, and
    its document equals the whole-run summary of that recording; a process cut into several
    recordings (rocm7's one CSV prefix spans days) is cut the same way in its task. The
    chosen ranks are read again: through their cached partials (h200) or loaded (rocm7)."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = str(DATA / folder)
    flags = [] if cache else ["--no-cache"]
    for pick in ([], ["--recording", "2"], ["--recording", "99"]):
        status = main(["summary", run, "--json", *flags, *pick])
        whole = capsys.readouterr()
        assert main(["summary", run, "--json", "--cluster", "pool:2", *flags, *pick]) == status
        merged = capsys.readouterr()
        assert _quiet(merged.err) == _quiet(whole.err)
        assert "separate recordings" in merged.err or status == 2
        if status == 2:  # a bad N: one line, as in one process
            assert "--recording 99: the run holds" in merged.err and not merged.out
            continue
        doc = json.loads(merged.out)
        assert dumped(doc) == dumped(json.loads(whole.out)) and doc["logs"] == json.loads(whole.out)["logs"]
        assert doc["partials"]["ranks"] > doc["partials"]["merged"] and not doc["partials"]["failed_ranks"]
    if folder == "kineto/h200":  # independent: recording 1, train_sync's kernels, counted in its file here
        import gzip

        assert main(["summary", run, "--json", "--cluster", "pool:2"]) == 0
        doc = json.loads(capsys.readouterr().out)
        events = json.loads(gzip.decompress((DATA / folder / "train_sync.pt.trace.json.gz").read_bytes()))["traceEvents"]
        assert doc["kernels"]["dispatches"] == sum(1 for e in events if e.get("cat") == "kernel" and e.get("ph") == "X") == 2730
        assert [p["label"] for p in doc["processes"]] == ["train_sync"]


@pytest.mark.parametrize("folder", ["rocprofv3_csv/rocprofv3-docs-rocm7", "rocprofv3_summary"])
def test_check_cluster_on_units_without_a_trace(capsys, folder: str) -> None:
    """Every unit a load makes a process of is a rank (a prefix of agent records only, a
    --summary file): ``check --cluster`` gives the whole-run report and exit status."""
    run = str(DATA / folder)
    status = main(["check", run, "--json", "--no-cache"])
    alone = capsys.readouterr().out
    assert main(["check", run, "--json", "--no-cache", "--cluster", "pool:2"]) == status
    assert capsys.readouterr().out == alone


def test_a_process_cut_into_two_recordings_keeps_both_parts() -> None:
    """A rank (pid 4037) whose second half runs three hours later: its task gives a partial per
    recording, which are not taken for one another's fragments; the driver's pick and its
    listing equal ``pick_recording``'s, and the chosen recording, merged again alone, equals
    the whole-run summary of that recording. Independent: recording 2 holds exactly the
    kernels moved here."""
    from tui_prof.analysis.api import pick_recording
    from tui_prof.analysis.pathpartials import run_in_process
    from tui_prof.cluster import Plan, RankResult, RankTask, _merge, one_recording

    runset = load_path(DATA / "kineto" / "ranks", use_cache=False)
    run = runset.runs[0]
    later = 3 * 3600 * 10**9
    moved = 0
    for name in ("kernels", "api", "copies", "markers"):
        table = run.table(name)
        if len(table) and "start" in table.columns:
            half = table["start"] >= table["start"].median()
            moved += int(half.sum()) if name == "kernels" else 0
            table.loc[half, "start"] += later
            table.loc[half, "end"] += later
    results = {f"t{i}": RankResult(f"t{i}", rank_partials(RunSet(runset.root, [r]), split=True), [], runset.root, ()) for i, r in enumerate(runset.runs)}
    assert [p.split_of for p in results["t0"].partials] == [("sampled_rank-0", 1), ("sampled_rank-0", 2)]
    tasks = [RankTask(runset.root, label, (), False) for label in results]

    def rerun(chosen: list, keep: set | None = None):
        out = _merge(chosen, DEFAULT_CATEGORY_RULES, keep)
        for task in chosen:
            out.add(results[task.label])
        return out

    merged = rerun(tasks)
    merged.planned = Plan(tasks, [])
    assert merged.failed == [] and len(merged.merge.ranks) == 3
    for wanted in (None, 2):
        got, pick = one_recording(merged, wanted, rerun)
        choice = pick_recording(runset, wanted)
        assert (pick.count, pick.chosen, pick.listing) == (choice.count, choice.chosen, choice.listing) and pick.count == 2
        got.merge.load = loader(choice.runset)
        # with the second pass over the chosen recording's processes (the critical path, the findings)
        doc = merged_sections(got.merge, 20, lambda plan, m=got.merge, c=choice: run_in_process(m, plan, loader(c.runset), DEFAULT_CATEGORY_RULES))
        assert dumped(doc) == dumped(build_summary(choice.runset, SummaryOptions(logs=False)))
        if wanted == 2:
            assert doc["kernels"]["dispatches"] == moved and [p["label"] for p in doc["processes"]] == ["sampled_rank-0 · part 2"]


# --- the integrity report from per-rank parts --------------------------------------------------


def _merged_report(runset: RunSet) -> dict:
    parts = [check_partial(runset.root, run) for run in runset.runs]
    return merged_check(parts, runset.errors, runset.root).record()


def test_check_parts_merge_into_the_whole_report() -> None:
    """The report merged from per-process parts equals check_run's on real runs and on runs
    with injected cross-process issues (independent: each injected issue is found, with the
    processes it was put in)."""
    for folder in ("kineto/ranks", "kineto/h200", "rocprofv3_csv/rocprofv3-docs-rocm7", "legacy_rocprof/rocm-blogs"):
        runset = load_path(DATA / folder, use_cache=False)
        assert _merged_report(runset) == check_run(runset).record(), folder
    # a clock shift of one rank: clock-domains, built from both ranks' segments
    runset = load_path(DATA / "kineto" / "ranks", use_cache=False)
    for name in ("kernels", "api", "copies"):
        table = runset.runs[1].table(name)
        table["start"] += 86_400 * 10**9
        table["end"] += 86_400 * 10**9
    report = _merged_report(runset)
    assert report == check_run(runset).record()
    assert [i["code"] for i in report["issues"]].count("clock-domains") == 1
    # SQ_WAVES halved on one dispatch of one counter pass: multi-modal across two processes
    runset = load_path(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7", use_cache=False)
    passes = [r for r in runset.runs if "counters pid" in r.meta.label]
    shapes = [set(zip(r.kernels["name"].astype(str), r.kernels["grid_x"], r.kernels["wg_x"], strict=True)) for r in passes]
    name = sorted(shapes[0] & shapes[1])[0][0]  # the same kernel and grid in both passes
    run = passes[0]
    ids = set(run.kernels.loc[run.kernels["name"].astype(str) == name, "dispatch_id"])
    waves = run.counters["counter"].astype(str).to_numpy() == "SQ_WAVES"
    row = int(np.flatnonzero(run.counters["dispatch_id"].isin(ids).to_numpy() & waves)[0])
    run.counters.loc[row, "value"] = run.counters["value"].iat[row] / 2
    report = _merged_report(runset)
    assert report == check_run(runset).record()
    (issue,) = [i for i in report["issues"] if i["code"] == "counter-multimodal"]
    assert run.meta.label in issue["affects"]["processes"]


def test_check_cluster_equals_check_and_exit_status(tmp_path: Path, capsys) -> None:
    """``check --cluster pool:2``: the same tuiprof.check/1 document and exit status as in one
    process, clean (0) and with a cut rank file (5, file-unreadable naming it)."""
    run = generated(tmp_path, "kineto", RankSpec(ranks=4, slow_rank=1))
    for status in (0, 5):
        if status == 5:
            broken = run / "rank2.pt.trace.json.gz"
            broken.write_bytes(broken.read_bytes()[:200])
        assert main(["check", str(run), "--json", "--no-cache"]) == status
        alone = capsys.readouterr().out
        assert main(["check", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == status
        assert capsys.readouterr().out == alone
    # the summary of the other ranks: every merged section, trust labels included (the cut
    # file makes the measurement degraded), as in one process
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole) and merged["trust"]["measurement"]["trust"] == "degraded"
    issues = json.loads(alone)["issues"]
    assert [i["code"] for i in issues] == ["file-unreadable"] and issues[0]["affects"]["files"] == [str(run / "rank2.pt.trace.json.gz")]
    assert main(["check", str(run), "--cluster", "pool:1", "--recording", "1"]) == 2
    assert "--recording needs the whole run" in capsys.readouterr().err


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=-(10**12), max_value=10**12), max_size=40), min_size=1, max_size=6))
def test_quantiles_from_counts_equal_numpys(chunks: list[list[int]]) -> None:
    """The launch section's median and p90 from merged per-process counts equal numpy's over
    every value (the in-process figures), bit for bit."""
    values = np.array([v for chunk in chunks for v in chunk], dtype=np.int64)
    if not len(values):
        return
    c = merged_counts([value_counts(np.array(chunk, dtype=np.int64)) for chunk in chunks])
    assert median_of(c) == float(np.median(values))
    for q in (90, 50, 10, 99):
        assert percentile_of(c, q) == float(np.percentile(values, q))


def test_counters_and_occupancy_merge_over_processes() -> None:
    """A real rocprofv3 process with occupancy (VGPRs, LDS, workgroups) beside a twin whose
    kernels last twice as long: the merged counters blocks and the occupancy table (sorted by
    kernel time over both, cut at --top) equal the in-process ones; the twin's rows lead."""
    import copy

    runset = load_path(DATA / "rocprofv3_json", use_cache=False)
    run = runset.runs[0]
    twin = copy.deepcopy(run)
    twin.meta.pid = (run.meta.pid or 0) + 1
    twin.meta.label = run.meta.label + " twin"
    twin.kernels["end"] = twin.kernels["start"] + 2 * (twin.kernels["end"] - twin.kernels["start"])
    two = RunSet(runset.root, [run, twin])
    doc = build_summary(two, SummaryOptions(logs=False, top=7))
    merged = merge_partials(partials_of(two), top=7, load=loader(two))
    assert dumped(merged) == dumped(doc)
    assert len(merged["occupancy"]) == 7 and [b["process"] for b in merged["counters"]] == [run.meta.label, twin.meta.label]
    # independent: the longest configuration's time is the twin's own, twice the original's
    alone = merge_partials(partials_of(RunSet(runset.root, [run])), top=7)
    assert merged["occupancy"][0]["total_ns"] == 2 * alone["occupancy"][0]["total_ns"]
    assert merged["occupancy"][0]["process"] == twin.meta.label


def test_module_table_merges_over_processes() -> None:
    """A real H100 BERT trace with nn.Module scopes and a twin process: the merged module and
    operator tables equal the in-process ones, and each module's kernels are twice its own."""
    import copy

    runset = load_path(DATA / "kineto" / "h100__gaunernst_bert-small-uncased__1016001.json.gz", use_cache=False)
    run = runset.runs[0]
    twin = copy.deepcopy(run)
    twin.meta.pid = (run.meta.pid or 0) + 1
    two = RunSet(runset.root, [run, twin])
    doc = build_summary(two, SummaryOptions(logs=False, top=None))
    merged = merge_partials(partials_of(two), top=None, load=loader(two))
    assert dumped(merged) == dumped(doc)
    alone = build_summary(RunSet(runset.root, [run]), SummaryOptions(logs=False, top=None))
    assert merged["hotspots_by_module"] and {m["name"]: m["kernels"] for m in merged["hotspots_by_module"]} == {
        m["name"]: 2 * m["kernels"] for m in alone["hotspots_by_module"]
    }


def test_steps_memory_warmup_measurement_merge_with_slow_steps(tmp_path: Path, capsys) -> None:
    """Three ranks running a stepped loop (synth.steps.build_rank_steps): rank 1 computes
    slower, rank 2's extra copy is in step 4, the others' in step 6. The combined steps (the
    slowest rank's row per step), their two outliers (each described inside its slowest rank,
    which the driver loads again), the memory, the warm-up and the measurement equal the
    in-process summary's, through ``summary --cluster pool:2``; the outliers are the ones
    built in, independent of the summary."""
    from tui_prof.synth.steps import build_rank_steps
    from tui_prof.synth.write_kineto import write_kineto

    rs = build_rank_steps(outliers=(5, 5, 3))
    for r, run in enumerate(rs.runs):
        write_kineto(run, tmp_path / "run" / f"rank{r}.pt.trace.json.gz")
    run = tmp_path / "run"
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert merged["partials"]["sections"] == list(MERGED_SECTIONS)
    assert dumped(merged) == dumped(whole)
    steps = merged["steps"]
    assert [(o["label"], o["process"]) for o in steps["outliers"]] == [("train_step [4]", "rank2"), ("train_step [6]", "rank1")]
    assert [r["wall_ns"] for r in steps["steps"]] == rs.walls
    assert merged["memory"]["source"] != "none" and merged["measurement"]["processes"] == 3
    # the step options travel to the workers and to the driver's combination: as in one process
    flags = ["--warmup", "0", "--outlier-factor", "1.05", "--step", "train_step"]
    assert main(["summary", str(run), "--json", "--no-cache", *flags]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:2", *flags]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert dumped(merged) == dumped(whole)
    assert merged["steps"]["warmup_steps"] == 0 and merged["steps"]["outlier_factor"] == 1.05


def test_steps_left_out_when_no_rank_can_be_loaded_again() -> None:
    """A merge that cannot load a rank again (no ``load``) leaves out the sections that need
    the slowest rank's events, and says so by their absence; every other section is there."""
    from tui_prof.synth.steps import build_rank_steps

    runset = build_rank_steps(outliers=(5, 5, 3)).runset()
    merged = merge_partials(partials_of(runset))
    left_out = {"steps", "memory", "warmup", "measurement", "critical_path", "findings"}
    assert not left_out & set(merged)
    assert set(merged) == set(MERGED_SECTIONS) - left_out - {"logs"}
    assert all("critical_ns" not in row for row in merged["hotspots"])  # the second pass needs the ranks too
    loads: list[str] = []

    def load(label: str) -> RunSet:
        loads.append(label)
        return loader(runset)(label)

    doc = build_summary(runset, SummaryOptions(logs=False))
    again = merge_partials(partials_of(runset), load=load)
    assert dumped(again) == dumped(doc)
    assert sorted(loads[:2]) == ["rank1", "rank2"]  # the two outliers' slowest ranks, for the steps
    assert set(loads[2:]) == {"rank0", "rank1", "rank2"}  # then each rank, for its critical path


def test_one_session_split_over_two_units_is_named_left_out(tmp_path: Path, capsys) -> None:
    """The same process (pid 77, same times, a format that names no session) written as two
    rocprofv3 CSV prefixes: a whole-run load merges them into one process; the partials
    cannot, so the second is named "left out" and the process is never counted twice."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    for sub in ("a", "b"):
        cmd = [sys.executable, "-m", "tui_prof.synth", str(tmp_path / "run" / sub), "--format", "csv", "--dispatches", "100", "--pid", "77"]
        subprocess.run(cmd, check=True, cwd=repo, capture_output=True)
    run = tmp_path / "run"
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["summary", str(run), "--json", "--no-cache", "--cluster", "pool:1"]) == 0
    captured = capsys.readouterr()
    merged = json.loads(captured.out)
    assert len(whole["processes"]) == 1 and whole["kernels"]["dispatches"] == 200
    assert merged["partials"]["merged"] == 1 and merged["kernels"]["dispatches"] == 100
    (failed,) = merged["partials"]["failed_ranks"]
    assert failed["reason"].endswith("left out") and "pid 77" in failed["reason"] and "left out" in captured.err


def test_merged_critical_path_names_the_straggler_and_its_waits() -> None:
    """The second pass (each rank's path, then the driver's merge) on a generated job with a
    known straggler (synth.ranks: two hosts with unrelated clocks): the rank on the path in
    every steady step is the straggler, and each other rank's path waits for it exactly the
    generator's waits, as in one process (independent of the summary)."""
    ranks = build_ranks(RankSpec(ranks=4, iterations=6, slow_rank=2, collectives=("AllReduce", "AllGather"), hosts=2))
    runset = ranks.runset()
    merged = merge_partials(partials_of(runset), load=loader(runset))
    section = merged["critical_path"]
    on_path = section["ranks_on_path"]
    assert on_path["rank"] == 2 and on_path["steady_steps_on_path"] == on_path["steady_steps"] == 6
    expected = ranks.expected.wait_by_rank
    for r, p in enumerate(section["processes"]):
        waited = p["waiting_on_ranks"]
        assert waited == ([] if r == 2 else [{"rank": 2, "ns": expected[r], "instances": len(ranks.expected.straggler)}])
        assert sum(w["ns"] for w in waited) <= p["groups"]["communication"] <= p["total_ns"]
    # part <= whole: each row's time on the path is at most its own time
    for row in merged["hotspots"] + [r for rows in merged["hotspots_by"].values() for r in rows]:
        assert 0 <= row["critical_ns"] <= row["total_ns"]
    assert dumped(merged) == dumped(build_summary(runset, SummaryOptions(logs=False)))


def test_findings_savings_come_from_the_best_rank() -> None:
    """The findings of the merged document carry the saving of the rank each edit saves most
    in (named, with its window), ranked as in one process: the same document, and every
    projected saving within its window."""
    runset = load_path(DATA / "kineto" / "h200", use_cache=False)
    doc = build_summary(runset, SummaryOptions(logs=False))
    merged = merge_partials(partials_of(runset), load=loader(runset))
    projected = [f for f in merged["findings"] if "saving_ns" in f and "window_ns" in f["numbers"]]
    assert projected and merged["findings"] == doc["findings"]
    labels = {p["process"] for p in merged["critical_path"]["processes"]}
    for f in projected:
        assert f["numbers"]["process"] in labels and 0 <= f["saving_ns"] <= f["numbers"]["window_ns"]


def test_path_partials_round_trip_through_json() -> None:
    """A rank's path partials survive the cache's JSON form exactly (floats included)."""
    from tui_prof.analysis.api import path_partials, path_plan, paths_doc, paths_of_doc
    from tui_prof.analysis.partials import PartialMerge

    runset = build_ranks(RankSpec(ranks=3, iterations=3, slow_rank=1)).runset()
    merge = PartialMerge(load=loader(runset))
    for p in partials_of(runset):
        merge.add(p)
    plan = path_plan(merge)
    assert plan is not None and plan.windows == 3 and plan.settings.with_waits
    parts = path_partials(RunSet(runset.root, runset.runs[:1]), {}, plan.settings, plan.table, DEFAULT_CATEGORY_RULES)
    assert parts[0].record is not None and parts[0].savings
    back = paths_of_doc(json.loads(json.dumps(paths_doc(parts))))
    assert back == parts


def test_merge_gives_the_wait_table_and_ranks_on_path_of_the_summary() -> None:
    """The merge reduces each rank's collectives as it arrives (any order): its wait table is
    the in-process summary's, its ranks on the path the summary's (the generated straggler),
    and it keeps no rank's collectives."""
    from tui_prof.analysis.api import PartialMerge, merged_sections
    from tui_prof.analysis.ranks import ranks_and_waits
    from tui_prof.analysis.runinput import run_inputs

    spec = RankSpec(ranks=6, iterations=5, collectives=("AllReduce", "AllGather"), slow_rank=4, hosts=2)
    runset = build_ranks(spec).runset()
    doc = build_summary(runset, SummaryOptions(logs=False))
    inputs = run_inputs(runset)
    *_sections, table = ranks_and_waits(
        [r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], DEFAULT_CATEGORY_RULES
    )
    parts = partials_of(runset)
    random.Random(3).shuffle(parts)
    merge = PartialMerge(DEFAULT_CATEGORY_RULES, load=loader(runset))
    for p in parts:
        merge.add(p)
    got = merge.wait_table()
    assert sorted(got) == sorted(table) == ["AllGather", "AllReduce"]
    assert all(got[k][0].tolist() == table[k][0].tolist() and got[k][1].tolist() == table[k][1].tolist() for k in table)
    assert set(got["AllReduce"][1].tolist()) == {spec.slow_rank}
    merged = merged_sections(merge, 20)
    on_path = merge.ranks_on_path(merged["steps"])
    assert on_path == doc["critical_path"]["ranks_on_path"] and on_path is not None and on_path["rank"] == spec.slow_rank
    assert all(not any(k.startswith("coll_") for k in figures) for *_rest, figures, _meta in merge.ranks)


def test_merge_keeps_instances_not_ranks_times_collectives() -> None:
    """64 and 256 generated ranks with the same collectives per rank: the merge's instance
    table holds the same arrays (O(instances)); per rank it keeps a count and a sum per type."""
    from tui_prof.analysis.api import PartialMerge

    kept = {}
    for ranks in (64, 256):
        spec = RankSpec(ranks=ranks, iterations=3, collectives=("AllReduce", "AllGather"), compute_kernels=1, slow_rank=ranks - 1)
        merge = PartialMerge(DEFAULT_CATEGORY_RULES)
        for p in partials_of(build_ranks(spec).runset()):
            merge.add(p)
        kept[ranks] = merge.instances.instance_elements()
        assert len(merge.instances.counts) == ranks and all(len(c) == 2 for c in merge.instances.counts)
    assert kept[64] == kept[256] == 8 * 2 * 3


def test_sampled_windows_merge_as_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows cut to a small node budget (the sampled case every trace of more than the
    critical path's budget is): each rank's path is analysed over its first part, its waits
    map the window's collectives onto the whole process's instances, and the merge equals the
    in-process summary (critical_ns scaled to the whole window included)."""
    import functools

    from tui_prof.analysis import critical
    from tui_prof.analysis import summary as summary_module

    monkeypatch.setattr(critical, "MIN_NODES", 10)
    monkeypatch.setattr(critical, "MAX_NODES", 400)
    monkeypatch.setattr(summary_module, "process_windows", functools.partial(critical.process_windows, max_nodes=400))
    runset = build_ranks(RankSpec(ranks=4, iterations=12, slow_rank=1, collectives=("AllReduce", "AllGather"), hosts=2)).runset()
    doc = build_summary(runset, SummaryOptions(logs=False))
    assert all(p["sampled_ns"] < p["window_ns"] for p in doc["critical_path"]["processes"])  # the case under test
    assert any(p["waiting_on_ranks"] for p in doc["critical_path"]["processes"])
    merged = merge_partials(partials_of(runset), load=loader(runset))
    assert dumped(merged) == dumped(doc)


def test_a_rank_that_cannot_be_loaded_again_is_named_in_the_critical_path() -> None:
    """merge_partials' second pass: a rank whose files are gone when it is loaded again is
    named in ``critical_path.failed_ranks``; the other ranks' paths and the findings are built."""
    runset = build_ranks(RankSpec(ranks=3, iterations=3, slow_rank=1)).runset()
    whole = loader(runset)

    def load(label: str) -> RunSet:
        if label == "rank2":
            raise FileNotFoundError("rank2's files are gone")
        return whole(label)

    merged = merge_partials(partials_of(runset), load=load)
    section = merged["critical_path"]
    assert section["failed_ranks"] == [{"label": "rank2", "reason": "FileNotFoundError: rank2's files are gone"}]
    assert [p["process"] for p in section["processes"]] == ["rank0", "rank1"]
    assert merged["findings"] and all(0 <= row["critical_ns"] <= row["total_ns"] for row in merged["hotspots"])


def test_steps_fold_in_any_order_equals_the_summary_and_keeps_no_rows_per_rank() -> None:
    """The merge folds each rank's steps as it arrives: shuffled, the steps and memory sections
    equal the in-process ones (outliers described inside their slowest rank, found by label
    there), and what it keeps of each rank is its part without rows."""
    from tui_prof.analysis.api import PartialMerge
    from tui_prof.synth.steps import build_rank_steps

    runset = build_rank_steps(outliers=(5, 5, 3)).runset()
    doc = build_summary(runset, SummaryOptions(logs=False))
    for seed in (1, 2, 3):
        parts = partials_of(runset)
        random.Random(seed).shuffle(parts)
        merge = PartialMerge(DEFAULT_CATEGORY_RULES, load=loader(runset))
        for p in parts:
            merge.add(p)
        steps, memory, _warmup = merge.steps_memory()
        assert dumped(steps) == dumped(doc["steps"]) and dumped(memory) == dumped(doc["memory"])
        assert all(part.steps["steps"] == [] and part.steps["step_count"] == 8 for *_rest, part in merge.steps)
    assert [o["process"] for o in doc["steps"]["outliers"]] == ["rank2", "rank1"]


def _step_rows_kept(merge) -> int:
    """The distinct step rows the merge's steps state holds."""
    fold = merge.steps_fold
    held = [best[3] for best in fold.slowest.values()] + list(fold.first[1]["steps"]) + list(merge.reference_steps)
    held += [r for *_rest, part in merge.steps for r in part.steps["steps"]] + [r for _k, part, _g in fold.parts for r in part["steps"]]
    return len({id(r) for r in held})


def test_merge_keeps_steps_not_ranks_times_steps() -> None:
    """64 and 256 generated ranks with the same 6 steps each (a straggler): the merge holds the
    same step rows (at most the first rank's and each step's slowest), O(steps), and one
    row-less part per rank; the combined steps are the in-process summary's."""
    from tui_prof.analysis.api import PartialMerge

    kept = {}
    for ranks in (64, 256):
        spec = RankSpec(ranks=ranks, iterations=6, collectives=("AllReduce",), compute_kernels=1, slow_rank=ranks - 1)
        runset = build_ranks(spec).runset()
        merge = PartialMerge(DEFAULT_CATEGORY_RULES, load=loader(runset))
        for p in partials_of(runset):
            merge.add(p)
        kept[ranks] = _step_rows_kept(merge)
        assert len(merge.steps_fold.parts) == len(merge.steps) == ranks
        steps, _memory, _warmup = merge.steps_memory()
        assert steps["combined"] == "max" and [p["step_count"] for p in steps["per_process"]] == [6] * ranks
        if ranks == 64:
            assert dumped(steps) == dumped(build_summary(runset, SummaryOptions(logs=False))["steps"])
    assert kept[64] == kept[256] and 6 <= kept[64] <= 2 * 6
