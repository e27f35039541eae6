"""Compare two runs: kernel-by-kernel time deltas and a summary delta table (``tuiprof diff A B``).

Definitions (docs/diff.md has the long form):

* Kernels of each run are grouped by a match key — ``"name"`` (exact kernel name),
  ``"normalized"`` (template arguments, argument list, clone suffix stripped:
  :func:`tui_prof.analysis.names.normalize_name`) or ``"category"`` (category rules) —
  with :func:`tui_prof.analysis.hotspots.hotspots`. Groups present in both runs are
  "matched", only in B "added", only in A "removed".
* Kernel deltas are B − A: ``delta_ns = total_b - total_a`` (int64 ns), ``delta_pct =
  delta_ns / total_a * 100``, ``ratio = total_b / total_a`` (NaN when a side is
  missing), ``avg_ratio = avg_b / avg_a``. Rows are sorted by ``|delta_ns|`` descending
  (ties by key).
* Summary metrics come from the ``tuiprof.summary/1`` document of each run
  (:func:`side_metrics`: :func:`tui_prof.analysis.summary.build_summary` once per run),
  recomputed from its integer ns fields so the percentages are not rounded twice.
  The kernel matching (:func:`kernel_diff`) is separate: a new match mode
  (:func:`rematch`) reuses both runs' metrics. Each metric has a direction
  (lower is better, or neutral) and a noise threshold: ``noise_pct`` percent of A's
  value for times and counts, ``noise_pp`` percentage points for % metrics. A change
  no larger than the threshold is "within noise"; beyond it a metric is "improved" or
  "regressed" (neutral metrics: "changed").
* Median queue delay (kernel start − launching call start) is neutral: it grows when the
  host runs ahead of the GPU (good pipelining) as well as when launches get slower.
* ``regressions(result, pct)`` lists the lower-is-better metrics that got worse
  by more than ``pct`` (percent of A for times and counts, points for % metrics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.hotspots import all_kernels, hotspots
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.parts import SummaryDoc
from tui_prof.analysis.summary import build_summary
from tui_prof.model import RunSet

SCHEMA = "tuiprof.diff/1"
MATCH_MODES = ("name", "normalized", "category")
DEFAULT_NOISE_PCT = 2.0  # [P] run-to-run noise of wall/kernel time on a quiet GPU is ~1-2 %
DEFAULT_NOISE_PP = 1.0  # [P] percentage points for metrics that are themselves percentages

KERNEL_DIFF_COLUMNS = ("key", "status", "calls_a", "calls_b", "total_a_ns", "total_b_ns", "avg_a_ns", "avg_b_ns",
                       "delta_ns", "delta_pct", "ratio", "avg_ratio", "delta_calls")


@dataclass(frozen=True)
class MetricDef:
    key: str
    label: str
    unit: str  # "ns", "count", "pct"
    better: str  # "lower" or "neutral"


METRICS: tuple[MetricDef, ...] = (
    MetricDef("span_ns", "span (wall)", "ns", "lower"),
    MetricDef("kernel_count", "kernel dispatches", "count", "lower"),
    MetricDef("kernel_time_ns", "kernel time", "ns", "lower"),
    MetricDef("gemm_pct", "GEMM % of kernel time", "pct", "neutral"),
    MetricDef("sync_pct", "sync overhead % of wall", "pct", "lower"),
    MetricDef("idle_pct", "GPU idle %", "pct", "lower"),
    MetricDef("launch_api_ns", "launch API time", "ns", "lower"),
    MetricDef("median_queue_delay_ns", "median queue delay", "ns", "neutral"),
    MetricDef("copy_time_ns", "copy time", "ns", "lower"),
)
METRIC_KEYS = tuple(m.key for m in METRICS)


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def run_metrics(doc: SummaryDoc) -> dict[str, Any]:
    """The diff's summary metrics from a ``tuiprof.summary/1`` document.

    span_ns = wall (first to last event of API calls, kernels, copies); gemm_pct = GEMM
    category time / kernel time; sync_pct = sync + blocking-copy call time / wall;
    idle_pct = GPU idle / GPU span summed over agents; launch_api_ns = time inside launch
    API calls; median_queue_delay_ns = median kernel start − launching call start
    (None when no launch is linked); copy_time_ns = sum of copy durations.
    """
    wall = int(doc["wall_ns"])
    ktime = int(doc["kernels"]["total_ns"])
    gpu = doc["gpu"]
    return {
        "span_ns": wall,
        "kernel_count": int(doc["kernels"]["dispatches"]),
        "kernel_time_ns": ktime,
        "gemm_pct": _pct(int(doc["categories"].get("GEMM", 0)), ktime),
        "sync_pct": _pct(int(doc["sync"]["total_ns"]), wall),
        "idle_pct": _pct(int(gpu["idle_ns"]), int(gpu["span_ns"])),
        "launch_api_ns": int(doc["launch"]["api_total_ns"]),
        "median_queue_delay_ns": doc["launch"]["median_queue_delay_ns"],
        "copy_time_ns": int(doc["copies"]["time_ns"]),
    }


def metric_delta(defn: MetricDef, a: float | None, b: float | None, noise_pct: float = DEFAULT_NOISE_PCT,
                 noise_pp: float = DEFAULT_NOISE_PP) -> dict[str, Any]:
    """One summary row: values, delta (B − A), relative change and verdict with its threshold."""
    row: dict[str, Any] = {"key": defn.key, "label": defn.label, "unit": defn.unit, "better": defn.better, "a": a, "b": b,
           "delta": None, "delta_pct": None, "threshold": noise_pp if defn.unit == "pct" else noise_pct,
           "threshold_unit": "pp" if defn.unit == "pct" else "%", "status": "n/a"}
    if a is None or b is None:
        return row
    delta = b - a
    row["delta"] = delta
    if a != 0:
        row["delta_pct"] = 100.0 * delta / abs(a)
    elif delta != 0:
        row["delta_pct"] = math.inf if delta > 0 else -math.inf
    else:
        row["delta_pct"] = 0.0
    change = abs(delta) if defn.unit == "pct" else abs(row["delta_pct"])
    if change <= row["threshold"]:
        row["status"] = "within noise"
    elif defn.better == "neutral":
        row["status"] = "changed"
    else:
        row["status"] = "improved" if delta < 0 else "regressed"
    return row


def kernel_diff(kernels_a: pd.DataFrame, kernels_b: pd.DataFrame, by: str = "name", rules: CategoryRules | None = None,
                noise_pct: float = DEFAULT_NOISE_PCT) -> pd.DataFrame:
    """Per match key: calls, total and average ns in A and B, delta, ratio, status.

    ``status``: "added" (only in B), "removed" (only in A), else "slower" / "faster"
    when ``|delta_pct| > noise_pct``, or "same" (within noise). Columns
    ``KERNEL_DIFF_COLUMNS``; sorted by ``|delta_ns|`` descending, ties by key.
    """
    if by not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {by!r}")
    ha = hotspots(kernels_a, by=by, rules=rules)[["name", "calls", "total_ns", "avg_ns"]]
    hb = hotspots(kernels_b, by=by, rules=rules)[["name", "calls", "total_ns", "avg_ns"]]
    merged = ha.merge(hb, on="name", how="outer", suffixes=("_a", "_b"), indicator=True)
    in_a = merged["_merge"].isin(["both", "left_only"]).to_numpy()
    in_b = merged["_merge"].isin(["both", "right_only"]).to_numpy()
    calls_a = merged["calls_a"].fillna(0).to_numpy().astype(np.int64)
    calls_b = merged["calls_b"].fillna(0).to_numpy().astype(np.int64)
    total_a = merged["total_ns_a"].fillna(0).to_numpy().astype(np.int64)
    total_b = merged["total_ns_b"].fillna(0).to_numpy().astype(np.int64)
    avg_a = merged["avg_ns_a"].to_numpy(dtype=np.float64)
    avg_b = merged["avg_ns_b"].to_numpy(dtype=np.float64)
    delta = total_b - total_a
    both = in_a & in_b
    with np.errstate(divide="ignore", invalid="ignore"):
        delta_pct = np.where(in_a & (total_a > 0), 100.0 * delta / np.where(total_a > 0, total_a, 1), np.nan)
        ratio = np.where(both & (total_a > 0), total_b / np.where(total_a > 0, total_a, 1), np.nan)
        avg_ratio = np.where(both & (avg_a > 0), avg_b / np.where(avg_a > 0, avg_a, 1.0), np.nan)
    status = np.where(~in_a, "added", np.where(~in_b, "removed",
                      np.where(np.abs(np.nan_to_num(delta_pct)) <= noise_pct, "same",
                               np.where(delta > 0, "slower", "faster"))))
    table = pd.DataFrame({
        "key": merged["name"].astype(str).to_numpy(),
        "status": status,
        "calls_a": calls_a, "calls_b": calls_b,
        "total_a_ns": total_a, "total_b_ns": total_b,
        "avg_a_ns": avg_a, "avg_b_ns": avg_b,
        "delta_ns": delta, "delta_pct": delta_pct, "ratio": ratio, "avg_ratio": avg_ratio,
        "delta_calls": calls_b - calls_a,
    }, columns=list(KERNEL_DIFF_COLUMNS))
    table["_abs"] = np.abs(delta)
    table = table.sort_values(["_abs", "key"], ascending=[False, True], kind="stable").drop(columns="_abs")
    return table.reset_index(drop=True)


@dataclass
class DiffResult:
    """Everything ``tuiprof diff`` reports (``to_json`` gives the ``tuiprof.diff/1`` document)."""

    path_a: str
    path_b: str
    by: str
    noise_pct: float
    noise_pp: float
    kernels: pd.DataFrame
    metrics: list[dict[str, Any]]
    summary_a: SummaryDoc
    summary_b: SummaryDoc
    category_rules: str = "built-in"
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        s = self.kernels["status"]
        return {"matched": int((~s.isin(["added", "removed"])).sum()), "added": int((s == "added").sum()),
                "removed": int((s == "removed").sum())}

    def metric(self, key: str) -> dict[str, Any]:
        return next(m for m in self.metrics if m["key"] == key)


@dataclass(frozen=True)
class Side:
    """One run set's part of a diff: its summary document and the metrics taken from it."""

    path: str
    formats: tuple[str, ...]
    summary: SummaryDoc
    metrics: dict[str, Any]


