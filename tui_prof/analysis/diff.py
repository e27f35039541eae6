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
* A % metric whose denominator (wall, GPU span, kernel time) moved beyond the noise is
  "changed" with a one-line reason, never "improved" or "regressed"; a metric a side has
  no data for is "n/a" (e.g. "no trace in A") and is not judged.
* ``regressions(result, pct)`` lists what trips the gate, each with its reason: the
  lower-is-better metrics judged "regressed" by more than ``pct`` (percent of A for
  times and counts, points for % metrics), and kernels that grew by more than ``pct`` %
  and by more than the noise share of A's kernel time.
* Statistics-only runs: kernels, kernel time and count, launch API and copy time come
  from the profiler's statistics files; ``domains`` compares calls and time per domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import hostapi, stats
from tui_prof.analysis.hotspots import all_kernels, hotspots
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules, normalize_name
from tui_prof.analysis.sections import Summary
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.model import RunSet
from tui_prof.percent import fmt_pct

SCHEMA = "tuiprof.diff/1"
MATCH_MODES = ("name", "normalized", "category")
DEFAULT_NOISE_PCT = 2.0  # [P] run-to-run noise of wall/kernel time on a quiet GPU is ~1-2%
DEFAULT_NOISE_PP = 1.0  # [P] percentage points for metrics that are themselves percentages

KERNEL_DIFF_COLUMNS = (
    "key",
    "status",
    "calls_a",
    "calls_b",
    "total_a_ns",
    "total_b_ns",
    "avg_a_ns",
    "avg_b_ns",
    "delta_ns",
    "delta_pct",
    "ratio",
    "avg_ratio",
    "delta_calls",
    "share_a",
    "share_b",
)


@dataclass(frozen=True)
class MetricDef:
    key: str
    label: str
    unit: str  # "ns", "count", "pct"
    better: str  # "lower" or "neutral"
    denominator: str = ""  # a % metric: the side-metrics key of its denominator ("" for the others)
    neutral_reason: str = ""  # why more is not unambiguously worse (neutral metrics)


