"""Steps of several processes (issue 21): each rank's steps are detected, and the job's
step k is the slowest rank's step k. A generated data-parallel run whose every rank's step
times are known by construction (tui_prof/synth/steps.py build_rank_steps), written as
Kineto (one trace per rank, distributedInfo) and loaded back."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.render.summary import summary_markdown, summary_text
from tui_prof.synth.steps import StepSpec, build_rank_steps, build_steps
from tui_prof.synth.write_kineto import write_kineto

# rank 1 computes slower (every ordinary step is its); rank 2's extra copy is in step 4 (index 3),
# the others' in step 6 (index 5): the slowest rank differs between steps
OUTLIERS = (5, 5, 3)


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    rs = build_rank_steps(outliers=OUTLIERS)
    root = tmp_path_factory.mktemp("rank-steps")
    for r, run in enumerate(rs.runs):
        write_kineto(run, root / f"rank{r}.pt.trace.json.gz")
    return rs, build_summary(load_path(root, use_cache=False), SummaryOptions(logs=False)), root


def test_whole_run_step_is_the_slowest_ranks(ranked):
    rs, doc, _root = ranked
    st = doc["steps"]
    assert st["detected"] and st["combined"] == "max" and st["process"] is None
    rows = st["steps"]
    assert [r["label"] for r in rows] == rs.answers[0].labels
    per_rank = [a.walls for a in rs.answers]
    assert [r["wall_ns"] for r in rows] == [max(w) for w in zip(*per_rank, strict=True)] == rs.walls
    assert [r["process"] for r in rows] == [f"rank{r}" for r in rs.slowest]
    assert rs.slowest == [1, 1, 1, 2, 1, 1, 1, 1]
    # the other columns are the slowest rank's own row
    slow_rank_copies = [rs.answers[r].copies[k] for k, r in enumerate(rs.slowest)]
    assert [r["copies"] for r in rows] == slow_rank_copies == [0, 0, 0, 1, 0, 1, 0, 0]
    assert [r["gpu_ns"] for r in rows] == [rs.answers[r].gpu_ns[k] for k, r in enumerate(rs.slowest)]
    # warm-up and steady state on the whole-run rows
    assert st["warmup_steps"] == 1 and [r["warmup"] for r in rows] == [True] + [False] * 7
    assert st["steady"]["median_wall_ns"] == float(np.median(rs.walls[1:]))
    assert st["distribution"]["max_ns"] == max(rs.walls)
    # outliers: each compared inside its slowest rank
    assert [(o["label"], o["process"]) for o in st["outliers"]] == [("train_step [4]", "rank2"), ("train_step [6]", "rank1")]
    assert all(o["extra_copies"] == 1 and o["reasons"][0].startswith("1 more copy") for o in st["outliers"])
    assert st["outliers"][0]["ratio"] == round(rs.walls[3] / float(np.median(rs.walls[1:])), 4)
    slow = [f["message"] for f in doc["findings"] if f["code"] == "slow-step"]
    assert sorted(m.split(" took")[0] for m in slow) == ["train_step [4] (slowest in rank2)", "train_step [6] (slowest in rank1)"]


def test_per_rank_steps_are_each_ranks_own(ranked):
    """Each rank's own part, without its rows (``step_count`` counts them; the document stays
    O(ranks + steps)); the rows the summary's readers take are each rank's own."""
    from tui_prof.analysis.runinput import run_inputs
    from tui_prof.analysis.steps import found_steps

    rs, doc, root = ranked
    per = doc["steps"]["per_process"]
    assert [p["process"] for p in per] == ["rank0", "rank1", "rank2"]
    found = found_steps(run_inputs(load_path(root, use_cache=False)), {})  # no gaps: the outliers' longest gap aside
    assert [p["step_count"] for p in found.section["per_process"]] == [p["step_count"] for p in per] and len(found.rows) == 3
    for p, ans, rows in zip(per, rs.answers, found.rows, strict=True):
        assert p["steps"] == [] and p["step_count"] == len(ans.walls)
        assert [r["wall_ns"] for r in rows] == ans.walls
        assert p["steady"]["median_wall_ns"] == float(np.median(ans.walls[ans.warmup :]))
        assert p["combined"] == "" and p["per_process"] == []
    # the straggler's steady median is the largest: its kernels last 80 µs against 50 µs
    medians = [p["steady"]["median_wall_ns"] for p in per]
    assert medians[1] - medians[0] == 6 * (80_000 - 50_000) and medians[0] == medians[2]
    # memory growth: judged on each rank's own steps (2 MiB leaked per step on every rank)
    assert doc["memory"]["step_growth_bytes"] == rs.answers[0].growth_steady == 6 * (2 << 20)


def test_text_and_markdown_say_how_steps_were_combined(ranked):
    _, doc, _root = ranked
    text = summary_text(doc)
    assert "the whole run's step k is the slowest process's step k" in text
    assert "slowest process" in text and "Steps per process (3)" in text
    assert "(in rank2)" in text
    row = next(line for line in text.splitlines() if line.startswith("rank1 "))
    assert row.split()[-1] == "7"  # rank1 is the slowest in 7 of the 8 steps
    assert "| rank2 |" in summary_markdown(doc)


def test_one_process_with_steps_keeps_its_own_table():
    rs = build_rank_steps(ranks=1)
    st = build_summary(rs.runset(), SummaryOptions(logs=False))["steps"]
    assert st["combined"] == "" and st["per_process"] == [] and st["process"] == "rank0"
    assert [r["wall_ns"] for r in st["steps"]] == rs.answers[0].walls
    assert all("process" not in r for r in st["steps"])


def test_processes_whose_steps_share_no_label_are_not_combined():
    rs = build_rank_steps(ranks=2)
    other, ans = build_steps(replace(StepSpec(), marker="eval_step", pid=9999))
    runset = rs.runset()
    runset.runs[1].markers = other.markers  # rank1's ranges are named eval_step: no label in common
    st = build_summary(runset, SummaryOptions(logs=False))["steps"]
    assert st["combined"] == "" and st["process"] == "rank0"
    assert [r["wall_ns"] for r in st["steps"]] == rs.answers[0].walls
    assert "share no label" in st["how"] and st["per_process"] == []


def test_real_two_rank_trace_takes_each_steps_slowest_rank():
    """HTA's sampled ranks 0 and 1 (real Kineto, ProfilerStep#551-552 in each): the whole-run
    step is the longer of the two ranks' ranges, read here from the JSON."""
    folder = Path(__file__).parent / "data" / "kineto" / "ranks"
    walls: dict[str, list[int]] = {}
    for rank in (0, 1):
        with gzip.open(folder / f"sampled_rank-{rank}.json.gz", "rt") as fh:
            events = json.load(fh)["traceEvents"]
        for e in sorted((e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"]):
            walls.setdefault(e["name"], []).append(round(e["dur"] * 1000))
    assert list(walls) == ["ProfilerStep#551", "ProfilerStep#552"]
    st = build_summary(load_path(folder, use_cache=False), SummaryOptions(logs=False))["steps"]
    assert st["combined"] == "max" and [p["process"] for p in st["per_process"]] == ["sampled_rank-0", "sampled_rank-1"]
    assert [p["step_count"] for p in st["per_process"]] == [2, 2]
    assert [r["label"] for r in st["steps"]] == list(walls)
    assert [r["wall_ns"] for r in st["steps"]] == [max(w) for w in walls.values()] == [607_904_000, 630_639_000]
    assert [r["process"] for r in st["steps"]] == ["sampled_rank-1", "sampled_rank-1"]
    assert [p["steady"] is None or p["steady"]["steps"] <= 2 for p in st["per_process"]] == [True, True]


def _process_steps(label: str, walls: dict[str, int]):
    """A process's steps part with the given label -> wall (each step starting where the
    last ended), enough for combine_steps; run and frame are only read for slow steps."""
    from tui_prof.analysis.steps import ProcessSteps

    rows, t = [], 0
    for name, wall in walls.items():
        rows.append(
            {
                "label": name,
                "start_ns": t,
                "end_ns": t + wall,
                "wall_ns": wall,
                "gpu_ns": 0,
                "kernels": 1,
                "kernel_ns": 0,
                "busy_ns": 0,
                "busy_pct": 0.0,
                "idle_ns": wall,
                "exposed_sync_ns": 0,
                "sync_calls": 0,
                "copies": 0,
                "copy_bytes": 0,
                "top_kernel": None,
                "top_kernel_ns": 0,
                "warmup": False,
                "memory_peak_bytes": None,
                "owner": label,  # which process's row this is
            }
        )
        t += abs(wall)
    part = {"steps": rows, "how": "marker", "source": "marker", "name": "step", "candidates": []}
    return ProcessSteps(run=None, label=label, part=part, frame=None)  # type: ignore[arg-type]


def _slowest_by_loop(found) -> list[tuple[str, int, str]]:
    """(label, wall, owner) of each whole-run step, computed step by step: the labels of the
    first process that every process has, each taken from the first process of the longest wall."""
    common = set.intersection(*({r["label"] for r in p.part["steps"]} for p in found))
    out = []
    for r0 in found[0].part["steps"]:
        if r0["label"] not in common:
            continue
        rows = [next(r for r in p.part["steps"] if r["label"] == r0["label"]) for p in found]
        best = max(range(len(rows)), key=lambda j: (rows[j]["wall_ns"], -j))
        out.append((r0["label"], rows[best]["wall_ns"], rows[best]["owner"]))
    return out


def test_each_whole_run_step_is_the_first_slowest_process_whatever_the_label_order():
    from tui_prof.analysis.steps import combine_steps

    rng = np.random.default_rng(7)
    labels = [f"s{i}" for i in range(40)]
    found = []
    for j in range(5):
        mine = list(labels)
        rng.shuffle(mine)  # each process lists its steps in its own order
        if j == 2:
            mine.remove("s7")  # a step one process lacks: left out of the whole run
        found.append(_process_steps(f"p{j}", {name: int(rng.integers(95, 100)) * 1000 for name in mine}))  # many ties
    st = combine_steps(found, 5)
    got = [(r["label"], r["wall_ns"], r["owner"]) for r in st["steps"]]
    assert got == _slowest_by_loop(found)
    assert [r["process"] for r in st["steps"]] == [o for _, _, o in got]
    assert "s7" not in {r["label"] for r in st["steps"]} and "1 step(s) not in every process left out" in st["how"]
    assert any(len({p.part["steps"][[r["label"] for r in p.part["steps"]].index(lab)]["wall_ns"] for p in found}) < 5 for lab, _, _ in got)  # ties did occur


def test_a_step_wall_beyond_int64_in_one_process_is_compared_exactly():
    """A hostile trace's step range can span more than int64 (end and start near opposite
    limits): the other processes' steps are still compared, as integers."""
    from tui_prof.analysis.steps import combine_steps

    found = [
        _process_steps("p0", {"a": 100, "b": 100, "c": 100, "d": -(1 << 64)}),
        _process_steps("p1", {"a": 101, "b": 99, "c": 100, "d": 5}),
    ]
    st = combine_steps(found, 2)
    assert (
        [(r["label"], r["wall_ns"], r["owner"]) for r in st["steps"]]
        == _slowest_by_loop(found)
        == [
            ("a", 101, "p1"),
            ("b", 100, "p0"),
            ("c", 100, "p0"),
            ("d", 5, "p1"),
        ]
    )


def test_slow_step_is_described_from_its_own_process_when_labels_repeat():
    """Two processes with one label (as two ranks' ``run.pftrace``): a slow step owned by the
    second is described from the second's events, in-process and merged alike. Rank 1's
    outlier step [4] holds its extra copy; rank 0's step [4] holds none."""
    from tui_prof.analysis.partials import merge_partials, rank_partials
    from tui_prof.model import RunSet

    rs = build_rank_steps(ranks=2, slow_rank=1, outliers=(5, 3))
    runset = rs.runset()
    for run in runset.runs:
        run.meta.label = "run.pftrace"
    assert rs.answers[1].copies[3] == 1 and rs.answers[0].copies[3] == 0
    st = build_summary(runset, SummaryOptions(logs=False))["steps"]
    slow = next(o for o in st["outliers"] if o["label"] == "train_step [4]")
    assert slow["process"] == "run.pftrace" and st["steps"][3]["wall_ns"] == rs.answers[1].walls[3]
    assert slow["extra_copies"] == 1 and slow["wall_ns"] == rs.answers[1].walls[3]
    parts = [p for run in runset.runs for p in rank_partials(RunSet(runset.root, [run]))]
    merged = merge_partials(parts, load=lambda label: RunSet(runset.root, [r for r in runset.runs if r.meta.label == label]))
    assert merged["steps"]["outliers"] == st["outliers"]


def test_ranks_on_path_needs_the_wait_table_and_each_process_rows():
    """A combined section lists no process's own rows: ranks_on_path takes them (and the rank
    table's wait table) from its caller, never a default that finds no rows (every step
    ``instances: 0``). Given them, it is the summary's answer: generated ranks whose slow rank
    arrives last at every collective."""
    from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.critical import ranks_on_path
    from tui_prof.analysis.ranks import ranks_and_waits
    from tui_prof.analysis.runinput import run_inputs
    from tui_prof.analysis.steps import found_steps
    from tui_prof.synth.ranks import RankSpec, build_ranks

    spec = RankSpec(ranks=3, iterations=4, collectives=("AllReduce",), slow_rank=2)
    runset = build_ranks(spec).runset()
    doc = build_summary(runset, SummaryOptions(logs=False))
    inputs = run_inputs(runset)
    rules = DEFAULT_CATEGORY_RULES
    *_sections, table = ranks_and_waits(
        [r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], rules
    )
    found = found_steps(inputs, {})
    assert found.section["combined"] == "max" and all(p["steps"] == [] for p in found.section["per_process"])
    with pytest.raises(TypeError):
        ranks_on_path(inputs, found.section, rules)  # type: ignore[call-arg]
    got = ranks_on_path(inputs, doc["steps"], rules, table, None, found.rows)
    assert got is not None and got == doc["critical_path"]["ranks_on_path"] and got["rank"] == spec.slow_rank
    assert all(s["instances"] > 0 for s in got["steps"])
