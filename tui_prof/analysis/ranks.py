"""Ranks of a multi-process run: the rank table, communication and stragglers.

One row per process (a rank of a distributed job, or one process of ``srun --ntasks=N
rocprofv3 …``): its GPU time split into compute, communication and copies, its idle and
sync time, and how long it waited in collectives for the slowest rank
(docs/metrics.md, "Ranks").

* Communication kernels are the ``communication`` category of the category rules (NCCL,
  RCCL, MSCCL kernels and the collective names); copies are the copies plus the
  ``copy/fill`` kernels; every other kernel is compute. Each time is the **union** of that
  class's intervals on the process's GPUs, so parts stay within the GPU busy time.
* Overlap = time in which a communication kernel runs while another kernel runs on the
  same GPU (copy/fill kernels included: they run on the compute units), per GPU, summed;
  ``overlap_pct`` of the communication time (HTA's communication/computation overlap).
* A collective instance is the k-th communication kernel of one type (AllReduce, …) on
  every rank that has a k-th. Its ranks end together (a collective completes on all
  ranks at once), so the rank that arrived last spends the least time in it: that rank is
  the instance's straggler, and every rank's **wait** is its time in the instance beyond the
  fastest (shortest) one. Durations are on each rank's own clock, so this needs no common
  clock between hosts.
* Where a Kineto trace records the collectives' args (the kernels' ``collective``,
  ``coll_bytes``, ``coll_ranks``), the type comes from them and each type gets its message
  bytes, algorithm bandwidth and NCCL-tests' bus bandwidth (:func:`bandwidth`).
* The timeline's rank lanes lay every process on one axis (:func:`rank_offsets`): as they
  are when all share a clock, else each shifted so that its first collective starts with
  the lowest rank's (docs/metrics.md, "Rank lanes on the timeline").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, hostapi
from tui_prof.analysis.names import CategoryRules, rule_text, unique_strings
from tui_prof.analysis.sections import CollectiveBandwidth, CollectiveInstance, CollectiveType, CommunicationSection, RankRecord, StragglerSection
from tui_prof.analysis.stats import KERNEL_STATS, run_total_ns
from tui_prof.model import Run
from tui_prof.model.schema import category_array, column_array

COMMUNICATION = "communication"
COPY = "copy/fill"
LISTED_INSTANCES = 50

# collective type from a kernel name (matched without the parameter list, case-insensitive):
# order matters, ReduceScatter and AllReduce before Reduce
COLLECTIVE_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (t, re.compile(p, re.IGNORECASE))
    for t, p in (
        ("ReduceScatter", r"reduce_?scatter"),
        ("AllReduce", r"all_?reduce|cross_device_reduce|custom_ar"),
        ("AllGather", r"all_?gather"),
        ("AllToAll", r"all_?to_?all"),
        ("Broadcast", r"broadcast|bcast"),
        ("SendRecv", r"send_?recv|_send|_recv|sendrecv"),
        ("Reduce", r"reduce"),
    )
)
UNKNOWN_TYPE = "unknown"  # RCCL's rccl_main_kernel and the like do not name their collective
RCCL_API = re.compile(r"^(nccl|rccl)", re.IGNORECASE)

# collective type from the framework's name of the collective (Kineto "Collective name":
# allreduce, _allgather_base, reduce_scatter_tensor_coalesced, all_to_all, send, ...);
# ReduceScatter/AllReduce/AllGather before Reduce/Gather, and "barrier", "wait" and the
# like are unknown (the kernel name decides then)
ARG_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (t, re.compile(p, re.IGNORECASE))
    for t, p in (
        ("ReduceScatter", r"reduce_?scatter"),
        ("AllReduce", r"all_?reduce"),
        ("AllGather", r"all_?gather"),
        ("AllToAll", r"all_?to_?all"),
        ("Broadcast", r"broadcast"),
        ("SendRecv", r"^_?(send|recv)|sendrecv"),
        ("Gather", r"gather"),
        ("Scatter", r"scatter"),
        ("Reduce", r"reduce"),
    )
)


def arg_collective_type(name: str) -> str:
    """The collective type of a framework's collective name (``UNKNOWN_TYPE`` when it names none)."""
    for kind, pattern in ARG_PATTERNS:
        if pattern.search(name):
            return kind
    return UNKNOWN_TYPE