METRICS: tuple[MetricDef, ...] = (
    MetricDef("span_ns", "span (wall)", "ns", "lower"),
    MetricDef("kernel_count", "kernel dispatches", "count", "lower"),
    MetricDef("kernel_time_ns", "kernel time", "ns", "lower"),
    MetricDef("gemm_pct", "GEMM % of kernel time", "pct", "neutral", "kernel_time_ns", "rises when the rest gets faster as well as when GEMMs get slower"),
    MetricDef(
        "sync_pct",
        "sync overhead % of wall",
        "pct",
        "neutral",
        "span_ns",
        "raw sync time includes waiting while the GPU runs queued work; the gate uses exposed sync",
    ),
    MetricDef("exposed_sync_ns", "exposed sync", "ns", "lower"),
    MetricDef("idle_pct", "GPU idle %", "pct", "lower", "gpu_span_ns"),
    MetricDef("idle_ns", "GPU idle time", "ns", "lower"),
    MetricDef("launch_api_ns", "launch API time", "ns", "lower"),
    MetricDef(
        "median_queue_delay_ns",
        "median queue delay",
        "ns",
        "neutral",
        "",
        "grows when the host runs ahead of the GPU (good pipelining) as well as when launches get slower",
    ),
    MetricDef("copy_time_ns", "copy time", "ns", "lower"),
)
METRIC_KEYS = tuple(m.key for m in METRICS)
DENOMINATOR_LABELS = {"span_ns": "wall", "gpu_span_ns": "GPU span", "kernel_time_ns": "kernel time"}


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def run_metrics(doc: Summary) -> dict[str, Any]:
    """The diff's summary metrics from a ``tuiprof.summary/1`` document (None: the run has
        no data for it; :func:`missing_data` says why).

        span_ns = wall (first to last event of API calls, kernels, copies); gemm_pct = GEMM
        category time / kernel time; sync_pct = the summary's ``sync.pct_of_wall`` (per process
    the union of sync + blocking-copy calls over its wall, wall-weighted over processes);
        exposed_sync_ns = the part of that time in which no GPU of the process has work left
        (docs/metrics.md); idle_pct = GPU idle / GPU span summed over (process, GPU) pairs
    (``gpu.agent_span_ns``), idle_ns = that
        idle time; launch_api_ns = time inside launch API calls; median_queue_delay_ns =
        median kernel start − launching call start (None when no launch is linked);
        copy_time_ns = sum of copy durations. Statistics-only runs give kernel count and time,
        GEMM %, launch API time and copy time from the profiler's statistics files.
        ``gpu_span_ns`` is kept as the denominator of idle_pct.
    """
    missing = missing_data(doc)
    wall = int(doc["wall_ns"])
    ktime = int(doc["kernels"]["total_ns"])
    gpu = doc["gpu"]
    sync = doc["sync"]
    values: dict[str, Any] = {
        "span_ns": wall,
        "kernel_count": int(doc["kernels"]["dispatches"]),
        "kernel_time_ns": ktime,
        "gemm_pct": _pct(int(doc["categories"].get("GEMM", 0)), ktime),
        "sync_pct": _pct(int(sync["union_ns"]), int(sync["process_ns"])) if "union_ns" in sync else _pct(int(sync["total_ns"]), wall),
        "exposed_sync_ns": int(sync.get("exposed_ns", 0)),
        "idle_pct": _pct(int(gpu["idle_ns"]), int(gpu.get("agent_span_ns", gpu["span_ns"]))),
        "idle_ns": int(gpu["idle_ns"]),
        "launch_api_ns": int(doc["launch"]["api_total_ns"]),
        "median_queue_delay_ns": doc["launch"]["median_queue_delay_ns"],
        "copy_time_ns": int(doc["copies"]["time_ns"]),
        "gpu_span_ns": int(gpu.get("agent_span_ns", gpu["span_ns"])),
    }
    if doc.get("api", {}).get("source") == "stats" and "launch_api_ns" not in missing:
        values["launch_api_ns"] = sum(r["total_ns"] for r in doc["api"]["rows"] if hostapi.classify_name(r["name"]) in (hostapi.LAUNCH, hostapi.GRAPH_LAUNCH))
    if doc.get("copies_source") == "stats":
        values["copy_time_ns"] = next((int(t["total_ns"]) for t in doc["stats"]["tables"] if t["key"] == "memory_copy_stats"), 0)
    for key in missing:
        values[key] = None
    return values


def missing_data(doc: Summary) -> dict[str, str]:
    """Metric key -> what the run lacks for it ("no trace", "no kernel data", ...)."""
    procs = doc["processes"]
    traced = any(p["dispatches"] or p["api_calls"] or p["copies"] for p in procs)
    api = any(p["api_calls"] for p in procs)
    gpu = bool(doc["gpu"]["span_ns"])
    kernels = doc.get("hotspots_source", "trace" if doc["kernels"]["dispatches"] else "none") != "none"
    out: dict[str, str] = {}
    if not traced:
        out.update(dict.fromkeys(("span_ns", "sync_pct", "exposed_sync_ns", "idle_pct", "idle_ns", "median_queue_delay_ns"), "no trace"))
        if doc.get("api", {}).get("source") != "stats":
            out["launch_api_ns"] = "no trace or API statistics"
        if doc.get("copies_source") != "stats":
            out["copy_time_ns"] = "no trace or copy statistics"
    else:
        if not api:
            out.update(dict.fromkeys(("sync_pct", "exposed_sync_ns", "launch_api_ns", "median_queue_delay_ns"), "no host API trace"))
        if not gpu:
            out.update(dict.fromkeys(("idle_pct", "idle_ns", "exposed_sync_ns"), "no GPU activity traced"))
    if not kernels:
        out.update(dict.fromkeys(("kernel_count", "kernel_time_ns", "gemm_pct"), "no kernel data"))
    return out