def side_metrics(runset: RunSet, *, rules: CategoryRules | None = None, gap_threshold_ns: int | None = None) -> Side:
    """The summary (every kernel, no gap list, no log scan) and :func:`run_metrics` of one run set."""
    doc = build_summary(runset, top=None, gap_threshold_ns=gap_threshold_ns, rules=rules, max_gaps=0, logs=False)
    return Side(runset.root, tuple(runset.formats), doc, run_metrics(doc))


def compare_sides(a: Side, b: Side, kernels: pd.DataFrame, *, by: str = "name", noise_pct: float = DEFAULT_NOISE_PCT,
                  noise_pp: float = DEFAULT_NOISE_PP) -> DiffResult:
    """The diff of B against A from both sides' metrics and the :func:`kernel_diff` table ``kernels``."""
    metrics = [metric_delta(d, a.metrics[d.key], b.metrics[d.key], noise_pct, noise_pp) for d in METRICS]
    notes = []
    fa, fb = set(a.formats), set(b.formats)
    if fa != fb:
        notes.append(f"formats differ: A {', '.join(sorted(fa)) or '-'} vs B {', '.join(sorted(fb)) or '-'}")
    return DiffResult(a.path, b.path, by, float(noise_pct), float(noise_pp), kernels, metrics, a.summary, b.summary,
                      category_rules=a.summary.get("category_rules", "built-in"), notes=notes)