def bus_factor(kind: str, ranks: int) -> float | None:
    """NCCL-tests' bus-bandwidth factor of a collective over ``ranks`` ranks (doc/PERFORMANCE.md
    and src/*.cu of NVIDIA/nccl-tests): AllReduce 2(n-1)/n; ReduceScatter, AllGather, AllToAll,
    Gather, Scatter (n-1)/n; Broadcast, Reduce, SendRecv 1. None when the type is unknown, or
    the factor needs n and it is unknown (< 1)."""
    if kind in ("Broadcast", "Reduce", "SendRecv"):
        return 1.0
    if ranks < 1:
        return None
    if kind == "AllReduce":
        return 2.0 * (ranks - 1) / ranks
    if kind in ("ReduceScatter", "AllGather", "AllToAll", "Gather", "Scatter"):
        return (ranks - 1) / ranks
    return None


def collective_type(name: str) -> str:
    """The collective a communication kernel performs, from its name (``UNKNOWN_TYPE`` when
    the name does not say)."""
    head = rule_text(name)
    for kind, pattern in COLLECTIVE_PATTERNS:
        if pattern.search(head):
            return kind
    return UNKNOWN_TYPE


def collective_types(names: pd.Series, rows: np.ndarray) -> np.ndarray:
    """:func:`collective_type` of the kernel names at ``rows`` (a categorical column: each
    distinct name classified once)."""
    if not len(rows):  # no collective (most processes of a many-process run): nothing to classify
        return np.array([], dtype=object)
    if isinstance(names.dtype, pd.CategoricalDtype):
        values = names.array  # the Categorical: no ``.cat`` accessor per process
        kinds = np.array([collective_type(str(x)) for x in values.categories] + [UNKNOWN_TYPE], dtype=object)
        codes = values.codes[rows]
        return kinds[np.where(codes >= 0, codes, len(kinds) - 1)]
    return np.array([collective_type(str(x)) for x in names.to_numpy()[rows]], dtype=object)


def _overlap(a_s: np.ndarray, a_e: np.ndarray, b_s: np.ndarray, b_e: np.ndarray) -> int:
    """|A ∩ B| for two sets of intervals: |∪A| + |∪B| − |∪(A ∪ B)|."""
    if not len(a_s) or not len(b_s):
        return 0
    both_s = np.concatenate([a_s, b_s])
    both_e = np.concatenate([a_e, b_e])
    return aggregate.interval_union(a_s, a_e) + aggregate.interval_union(b_s, b_e) - aggregate.interval_union(both_s, both_e)