def has_data(doc: Summary) -> bool:
    """Whether a run holds anything a diff can compare (trace rows or statistics)."""
    return bool(any(p["dispatches"] or p["api_calls"] or p["copies"] for p in doc["processes"]) or doc.get("stats", {}).get("tables"))


def _fmt_change(unit: str, delta: float, delta_pct: float | None) -> str:
    if unit == "pct":
        return f"{delta:+.2f} points"
    if delta_pct is None or math.isinf(delta_pct):
        return f"{delta:+g} from 0"
    return f"{fmt_pct(delta_pct, signed=True)} of A"


def metric_delta(
    defn: MetricDef,
    a: float | None,
    b: float | None,
    noise_pct: float = DEFAULT_NOISE_PCT,
    noise_pp: float = DEFAULT_NOISE_PP,
    *,
    missing: str = "",
    denominators: tuple[float | None, float | None] | None = None,
) -> dict[str, Any]:
    """One summary row: values, delta (B − A), relative change, verdict and its one-line reason.

    ``missing``: why a side has no value ("no trace in A"): status "n/a". ``denominators``:
    (A, B) of a % metric's denominator; when it moved beyond ``noise_pct`` the share's
    change is "changed", never "improved" or "regressed" (the numerator figure says which).
    """
    row: dict[str, Any] = {
        "key": defn.key,
        "label": defn.label,
        "unit": defn.unit,
        "better": defn.better,
        "a": a,
        "b": b,
        "delta": None,
        "delta_pct": None,
        "threshold": noise_pp if defn.unit == "pct" else noise_pct,
        "threshold_unit": "pp" if defn.unit == "pct" else "%",
        "status": "n/a",
        "reason": "",
    }
    if a is None or b is None:
        side = "A and B" if a is None and b is None else "A" if a is None else "B"
        row["reason"] = f"n/a ({missing or 'no data'} in {side}): not compared, cannot pass or fail the gate"
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
    moved = _denominator_move(denominators, noise_pct)
    band = float(row["threshold"])
    threshold = f"±{band:.{0 if band.is_integer() else 1}f}{' points' if defn.unit == 'pct' else '%'}"  # the report's precision
    if change <= row["threshold"]:
        row["status"] = "within noise"
        row["reason"] = f"{_fmt_change(defn.unit, delta, row['delta_pct'])} is within the {threshold} noise"
    elif defn.better == "neutral":
        row["status"] = "changed"
        row["reason"] = f"neutral: {defn.neutral_reason}" if defn.neutral_reason else "neutral"
    elif moved is not None:
        row["status"] = "changed"
        row["reason"] = (
            f"a share whose denominator ({DENOMINATOR_LABELS.get(defn.denominator, defn.denominator)}) moved "
            f"{fmt_pct(moved, signed=True)}: the share moves with it, so it is not a verdict"
        )
    else:
        row["status"] = "improved" if delta < 0 else "regressed"
        row["reason"] = f"{_fmt_change(defn.unit, delta, row['delta_pct'])}, beyond the {threshold} noise; lower is better"
    return row


def _denominator_move(denominators: tuple[float | None, float | None] | None, noise_pct: float) -> float | None:
    """The denominator's change in % of A when beyond ``noise_pct``, else None."""
    if not denominators:
        return None
    da, db = denominators
    if da is None or db is None:
        return None
    if da == 0:
        return None if db == 0 else math.inf
    moved = 100.0 * (db - da) / abs(da)
    return moved if abs(moved) > noise_pct else None