def diff_runsets(a: RunSet, b: RunSet, *, by: str = "name", rules: CategoryRules | None = None,
                 noise_pct: float = DEFAULT_NOISE_PCT, noise_pp: float = DEFAULT_NOISE_PP,
                 gap_threshold_ns: int | None = None) -> DiffResult:
    """Diff run set B against run set A (B − A everywhere)."""
    if by not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {by!r}")
    side_a = side_metrics(a, rules=rules, gap_threshold_ns=gap_threshold_ns)
    side_b = side_metrics(b, rules=rules, gap_threshold_ns=gap_threshold_ns)
    table = kernel_diff(all_kernels(a), all_kernels(b), by=by, rules=rules, noise_pct=noise_pct)
    return compare_sides(side_a, side_b, table, by=by, noise_pct=noise_pct, noise_pp=noise_pp)


def rematch(result: DiffResult, a: RunSet, b: RunSet, by: str, *, rules: CategoryRules | None = None) -> DiffResult:
    """``result`` with the kernels matched by ``by`` instead: only :func:`kernel_diff`
    runs again; the summaries and metrics (which do not depend on the match) are kept."""
    table = kernel_diff(all_kernels(a), all_kernels(b), by=by, rules=rules, noise_pct=result.noise_pct)
    return replace(result, by=by, kernels=table)


def regressions(result: DiffResult, pct: float) -> list[dict]:
    """Lower-is-better metrics that got worse by more than ``pct`` (percent of A; points for % metrics)."""
    out = []
    for m in result.metrics:
        if m["better"] != "lower" or m["delta"] is None or m["delta"] <= 0:
            continue
        change = m["delta"] if m["unit"] == "pct" else m["delta_pct"]
        if change > pct:
            out.append(m)
    return out