class RankCore:
    """What one process contributes to the rank table and the collective instances."""

    def __init__(self, run: Run, label: str, wall_ns: int, classes: np.ndarray, rules: CategoryRules, categories: np.ndarray | None = None):
        """``categories``: each kernel's category, operator first (``kernel_categories_of``,
        the summary's category table); None: by kernel name (``rules``)."""
        self.run = run
        self.label = label
        self.wall_ns = wall_ns
        k = run.kernels
        ks, ke = column_array(k, "start"), column_array(k, "end")  # no Series per column: thousands of processes
        agent = column_array(k, "agent")
        if categories is not None and len(categories) == len(k):
            is_comm, is_copy = categories == COMMUNICATION, categories == COPY
        elif len(k):
            column = category_array(k, "name")
            is_comm = _per_category(column, lambda n: rules.classify(n) == COMMUNICATION)
            is_copy = _per_category(column, lambda n: rules.classify(n) == COPY)
        else:
            is_comm = is_copy = np.zeros(0, dtype=bool)
        is_compute = ~(is_comm | is_copy)
        no_copies = np.zeros(0, dtype=np.int64)  # an empty copy table: no pandas step
        cs, ce = (run.copies["start"].to_numpy(), run.copies["end"].to_numpy()) if len(run.copies) else (no_copies, no_copies)
        self.compute_ns = aggregate.interval_union(ks, ke, is_compute)
        self.communication_ns = aggregate.interval_union(ks, ke, is_comm)
        copy_rows = np.flatnonzero(is_copy)
        self.copy_ns = aggregate.interval_union(np.concatenate([ks.take(copy_rows), cs]), np.concatenate([ke.take(copy_rows), ce]))
        self.busy_ns = aggregate.interval_union(np.concatenate([ks, cs]), np.concatenate([ke, ce]))
        starts = np.concatenate([ks, cs])
        self.gpu_span_ns = int(np.concatenate([ke, ce]).max()) - int(starts.min()) if len(starts) else 0  # Python ints: no int64 overflow
        # the compute side of the overlap is every other kernel, copy/fill kernels included
        # (they run on the GPU's compute units; HTA's definition, in which only the copy
        # engine's Memcpy/Memset events are apart)
        other = ~is_comm
        self.overlap_ns = sum(
            _overlap(ks[is_comm & (agent == a)], ke[is_comm & (agent == a)], ks[other & (agent == a)], ke[other & (agent == a)])
            for a in np.unique(agent[is_comm])
        )
        # no communication kernel: nothing overlaps it (and no gather of the compute kernels)
        self.compute_exposed_ns = self.compute_ns - (_overlap(ks[is_compute], ke[is_compute], ks[is_comm], ke[is_comm]) if is_comm.any() else 0)
        api = run.api
        sync = hostapi.sync_mask(classes) if len(api) else np.zeros(0, dtype=bool)
        self.sync_ns = aggregate.interval_union(api["start"].to_numpy(), api["end"].to_numpy(), sync) if len(api) else 0
        if len(api):
            rccl = _per_category(api["name"], lambda n: bool(RCCL_API.match(n))) | _per_category(api["domain"], lambda d: d in ("rccl", "nccl"))
            self.api_calls = int(rccl.sum())
            self.api_ns = aggregate.interval_union(api["start"].to_numpy(), api["end"].to_numpy(), rccl)
        else:
            self.api_calls = self.api_ns = 0
        # the collectives in start order with their types (one lookup per distinct name; the
        # collective's own args, where the trace records them, before the kernel name) and
        # message bytes and group sizes (-1: not recorded)
        order = np.argsort(ks[is_comm], kind="stable")
        n_comm = int(is_comm.sum())
        if n_comm:  # no collective: nothing to look up (most processes of a many-process run)
            types = _map_category(k["name"], collective_type, is_comm)
            has_args = "collective" in k.columns
            if has_args:
                by_arg = _map_category(k["collective"], arg_collective_type, is_comm)
                types = np.where(by_arg != UNKNOWN_TYPE, by_arg, types)
            self.coll_bytes = k["coll_bytes"].to_numpy()[is_comm].astype(np.int64)[order] if has_args else np.full(n_comm, -1, dtype=np.int64)
            self.coll_ranks = k["coll_ranks"].to_numpy()[is_comm].astype(np.int64)[order] if has_args else np.full(n_comm, -1, dtype=np.int64)
        else:
            types = np.array([], dtype=object)
            self.coll_bytes = np.zeros(0, dtype=np.int64)
            self.coll_ranks = np.zeros(0, dtype=np.int64)
        self.coll_types = types[order]
        self.coll_dur = (ke[is_comm] - ks[is_comm])[order]
        dur = ke - ks
        if len(k):
            names = category_array(k, "name")  # the Categorical: no Series per access
            codes = names.codes
            valid = codes >= 0
            totals = np.bincount(codes[valid], weights=dur[valid], minlength=len(names.categories))
            top = int(np.argmax(totals)) if len(totals) else 0
            self.top_kernel: str | None = str(names.categories[top]) if len(totals) else None
            self.top_kernel_pct = aggregate.pct(int(totals[top]), int(dur.sum())) if len(totals) else 0.0
        else:
            self.top_kernel, self.top_kernel_pct = None, 0.0
        self.source = "trace" if len(k) else "none"
        self.dispatches = int(len(k))
        stats_table = run.tool_stats.get(KERNEL_STATS)
        if not len(k) and stats_table is not None and len(stats_table):
            _stats_core(self, stats_table, rules)
        gpu_ids = sorted(
            {int(a) for a in np.unique(agent)}
            | {int(a) for a in (run.copies["dst_agent"].to_numpy() if len(run.copies) else ()) if a >= 0 and run.agent(int(a))}
        )
        names = []
        for gid in gpu_ids:
            a = run.agent(gid)
            if a is not None and a.type == "GPU":
                names.append(f"{gid}: {a.product or a.arch or a.name}".rstrip(": "))
            elif a is None:
                names.append(str(gid))
        self.gpus = ", ".join(names)