def side_kernels(runset: RunSet, by: str = "name", rules: CategoryRules | None = None) -> pd.DataFrame:
    """Per match key: name, calls, total_ns, avg_ns and percent (share of kernel time) of a
    run set, from its kernel trace, else from its kernel statistics (the profiler's own
    Percentage for one process, summed per key)."""
    kernels = all_kernels(runset)
    if len(kernels) or stats.stats_table(runset, stats.KERNEL_STATS) is None:
        return hotspots(kernels, by=by, rules=rules)[list(SIDE_COLUMNS)]
    table = stats.stats_table(runset, stats.KERNEL_STATS)
    assert table is not None
    if by == "name":
        return table[list(SIDE_COLUMNS)].reset_index(drop=True)
    if by == "normalized":
        key = table["name"].map(normalize_name)
    else:
        key = table["name"].map((rules or DEFAULT_CATEGORY_RULES).classify)
    g = table.groupby(key.rename("key"), sort=False)
    out = pd.DataFrame({"calls": g["calls"].sum(), "total_ns": g["total_ns"].sum(), "percent": g["percent"].sum()}).reset_index()
    out = out.rename(columns={"key": "name"})
    out["avg_ns"] = out["total_ns"] / out["calls"].where(out["calls"] > 0, 1)
    return out[list(SIDE_COLUMNS)]


SIDE_COLUMNS = ("name", "calls", "total_ns", "avg_ns", "percent")


def kernel_diff(
    kernels_a: pd.DataFrame, kernels_b: pd.DataFrame, by: str = "name", rules: CategoryRules | None = None, noise_pct: float = DEFAULT_NOISE_PCT
) -> pd.DataFrame:
    """Per match key: calls, total and average ns in A and B, delta, ratio, status
    (:func:`hotspot_diff` of both kernel tables' :func:`~tui_prof.analysis.hotspots.hotspots`)."""
    if by not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {by!r}")
    ha = hotspots(kernels_a, by=by, rules=rules)[list(SIDE_COLUMNS)]
    hb = hotspots(kernels_b, by=by, rules=rules)[list(SIDE_COLUMNS)]
    return hotspot_diff(ha, hb, noise_pct)


def hotspot_diff(ha: pd.DataFrame, hb: pd.DataFrame, noise_pct: float = DEFAULT_NOISE_PCT) -> pd.DataFrame:
    """Per match key of two :data:`SIDE_COLUMNS` tables: calls, total and average ns in A
    and B, delta, ratio, share of each side's kernel time, status.

    ``status``: "added" (only in B), "removed" (only in A), else "slower" / "faster"
    when ``|delta_pct| > noise_pct``, or "same" (within noise). Columns
    ``KERNEL_DIFF_COLUMNS``; sorted by ``|delta_ns|`` descending, ties by key.
    """
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
    status = np.where(
        ~in_a, "added", np.where(~in_b, "removed", np.where(np.abs(np.nan_to_num(delta_pct)) <= noise_pct, "same", np.where(delta > 0, "slower", "faster")))
    )
    table = pd.DataFrame(
        {
            "key": merged["name"].astype(str).to_numpy(),
            "status": status,
            "calls_a": calls_a,
            "calls_b": calls_b,
            "total_a_ns": total_a,
            "total_b_ns": total_b,
            "avg_a_ns": avg_a,
            "avg_b_ns": avg_b,
            "delta_ns": delta,
            "delta_pct": delta_pct,
            "ratio": ratio,
            "avg_ratio": avg_ratio,
            "delta_calls": calls_b - calls_a,
            "share_a": merged["percent_a"].to_numpy(dtype=np.float64),
            "share_b": merged["percent_b"].to_numpy(dtype=np.float64),
        },
        columns=list(KERNEL_DIFF_COLUMNS),
    )
    table["_abs"] = np.abs(delta)
    table = table.sort_values(["_abs", "key"], ascending=[False, True], kind="stable").drop(columns="_abs")
    return table.reset_index(drop=True)


def side_domains(doc: Summary) -> dict[str, tuple[int, int]]:
    """Calls and total ns per rocprofv3 domain (KERNEL_DISPATCH, MEMORY_COPY, HIP_API, ...)
    of one run: from its statistics tables, where a domain has no trace rows from the trace."""
    out: dict[str, tuple[int, int]] = {}
    if doc.get("hotspots_source") == "trace":
        out["KERNEL_DISPATCH"] = (int(doc["kernels"]["dispatches"]), int(doc["kernels"]["total_ns"]))
    if doc.get("copies_source") == "trace":
        out["MEMORY_COPY"] = (int(doc["copies"]["count"]), int(doc["copies"]["time_ns"]))
    if doc.get("api", {}).get("source") == "trace":
        for r in doc["api"]["rows"]:
            calls, total = out.get(r["domain"], (0, 0))
            out[r["domain"]] = (calls + r["calls"], total + r["total_ns"])
    for t in doc.get("stats", {}).get("tables", []):
        if t["key"] != stats.DOMAIN_STATS and t["domain"] not in out:
            out[t["domain"]] = (int(t["calls"]), int(t["total_ns"]))
    return out


def domain_diff(a: Summary, b: Summary, noise_pct: float = DEFAULT_NOISE_PCT) -> list[dict[str, Any]]:
    """Per domain: calls and total ns of A and B, delta (B − A), status as for kernels."""
    da, db = side_domains(a), side_domains(b)
    rows = []
    for domain in [d for d in stats.DOMAIN_OF.values() if d in da or d in db] + sorted((set(da) | set(db)) - set(stats.DOMAIN_OF.values())):
        ca, ta = da.get(domain, (0, 0))
        cb, tb = db.get(domain, (0, 0))
        delta_pct = 100.0 * (tb - ta) / ta if ta else None
        status = (
            "added"
            if domain not in da
            else "removed"
            if domain not in db
            else "same"
            if tb == ta or (delta_pct is not None and abs(delta_pct) <= noise_pct)
            else "slower"
            if tb > ta
            else "faster"
        )
        rows.append(
            {"domain": domain, "status": status, "calls_a": ca, "calls_b": cb, "total_a_ns": ta, "total_b_ns": tb, "delta_ns": tb - ta, "delta_pct": delta_pct}
        )
    return rows


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
    summary_a: Summary
    summary_b: Summary
    category_rules: str = "built-in"
    notes: list[str] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        s = self.kernels["status"]
        return {"matched": int((~s.isin(["added", "removed"])).sum()), "added": int((s == "added").sum()), "removed": int((s == "removed").sum())}

    def metric(self, key: str) -> dict[str, Any]:
        return next(m for m in self.metrics if m["key"] == key)

    @property
    def empty(self) -> tuple[bool, bool]:
        """(A has no data, B has no data): a diff of nothing is an error, not a clean result."""
        return not has_data(self.summary_a), not has_data(self.summary_b)


@dataclass(frozen=True)
class Side:
    """One run set's part of a diff: its summary document and the metrics taken from it."""

    path: str
    formats: tuple[str, ...]
    summary: Summary
    metrics: dict[str, Any]
    missing: dict[str, str] = field(default_factory=dict)  # metric key -> what the run lacks for it


def side_metrics(runset: RunSet, *, rules: CategoryRules | None = None, gap_threshold_ns: int | None = None) -> Side:
    """The summary (every kernel, no gap list, no log scan) and :func:`run_metrics` of one run set."""
    doc = build_summary(runset, SummaryOptions(top=None, gap_threshold_ns=gap_threshold_ns, rules=rules, max_gaps=0, logs=False))
    return Side(runset.root, tuple(runset.formats), doc, run_metrics(doc), missing_data(doc))