def _map_category(column: pd.Series, func, rows: np.ndarray | None = None) -> np.ndarray:
    """``func`` of every row's string (``rows``: of the rows it selects, a mask), evaluated
    once per distinct value (object array; the rows take their value through integer
    codes, so no per-row string is built)."""
    col = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    values = [func(str(c)) for c in col.cat.categories] + [func("")]  # code -1 (missing): the last
    inverse, uniq = unique_strings(values)
    codes = col.cat.codes.to_numpy()
    return uniq[inverse[codes if rows is None else codes[rows]]]


def _per_category(column: pd.Series | pd.Categorical, test) -> np.ndarray:
    """Boolean ``test`` of every row's string, evaluated once per distinct value."""
    if isinstance(column, pd.Categorical):
        col = column
    else:
        col = (column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")).array  # the Categorical itself
    hits = np.array([bool(test(str(c))) for c in col.categories] + [bool(test(""))], dtype=bool)
    return hits[col.codes]


def _stats_core(core: RankCore, table: pd.DataFrame, rules: CategoryRules) -> None:
    """A process with kernel statistics and no kernel trace (rocprofv3 --stats): its compute,
    communication and copy/fill kernel time are the statistics' TotalDurationNs summed per
    class (sums: the file has no intervals to unite), its collectives their Calls (each of
    the type's average length, the remainder on the last, so totals stay exact)."""
    names = table["name"].astype(str).to_numpy()
    total = table["total_ns"].to_numpy().astype(np.int64)
    calls = table["calls"].to_numpy().astype(np.int64)
    cats = np.array([rules.classify(n) for n in names], dtype=object)
    comm, copy = cats == COMMUNICATION, cats == COPY
    core.compute_ns = int(total[~(comm | copy)].sum())
    core.communication_ns = int(total[comm].sum())
    core.copy_ns = int(total[copy].sum())
    core.compute_exposed_ns = core.compute_ns
    core.dispatches = int(calls.sum())
    top = int(np.argmax(total))
    # the share of the process's kernel time over the run (the rows' sum, or TotalDurationNs × 100 / Percentage of a cut table)
    core.top_kernel, core.top_kernel_pct = str(names[top]), aggregate.pct(int(total[top]), run_total_ns(table))
    types: list[str] = []
    durs: list[int] = []
    for name, n, t in zip(names[comm], calls[comm], total[comm], strict=True):
        n, t = int(n), int(t)
        if n <= 0:
            continue
        types += [collective_type(name)] * n
        durs += [t // n] * n
        durs[-1] += t - (t // n) * n
    core.coll_types = np.array(types, dtype=object)
    core.coll_dur = np.array(durs, dtype=np.int64)
    core.coll_bytes = np.full(len(durs), -1, dtype=np.int64)  # statistics hold no message sizes
    core.coll_ranks = np.full(len(durs), -1, dtype=np.int64)
    core.source = "stats"


def env_rank(run: Run) -> int | None:
    """The rank the process's recorded environment names (``RANK``, ``OMPI_COMM_WORLD_RANK``,
    ``SLURM_PROCID``, ``PMI_RANK``, ``PMIX_RANK``: ``meta.extra["rank_env"]``, rocpd), else None."""
    found = run.meta.extra.get("rank_env")
    rank = found.get("rank") if isinstance(found, dict) else None
    return rank if isinstance(rank, int) and rank >= 0 else None


def rank_numbers(runs: Sequence[Run]) -> list[tuple[int, str]]:
    """(rank, source) per process: the trace's own rank (Kineto ``distributedInfo``) where
    every process records one, else the rank of each process's recorded environment
    (``environment``), else the position in (host, pid) order; a source is used only when
    every process has a rank from it and no two share one."""
    if runs and all(run.meta.rank is not None for run in runs) and len({run.meta.rank for run in runs}) == len(runs):
        return [(int(run.meta.rank or 0), "distributedInfo") for run in runs]
    from_env = [env_rank(run) for run in runs]
    if runs and all(r is not None for r in from_env) and len(set(from_env)) == len(runs):
        return [(int(r or 0), "environment") for r in from_env]
    order = sorted(range(len(runs)), key=lambda i: (runs[i].meta.hostname, runs[i].meta.pid if runs[i].meta.pid is not None else -1, i))
    rank_of = {i: pos for pos, i in enumerate(order)}
    return [(rank_of[i], "order") for i in range(len(runs))]


def rank_cores(
    runs: Sequence[Run],
    labels: Sequence[str],
    walls: Sequence[int],
    classes: Sequence[np.ndarray],
    rules: CategoryRules,
    categories: Sequence[np.ndarray | None] | None = None,
) -> list[RankCore]:
    cats = list(categories) if categories is not None else [None] * len(runs)
    return [RankCore(run, label, wall, cls, rules, cat) for run, label, wall, cls, cat in zip(runs, labels, walls, classes, cats, strict=True)]


def instances(cores: Sequence[RankCore], ranks: Sequence[int]) -> tuple[list[CollectiveInstance], np.ndarray, np.ndarray]:
    """Every collective instance (the k-th of a type on every rank that has a k-th; only
    instances seen on at least two ranks), the wait per rank (ns, indexed like ``cores``)
    and how often each rank arrived last."""
    n = len(cores)
    waits = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    out: list[CollectiveInstance] = []
    # statistics know no single collective: only traced ranks take part in instances
    traced = [c.source == "trace" for c in cores]
    types = sorted({str(t) for c, tr in zip(cores, traced, strict=True) if tr for t in set(c.coll_types.tolist())})
    big = np.iinfo(np.int64).max
    for kind in types:
        per_rank = [c.coll_dur[c.coll_types == kind] if tr else np.zeros(0, np.int64) for c, tr in zip(cores, traced, strict=True)]
        depth = max((len(d) for d in per_rank), default=0)
        # ranks x instances; missing instances (a rank with fewer) hold -1
        dur = np.full((n, depth), -1, dtype=np.int64)
        for i, d in enumerate(per_rank):
            dur[i, : len(d)] = d
        have = dur >= 0
        seen = have.sum(axis=0)
        fastest = np.where(have, dur, big).min(axis=0)
        w = np.where(have, dur - fastest, 0)
        shortest = have & (dur == fastest)
        n_short = shortest.sum(axis=0)
        first_short = shortest.argmax(axis=0)  # the lowest rank index among the shortest
        keep = seen >= 2
        waits += w[:, keep].sum(axis=1)
        clear = keep & (n_short < seen)  # one or more ranks, not all, arrived last
        np.add.at(last, first_short[clear], 1)
        slowest = np.where(have, dur, -1).max(axis=0)
        wsum = w.sum(axis=0)
        for k in np.flatnonzero(keep).tolist():
            out.append(
                {
                    "type": kind,
                    "index": k,
                    "straggler": ranks[int(first_short[k])] if clear[k] else None,
                    "fastest_ns": int(fastest[k]),
                    "slowest_ns": int(slowest[k]),
                    "wait_ns": int(wsum[k]),
                }
            )
    return out, waits, last


def rank_records(cores: Sequence[RankCore], numbers: Sequence[tuple[int, str]], waits: np.ndarray, last: np.ndarray) -> list[RankRecord]:
    rows: list[RankRecord] = []
    for i, (c, (rank, source)) in enumerate(zip(cores, numbers, strict=True)):
        rows.append(
            {
                "rank": rank,
                "rank_source": source,
                "label": c.label,
                "host": c.run.meta.hostname or None,
                "pid": c.run.meta.pid,
                "gpus": c.gpus,
                "dispatches": c.dispatches,
                "source": c.source,
                "span_ns": int(c.wall_ns),
                "gpu_span_ns": int(c.gpu_span_ns),
                "busy_ns": int(c.busy_ns),
                "compute_ns": int(c.compute_ns),
                "communication_ns": int(c.communication_ns),
                "copy_ns": int(c.copy_ns),
                "idle_pct": aggregate.pct(c.gpu_span_ns - c.busy_ns, c.gpu_span_ns),
                "sync_ns": int(c.sync_ns),
                "sync_pct": aggregate.pct(c.sync_ns, c.wall_ns),
                "overlap_ns": int(c.overlap_ns),
                "overlap_pct": aggregate.pct(c.overlap_ns, c.communication_ns),
                "compute_exposed_ns": int(c.compute_exposed_ns),
                "collectives": int(len(c.coll_dur)),
                "wait_ns": int(waits[i]),
                "wait_pct": aggregate.pct(int(waits[i]), c.wall_ns),
                "straggler_of": int(last[i]),
                "top_kernel": c.top_kernel,
                "top_kernel_pct": c.top_kernel_pct,
            }
        )
    rows.sort(key=lambda r: (r["rank"], r["label"]))
    return rows


def communication_section(cores: Sequence[RankCore]) -> CommunicationSection:
    """Communication over every rank: kernel and RCCL/NCCL API time, overlap with compute,
    and count and time per collective type."""
    kernel_ns = sum(c.communication_ns for c in cores)
    overlap = sum(c.overlap_ns for c in cores)
    kinds = np.concatenate([c.coll_types for c in cores]) if cores else np.array([], dtype=object)
    durs = np.concatenate([c.coll_dur for c in cores]) if cores else np.array([], dtype=np.int64)
    sizes = np.concatenate([c.coll_bytes for c in cores]) if cores else np.array([], dtype=np.int64)
    group = np.concatenate([c.coll_ranks for c in cores]) if cores else np.array([], dtype=np.int64)
    # one integer code per collective (its type's name): no string copy of every collective
    codes, uniques = pd.factorize(kinds, use_na_sentinel=False)
    names = sorted({str(u) for u in uniques})
    index = {name: i for i, name in enumerate(names)}
    kind_code = np.array([index[str(u)] for u in uniques], dtype=np.int64)[codes] if len(uniques) else np.zeros(0, np.int64)
    durs = durs.astype(np.int64)
    masks = [kind_code == i for i in range(len(names))]
    by = sorted(((name, int(mine.sum()), int(durs[mine].sum()), mine) for name, mine in zip(names, masks, strict=True)), key=lambda x: (-x[2], x[0]))
    by_type: list[CollectiveType] = []
    for kind, n, t, mine in by:
        by_type.append({"type": kind, "count": n, "total_ns": t, "avg_ns": round(t / n, 3), **bandwidth(kind, durs[mine], sizes[mine], group[mine])})
    return {
        "kernel_ns": int(kernel_ns),
        "api_ns": int(sum(c.api_ns for c in cores)),
        "api_calls": int(sum(c.api_calls for c in cores)),
        "pct_of_time": aggregate.pct(kernel_ns, sum(c.wall_ns for c in cores)),
        "overlap_ns": int(overlap),
        "overlap_pct": aggregate.pct(overlap, kernel_ns),
        "by_type": by_type,
    }


def bandwidth(kind: str, durs: np.ndarray, sizes: np.ndarray, ranks: np.ndarray) -> CollectiveBandwidth:
    """Message bytes and bandwidths of the instances of one collective type (docs/metrics.md,
    "Collective bandwidth"): over the instances whose size is recorded (``sized``), the
    algorithm bandwidth Σ bytes / Σ time and the bus bandwidth Σ (bytes × factor) / Σ time
    (time-weighted: the bandwidth of all of them together), and the median of the
    per-instance bus bandwidths. bytes / ns = GB/s (10**9 bytes per second, as NCCL-tests).
    None where no instance's size (or, for the bus bandwidth, its group size) is known."""
    sized = (sizes >= 0) & (durs > 0)
    factors = bus_factors(kind, ranks)
    bus = sized & ~np.isnan(factors)
    total_bytes = int(sizes[sized].sum())
    sized_ns = int(durs[sized].sum())
    bus_ns = int(durs[bus].sum())
    weighted = sizes[bus].astype(np.float64) * factors[bus]
    groups = np.unique(ranks[sized & (ranks >= 1)])
    return {
        "sized": int(sized.sum()),
        "bytes": total_bytes if sized.any() else None,
        "group_size": int(groups[0]) if len(groups) == 1 else None,
        "algorithm_bandwidth_gbs": round(total_bytes / sized_ns, 6) if sized_ns else None,
        "bus_bandwidth_gbs": round(float(weighted.sum()) / bus_ns, 6) if bus_ns else None,
        "bus_bandwidth_median_gbs": round(float(np.median(weighted / durs[bus])), 6) if bus.any() else None,
    }


def bus_factors(kind: str, ranks: np.ndarray) -> np.ndarray:
    """:func:`bus_factor` of every instance of one type (float64; NaN where it is None)."""
    uniq, inverse = np.unique(ranks, return_inverse=True)  # one factor per distinct group size
    table = np.array([np.nan if (f := bus_factor(kind, int(n))) is None else f for n in uniq.tolist()], dtype=np.float64)
    return table[inverse]


def straggler_section(rows: Sequence[RankRecord], listed: Sequence[CollectiveInstance]) -> StragglerSection:
    """The straggler: the rank that arrived last in most instances (ties: the one whose
    instances made the others wait longest), its compute before collectives against the
    median of the other ranks', and the others' summed wait."""
    empty: StragglerSection = {
        "instances": len(listed),
        "rank": None,
        "last_in": 0,
        "compute_excess_pct": 0.0,
        "others_wait_ns": 0,
        "others_wait_pct": 0.0,
        "listed": [],
    }
    if len(rows) < 2 or not listed:
        return empty
    caused: dict[int, int] = {}
    for inst in listed:
        if inst["straggler"] is not None:
            caused[inst["straggler"]] = caused.get(inst["straggler"], 0) + inst["wait_ns"]
    best = max(rows, key=lambda r: (r["straggler_of"], caused.get(r["rank"], 0), -r["rank"]))
    if best["straggler_of"] == 0:
        return empty
    others = [r for r in rows if r is not best]
    median = float(np.median([r["compute_exposed_ns"] for r in others]))
    wait = sum(r["wait_ns"] for r in others)
    top = sorted(listed, key=lambda i: (-i["wait_ns"], i["type"], i["index"]))[:LISTED_INSTANCES]
    return {
        "instances": len(listed),
        "rank": best["rank"],
        "last_in": best["straggler_of"],
        "compute_excess_pct": round(100.0 * (best["compute_exposed_ns"] - median) / median, 4) if median else 0.0,
        "others_wait_ns": int(wait),
        "others_wait_pct": aggregate.pct(wait, sum(r["span_ns"] for r in others)),
        "listed": top,
    }


def ranks_sections(
    runs: Sequence[Run],
    labels: Sequence[str],
    walls: Sequence[int],
    classes: Sequence[np.ndarray],
    rules: CategoryRules,
    categories: Sequence[np.ndarray | None] | None = None,
) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
    """The summary's ``ranks``, ``communication`` and ``stragglers`` sections; ``categories``:
    per process, its kernels' categories operator first (:class:`RankCore`)."""
    return sections_of_cores(rank_cores(runs, labels, walls, classes, rules, categories))


def sections_of_cores(cores: Sequence[RankCore]) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
    """:func:`ranks_sections` from each process's :class:`RankCore` (computed per process as
    it loads): the waits, stragglers and communication need every rank's core."""
    numbers = rank_numbers([c.run for c in cores])
    listed, waits, last = instances(cores, [n for n, _ in numbers])
    rows = rank_records(cores, numbers, waits, last)
    return rows, communication_section(cores), straggler_section(rows, listed)


def communication_mask(kernels: pd.DataFrame, rules: CategoryRules) -> np.ndarray:
    """Per kernel row: True for a communication kernel (the ``communication`` category of
    ``rules``, classified once per distinct name)."""
    if not len(kernels):
        return np.zeros(0, dtype=bool)
    return _per_category(category_array(kernels, "name"), lambda n: rules.classify(n) == COMMUNICATION)


@dataclass(frozen=True)
class RankAlignment:
    """How the timeline lays every process on one time axis (docs/metrics.md, "Rank lanes on the timeline").

    ``offsets[i]`` (ns) is added to every time of process ``i``: all 0 when the processes
    share a clock (one host, or no host recorded: :func:`aggregate.clock_key`); otherwise each
    process is shifted so that its first collective starts when the first collective of the
    reference process (the lowest rank with a collective) starts, and a process without a
    collective keeps its own clock (offset 0)."""

    shared_clock: bool
    hosts: int  # distinct clocks (host names; processes without one count as one host)
    first_collective: tuple[int | None, ...]  # per process: start (its own clock, ns) of its first communication kernel
    reference: int | None  # index of the process the others are aligned to (None: shared clock or no collective)
    offsets: tuple[int, ...]

    @property
    def unaligned(self) -> int:
        """Processes left on their own clock although the others are shifted (no collective)."""
        return 0 if self.shared_clock else sum(1 for f in self.first_collective if f is None)


def first_collectives(runs: Sequence[Run], rules: CategoryRules, masks: Sequence[np.ndarray] | None = None) -> list[int | None]:
    """Start (ns, the process's own clock) of each process's first communication kernel, or None
    (``masks``: each process's :func:`communication_mask`, where the caller has them already)."""
    out: list[int | None] = []
    for i, run in enumerate(runs):
        comm = masks[i] if masks is not None else communication_mask(run.kernels, rules)
        out.append(int(run.kernels["start"].to_numpy()[comm].min()) if comm.any() else None)
    return out


def rank_offsets(runs: Sequence[Run], rules: CategoryRules, masks: Sequence[np.ndarray] | None = None) -> RankAlignment:
    """The time shift of every process on the rank timeline (see :class:`RankAlignment`;
    ``masks`` as for :func:`first_collectives`)."""
    keys = [aggregate.clock_key(run) for run in runs]
    hosts = len(set(keys))
    first = first_collectives(runs, rules, masks)
    if hosts <= 1:
        return RankAlignment(True, hosts, tuple(first), None, tuple(0 for _ in runs))
    numbers = rank_numbers(runs)
    having = [i for i, f in enumerate(first) if f is not None]
    if not having:
        return RankAlignment(False, hosts, tuple(first), None, tuple(0 for _ in runs))
    ref = min(having, key=lambda i: (numbers[i][0], i))
    anchor = first[ref]
    assert anchor is not None
    offsets = tuple(anchor - f if f is not None else 0 for f in first)
    return RankAlignment(False, hosts, tuple(first), ref, offsets)