def compare_sides(
    a: Side, b: Side, kernels: pd.DataFrame, *, by: str = "name", noise_pct: float = DEFAULT_NOISE_PCT, noise_pp: float = DEFAULT_NOISE_PP
) -> DiffResult:
    """The diff of B against A from both sides' metrics and the :func:`kernel_diff` table ``kernels``."""
    metrics = []
    for d in METRICS:
        va, vb = a.metrics.get(d.key), b.metrics.get(d.key)
        missing = a.missing.get(d.key, "") if va is None else b.missing.get(d.key, "")
        denominators = (a.metrics.get(d.denominator), b.metrics.get(d.denominator)) if d.denominator else None
        metrics.append(metric_delta(d, va, vb, noise_pct, noise_pp, missing=missing, denominators=denominators))
    step_rows, step_notes = step_metric_rows(a.summary, b.summary, noise_pct, noise_pp)
    metrics.extend(step_rows)
    notes = list(step_notes)
    fa, fb = set(a.formats), set(b.formats)
    if fa != fb:
        notes.append(f"formats differ: A {', '.join(sorted(fa)) or '-'} vs B {', '.join(sorted(fb)) or '-'}")
    for side, doc in (("A", a.summary), ("B", b.summary)):
        if doc.get("hotspots_source") == "stats":
            notes.append(f"{side}: kernels {doc['stats']['source']}")
    return DiffResult(
        a.path,
        b.path,
        by,
        float(noise_pct),
        float(noise_pp),
        kernels,
        metrics,
        a.summary,
        b.summary,
        category_rules=a.summary.get("category_rules", "built-in"),
        notes=notes,
        domains=domain_diff(a.summary, b.summary, noise_pct),
    )


def diff_runsets(
    a: RunSet,
    b: RunSet,
    *,
    by: str = "name",
    rules: CategoryRules | None = None,
    noise_pct: float = DEFAULT_NOISE_PCT,
    noise_pp: float = DEFAULT_NOISE_PP,
    gap_threshold_ns: int | None = None,
) -> DiffResult:
    """Diff run set B against run set A (B − A everywhere)."""
    if by not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {by!r}")
    side_a = side_metrics(a, rules=rules, gap_threshold_ns=gap_threshold_ns)
    side_b = side_metrics(b, rules=rules, gap_threshold_ns=gap_threshold_ns)
    table = hotspot_diff(side_kernels(a, by, rules), side_kernels(b, by, rules), noise_pct)
    return compare_sides(side_a, side_b, table, by=by, noise_pct=noise_pct, noise_pp=noise_pp)


def rematch(result: DiffResult, a: RunSet, b: RunSet, by: str, *, rules: CategoryRules | None = None) -> DiffResult:
    """``result`` with the kernels matched by ``by`` instead: only the kernel matching
    runs again; the summaries and metrics (which do not depend on the match) are kept."""
    if by not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {by!r}")
    table = hotspot_diff(side_kernels(a, by, rules), side_kernels(b, by, rules), result.noise_pct)
    return replace(result, by=by, kernels=table)


def regressions(result: DiffResult, pct: float) -> list[dict]:
    """What trips ``--fail-on-regression PCT``, each with its ``reason``.

    * Lower-is-better metrics that got worse by more than ``pct`` (percent of A; points
      for % metrics) and whose verdict is "regressed": a share whose denominator moved
      ("changed"), a neutral metric, or a metric a side has no data for ("n/a") never trips.
    * Kernels (per match key, in both runs) whose total grew by more than ``pct`` % of
      their A total when the growth is also beyond the noise share (``noise_pct``) of A's
      kernel time: a short kernel that doubles without moving the run is not a regression.
      Key ``kernel:<key>``.
    """
    out = []
    for m in result.metrics:
        if m["better"] != "lower" or m["status"] != "regressed" or m["delta"] is None or m["delta"] <= 0:
            continue
        change = m["delta"] if m["unit"] == "pct" else m["delta_pct"]
        if change > pct:
            shown = f"{change:+.2f} points" if m["unit"] == "pct" else f"{fmt_pct(change, 2, signed=True)} of A"
            out.append({**m, "reason": f"{m['label']} got worse by {shown} (> {pct:g}); lower is better"})
    ktime = result.metric("kernel_time_ns")["a"] or 0
    k = result.kernels
    if len(k) and ktime:
        both = ~k["status"].isin(["added", "removed"]).to_numpy()
        delta_pct = np.nan_to_num(k["delta_pct"].to_numpy(dtype=np.float64))
        material = k["delta_ns"].to_numpy() > result.noise_pct / 100.0 * ktime
        for i in np.flatnonzero(both & (delta_pct > pct) & material):
            r = k.iloc[i]
            out.append(
                {
                    "key": f"kernel:{r.key}",
                    "label": f"kernel {r.key}",
                    "unit": "ns",
                    "better": "lower",
                    "a": int(r.total_a_ns),
                    "b": int(r.total_b_ns),
                    "delta": int(r.delta_ns),
                    "delta_pct": float(r.delta_pct),
                    "status": "regressed",
                    "reason": f"kernel {str(r.key)[:80]} got slower by {fmt_pct(float(r.delta_pct), signed=True)} of its A total (> {pct:g}), "
                    f"{fmt_pct(100.0 * int(r.delta_ns) / ktime)} of A's kernel time (> {result.noise_pct:g}% noise)",
                }
            )
    return out


# The summary section whose trust label each gated metric follows (issue 32).
METRIC_SECTIONS = {
    "span_ns": "measurement",
    "kernel_count": "kernels",
    "kernel_time_ns": "kernels",
    "exposed_sync_ns": "sync",
    "idle_pct": "gpu",
    "idle_ns": "gpu",
    "launch_api_ns": "launch",
    "copy_time_ns": "copies",
}


def inconclusive(result: DiffResult) -> list[dict]:
    """The gated (lower-is-better, judged) metrics whose section is ``unreliable`` on either
    side, each with its ``key``, ``side`` and ``reason``: the gate cannot answer pass or fail."""
    out = []
    for m in comparable(result):
        section = METRIC_SECTIONS.get(m["key"])
        for side, doc in (("A", result.summary_a), ("B", result.summary_b)):
            label = (doc.get("trust") or {}).get(section or "")
            if label and label["trust"] == "unreliable":
                why = label["reasons"][0] if label["reasons"] else "unreliable"
                out.append({"key": m["key"], "side": side, "reason": f"{m['label']} is unreliable in {side}: {why}"})
    return out


def comparable(result: DiffResult) -> list[dict]:
    """The lower-is-better metrics both sides have data for (what the gate can judge)."""
    return [m for m in result.metrics if m["better"] == "lower" and m["status"] != "n/a"]


# --- steady-state steps ----------------------------------------------------------------------

STEP_METRICS: tuple[MetricDef, ...] = (
    MetricDef("step_median_ns", "steady step time (median)", "ns", "lower"),
    MetricDef("step_kernels", "kernels per step (median)", "count", "lower"),
    MetricDef("step_idle_pct", "GPU idle per step (median)", "pct", "lower"),
    MetricDef("step_exposed_sync_ns", "exposed sync per step (median)", "ns", "lower"),
)


def steady_values(doc: Summary) -> dict[str, list[float]] | None:
    """Per steady (not warm-up) step: wall, kernels, idle % (100 - busy %) and exposed sync;
    None when the run has no steps."""
    steps = doc.get("steps")
    if not steps or not steps["detected"]:
        return None
    rows = [r for r in steps["steps"] if not r["warmup"]]
    if not rows:
        return None
    return {
        "step_median_ns": [float(r["wall_ns"]) for r in rows],
        "step_kernels": [float(r["kernels"]) for r in rows],
        "step_idle_pct": [100.0 - float(r["busy_pct"]) for r in rows],
        "step_exposed_sync_ns": [float(r["exposed_sync_ns"]) for r in rows],
    }


def spread(values: list[float], unit: str) -> float:
    """The steady steps' own spread: the interquartile range p75 - p25 (one outlier step does
    not widen it), in % of the median (points for % metrics)."""
    v = np.asarray(values, dtype=np.float64)
    width = float(np.percentile(v, 75) - np.percentile(v, 25))
    if unit == "pct":
        return width
    median = float(np.median(v))
    return 100.0 * width / abs(median) if median else 0.0


def step_metric_rows(
    a: Summary, b: Summary, noise_pct: float = DEFAULT_NOISE_PCT, noise_pp: float = DEFAULT_NOISE_PP
) -> tuple[list[dict[str, Any]], list[str]]:
    """When both runs have steps: the steady-state medians compared (B - A), each judged
    against a noise band that is the larger of the default noise and either run's step
    spread (interquartile range), so step-to-step jitter is never a verdict; the step counts may differ.
    Rows join the summary metrics (and so the gate); ([], []) when a run has no steps."""
    va, vb = steady_values(a), steady_values(b)
    if va is None or vb is None:
        return [], []
    rows = []
    for d in STEP_METRICS:
        base = noise_pp if d.unit == "pct" else noise_pct
        band = max(base, spread(va[d.key], d.unit), spread(vb[d.key], d.unit))
        if d.unit == "pct":
            row = metric_delta(d, float(np.median(va[d.key])), float(np.median(vb[d.key])), noise_pct, band)
        else:
            row = metric_delta(d, float(np.median(va[d.key])), float(np.median(vb[d.key])), band, noise_pp)
        rows.append(row)
    sa, sb = a["steps"], b["steps"]
    note = (
        f"steps: A {len(va['step_median_ns'])} steady of {len(sa['steps'])} ({sa['name']}), "
        f"B {len(vb['step_median_ns'])} steady of {len(sb['steps'])} ({sb['name']}); step rows compare steady-state medians, "
        "noise band = the larger of the default noise and each run's interquartile step spread"
    )
    return rows, [note]


def rank_diff(a: Summary, b: Summary) -> dict[str, Any]:
    """Two runs' ranks side by side (e.g. 1 process vs 4): the whole run's communication
    share, overlap, straggler and collectives by type, and per rank number (matched by
    ``ranks[].rank``; None where a side lacks that rank) span, compute, communication and
    wait. Which kernels appear or vanish is the kernel diff's added/removed rows."""

    def comm(doc: Summary) -> dict[str, Any]:
        return dict(doc.get("communication") or {})

    ca, cb = comm(a), comm(b)
    types = sorted({t["type"] for t in ca.get("by_type", [])} | {t["type"] for t in cb.get("by_type", [])})

    def of_type(c: dict[str, Any], kind: str) -> tuple[int, int]:
        row = next((t for t in c.get("by_type", []) if t["type"] == kind), None)
        return (row["count"], row["total_ns"]) if row else (0, 0)

    by_type = []
    for kind in types:
        (na, ta), (nb, tb) = of_type(ca, kind), of_type(cb, kind)
        by_type.append({"type": kind, "count_a": na, "count_b": nb, "total_ns_a": ta, "total_ns_b": tb})
    ra: dict[int, dict[str, Any]] = {r["rank"]: dict(r) for r in a.get("ranks") or []}
    rb: dict[int, dict[str, Any]] = {r["rank"]: dict(r) for r in b.get("ranks") or []}
    keys = ("span_ns", "compute_ns", "communication_ns", "wait_ns", "idle_pct")
    rows = []
    for rank in sorted(set(ra) | set(rb)):
        row: dict[str, Any] = {"rank": rank}
        for key in keys:
            row[f"{key}_a"] = ra[rank][key] if rank in ra else None
            row[f"{key}_b"] = rb[rank][key] if rank in rb else None
        rows.append(row)
    sa: dict[str, Any] = dict(a.get("stragglers") or {})
    sb: dict[str, Any] = dict(b.get("stragglers") or {})
    return {
        "processes": [len(a.get("processes") or []), len(b.get("processes") or [])],
        "communication_pct": [ca.get("pct_of_time", 0.0), cb.get("pct_of_time", 0.0)],
        "communication_ns": [ca.get("kernel_ns", 0), cb.get("kernel_ns", 0)],
        "overlap_pct": [ca.get("overlap_pct", 0.0), cb.get("overlap_pct", 0.0)],
        "straggler": [sa.get("rank"), sb.get("rank")],
        "by_type": by_type,
        "ranks": rows,
    }
