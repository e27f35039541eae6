"""The fewest rocprofv3 passes that collect a set of metrics or counters on one architecture.

A pass (one run of the application) can count at most ``limits[block]`` counters of each
hardware block at once (:mod:`tui_prof.analysis.counterdict`). Blocks are independent, so
the fewest passes for a counter set is ``max over blocks of ceil(n_block / limit_block)``,
plus one pass per accumulate counter (an ``SQ_ACCUM_PREV_HIRES``-style counter runs alone,
as rocprof-compute runs it). :func:`plan` reaches that bound: counters go, in the order the
metrics name them, into the first pass with room for their block (rocprof-compute's own
first-fit rule); a metric whose counters all fit one open pass is kept in it, so its ratio
comes from one run. Derived metrics expand into their counters (``needs`` first).
``GRBM_GUI_ACTIVE`` is added to every pass with room when a metric reads it, so each pass
can be normalised by its own busy cycles.

NVIDIA archs get the Nsight Compute metric names instead: ncu plans its own replays.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from tui_prof.analysis.counterdict import ArchDict, MetricInfo, load

PLAN_SCHEMA = "tuiprof.counters-plan/1"
APP = "<your app and its arguments>"
_COUNTER_NAME = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+(_sum|_max|_min|_avr)?$")

# What the Counters pane reads first (the summary's derived metrics), by vendor family;
# the plan of an empty request and the Hardware pane's plan use these where the arch has them.
DEFAULT_METRICS = (
    "gpu_busy",
    "wavefronts",
    "valu_active_threads",
    "valu_utilization",
    "l2_hit",
    "lds_bank_conflict",
    "mfma_utilization",
    "hbm_bandwidth_pct",
    "occupancy_percent",
    "wave_occupancy",
    "dependency_wait",
    "alu_stalled_by_lds",
)


def default_metrics(arch: str) -> list[str]:
    """:data:`DEFAULT_METRICS` that exist on ``arch``."""
    d = load(arch)
    return [k for k in DEFAULT_METRICS if k in d.metrics]


def _key(name: str) -> str:
    """Matching key of a metric or counter name: case, spaces and punctuation ignored."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _metric_index(d: ArchDict) -> dict[str, MetricInfo]:
    """Matching key -> metric: tuiprof's keys first, then rocprof-compute's names, labels,
    and rocprofv3's names last (rocprofv3's ``VALUUtilization`` is rocprof-compute's VALU
    Active Threads, while ``valu_utilization`` / "VALU Utilization" is the busy share)."""
    index: dict[str, MetricInfo] = {}
    for field in ("key", "rpc", "label", "sdk"):
        for m in d.metrics.values():
            name = getattr(m, field)
            if name:
                index.setdefault(_key(name), m)
    return index


def _ambiguity(d: ArchDict, name: str, chosen: MetricInfo) -> str | None:
    """A note when ``name`` is also another metric's rocprofv3 name."""
    other = next((m for m in d.metrics.values() if m is not chosen and m.sdk and _key(m.sdk) == _key(name)), None)
    if other is None or name == chosen.key:
        return None
    return f"{name} read as {chosen.key} ({chosen.label}); rocprofv3's {other.sdk} is {other.key} ({other.label})"


def _fits_one_pass(d: ArchDict, counters: Sequence[str]) -> bool:
    need: dict[str, int] = {}
    for c in counters:
        need[d.block_of(c)] = need.get(d.block_of(c), 0) + 1
    return all(d.limits.get(b, 0) >= n for b, n in need.items())


def derived_names(d: ArchDict) -> dict[str, list[str]]:
    """rocprofv3 derived metrics requested by name on ``--pmc`` (FETCH_SIZE ...) -> the
    hardware counters rocprofv3 collects for them in the same pass."""
    return {m.pmc: list(m.counters) for m in d.metrics.values() if m.pmc and m.counters and _fits_one_pass(d, m.counters)}


def hardware(d: ArchDict, items: Sequence[str]) -> list[str]:
    """The hardware counters of ``items`` (derived names expanded), each once, in order."""
    derived = derived_names(d)
    out: list[str] = []
    for item in items:
        out.extend(c for c in derived.get(item, [item]) if c not in out)
    return out


def _expand(d: ArchDict, m: MetricInfo, seen: set[str] | None = None) -> list[str]:
    """What to request for a metric, its ``needs`` first, each once, in order: a derived
    metric rocprofv3 evaluates in one pass by its name (FETCH_SIZE), else the counters."""
    seen = set() if seen is None else seen
    out: list[str] = []
    if m.key in seen:
        return out
    seen.add(m.key)
    for dep in m.needs:
        if dep in d.metrics:
            out.extend(c for c in _expand(d, d.metrics[dep], seen) if c not in out)
    own = [m.pmc] if m.pmc and m.pmc in derived_names(d) else list(m.counters)
    out.extend(c for c in own if c not in out)
    return out


def _resolve(d: ArchDict, requested: Sequence[str]) -> tuple[list[tuple[str, list[str], MetricInfo | None]], list[dict[str, str]], list[str]]:
    """(groups, cannot, notes): each request as (name, counters, metric or None)."""
    index = _metric_index(d)
    counters_by_key = {_key(c): c for c in d.counters}
    absent = {_key(k): (k, v) for k, v in d.absent.items()}
    groups: list[tuple[str, list[str], MetricInfo | None]] = []
    cannot: list[dict[str, str]] = []
    notes: list[str] = []
    for name in requested:
        k = _key(name)
        if k in absent:
            cannot.append({"name": name, "why": f"not on {d.arch}: {absent[k][1]}"})
        elif k in index:
            m = index[k]
            groups.append((name, _expand(d, m), m))
            note = _ambiguity(d, name, m)
            if note:
                notes.append(note)
        elif k in counters_by_key:
            groups.append((name, [counters_by_key[k]], None))
        elif d.vendor == "amd" and _COUNTER_NAME.match(name) and d.block_of(name) in d.limits:
            groups.append((name, [name], None))
            notes.append(f"{name} is not in tuiprof's {d.arch} dictionary: planned in block {d.block_of(name)}; check it exists with rocprofv3 --list-avail")
        else:
            why = "not a metric or counter tuiprof knows for " + d.arch
            if d.vendor == "amd" and _COUNTER_NAME.match(name):
                why = f"block {name.split('_', 1)[0]} has no counters on {d.arch} (no per-pass limit known)"
            cannot.append({"name": name, "why": why})
    return groups, cannot, notes


class _Pass:
    """One pass: the names to request (``items``: counters and derived metrics) and the
    hardware counters they take (``counters``), with the room left per block."""

    def __init__(self, limits: dict[str, int], derived: dict[str, list[str]] | None = None) -> None:
        self.room = dict(limits)
        self.derived = derived or {}
        self.items: list[str] = []
        self.counters: list[str] = []

    def _new(self, items: Sequence[str]) -> list[str]:
        out: list[str] = []
        for item in items:
            for c in self.derived.get(item, [item]):
                if c not in self.counters and c not in out:
                    out.append(c)
        return out

    def fits(self, d: ArchDict, items: Sequence[str]) -> bool:
        need: dict[str, int] = {}
        for c in self._new(items):
            b = d.block_of(c)
            need[b] = need.get(b, 0) + 1
        return all(self.room.get(b, 0) >= n for b, n in need.items())

    def add(self, d: ArchDict, item: str) -> None:
        for c in self._new([item]):
            self.room[d.block_of(c)] -= 1
            self.counters.append(c)
        if item not in self.items:
            self.items.append(item)


def min_passes(d: ArchDict, counters: Sequence[str]) -> int:
    """The lower bound (and optimum): max over blocks of ceil(count / limit), plus one pass
    per accumulate counter (derived names count as their hardware counters)."""
    unique = hardware(d, list(dict.fromkeys(counters)))
    accumulate = [c for c in unique if c in d.counters and d.counters[c].accumulate]
    per_block: dict[str, int] = {}
    for c in unique:
        if c not in accumulate:
            b = d.block_of(c)
            per_block[b] = per_block.get(b, 0) + 1
    bound = max((math.ceil(n / d.limits[b]) for b, n in per_block.items()), default=0)
    return bound + len(accumulate)


def _accumulate_passes(d: ArchDict, groups: Sequence[Sequence[str]]) -> tuple[list[_Pass], list[list[str]]]:
    """(a pass per accumulate counter, holding the other counters of its groups that fit, the
    groups' remaining counters): a counter asked for by several groups runs in one pass."""
    derived = derived_names(d)
    accumulate_passes: list[_Pass] = []
    normal: list[list[str]] = []
    for g in groups:
        acc = [c for c in g if c in d.counters and d.counters[c].accumulate]
        rest = [c for c in g if c not in acc]
        for c in acc:
            p = next((q for q in accumulate_passes if c in q.items), None)
            if p is None:
                p = _Pass(d.limits, derived)
                p.room[d.block_of(c)] = p.room.get(d.block_of(c), 0) + 1  # the accumulate slot
                p.add(d, c)
                accumulate_passes.append(p)
            for other in rest:
                if p.fits(d, [other]):
                    p.add(d, other)
            rest = [c for c in rest if c not in p.items]
        if rest:
            normal.append(rest)
    return accumulate_passes, normal


def fewest_passes(d: ArchDict, groups: Sequence[Sequence[str]]) -> int:
    """The fewest passes for ``groups`` under :func:`pack`'s rules: the accumulate counters'
    passes plus :func:`min_passes` of the counters that do not ride in them."""
    accumulate, normal = _accumulate_passes(d, groups)
    return len(accumulate) + min_passes(d, [c for g in normal for c in g])


def pack(d: ArchDict, groups: Sequence[Sequence[str]]) -> list[list[str]]:
    """Passes (the names each requests) for ``groups`` (each a metric's counters or derived
    names, in order): accumulate counters alone with the group's other counters; derived
    metrics whole (rocprofv3 evaluates one within a pass), largest first; the rest first-fit,
    a group kept whole in the first open pass that holds it, else split counter by counter."""
    derived = derived_names(d)
    accumulate_passes, normal = _accumulate_passes(d, groups)
    bound = min_passes(d, [c for g in normal for c in g])
    passes: list[_Pass] = []
    wholes = sorted(dict.fromkeys(c for g in normal for c in g if c in derived), key=lambda n: -len(derived[n]))
    for name in wholes:  # derived metrics first (first-fit decreasing): they cannot be split
        target = next((p for p in passes if p.fits(d, [name])), None)
        if target is None:
            target = _Pass(d.limits, derived)
            passes.append(target)
        target.add(d, name)
    for g in normal:
        todo = [c for c in g if not any(c in p.items for p in passes)]
        if not todo:
            continue
        whole = next((p for p in passes if p.fits(d, todo)), None)
        if whole is None and len(passes) < bound:
            whole = _Pass(d.limits, derived)
            passes.append(whole)
        if whole is not None and whole.fits(d, todo):
            for c in todo:
                whole.add(d, c)
            continue
        for c in todo:  # split: first pass with room for this counter's block
            target = next((p for p in passes if p.fits(d, [c])), None)
            if target is None:
                target = _Pass(d.limits, derived)
                passes.append(target)
            target.add(d, c)
    if any("GRBM_GUI_ACTIVE" in hardware(d, g) for g in groups):
        for p in passes:
            if "GRBM_GUI_ACTIVE" not in p.counters and p.fits(d, ["GRBM_GUI_ACTIVE"]):
                p.add(d, "GRBM_GUI_ACTIVE")
    return [p.items for p in passes] + [p.items for p in accumulate_passes]


def _defect_entry(defect, hit: list[str], rocm: str | None) -> dict[str, Any]:
    applies = defect.applies(rocm)
    return {
        "kind": defect.kind,
        "counters": hit,
        "text": defect.text,
        "issue": defect.issue,
        "versions": defect.versions(),
        "applies": applies,
    }


def _warnings(d: ArchDict, counters: Sequence[str], rocm: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(warnings, blocking): known defects touching the planned counters; an ``abort``
    defect that applies to this ROCm version blocks every counter."""
    warnings, blocking = [], []
    for defect in d.defects:
        hit = [c for c in counters if defect.touches(c, d.block_of(c))]
        if not hit:
            continue
        entry = _defect_entry(defect, hit if defect.scope != "all" else ["all"], rocm)
        if entry["applies"] is False:
            continue
        if defect.kind == "abort" and entry["applies"] is True:
            blocking.append(entry)
        else:
            warnings.append(entry)
    return warnings, blocking


def _metric_rows(d: ArchDict, groups, passes: list[list[str]]) -> list[dict[str, Any]]:
    rows = []
    for name, counters, m in groups:
        # the one pass that holds them all, else the pass of each counter's first appearance
        whole = next((i + 1 for i, p in enumerate(passes) if all(c in p for c in counters)), None)
        where = [whole] if whole else sorted({next(i + 1 for i, p in enumerate(passes) if c in p) for c in counters if any(c in p for p in passes)})
        row: dict[str, Any] = {"requested": name, "counters": counters, "hardware_counters": hardware(d, counters), "passes": where, "split": len(where) > 1}
        if m is not None:
            row.update(
                key=m.key,
                label=m.label,
                rocprof_compute=m.rpc or None,
                rocprofv3=m.sdk or None,
                unit=m.unit,
                formula=m.formula,
                threshold=m.threshold_text(),
                meaning=m.meaning,
                ncu=m.ncu or None,
            )
        rows.append(row)
    return rows


def _nvidia_plan(d: ArchDict, requested: Sequence[str], app: str) -> dict[str, Any]:
    index = _metric_index(d)
    metrics: list[dict[str, Any]] = []
    cannot: list[dict[str, str]] = []
    for name in requested:
        m = index.get(_key(name))
        if m is not None:
            metrics.append({"requested": name, "key": m.key, "label": m.label, "ncu": m.ncu, "formula": m.formula})
        elif "__" in name:  # already an ncu metric name
            metrics.append({"requested": name, "key": None, "label": name, "ncu": name, "formula": name})
        else:
            cannot.append({"name": name, "why": f"no Nsight Compute equivalent known for {d.arch}"})
    names = list(dict.fromkeys(part.split(" ")[0] for m in metrics for part in m["ncu"].split(" / ")))
    commands = [f"ncu --metrics {','.join(names)} --csv --log-file tuiprof_ncu.csv -- {app}"] if names else []
    return {"metrics": metrics, "cannot": cannot, "commands": commands, "ncu_metrics": names}


def plan(arch: str, requested: Sequence[str], rocm: str | None = None, app: str = APP) -> dict[str, Any]:
    """The plan for ``requested`` (metric keys, rocprof-compute or rocprofv3 metric names,
    counter names) on ``arch`` with ROCm ``rocm`` (None: unknown). Raises
    :class:`~tui_prof.analysis.counterdict.UnknownArch` for an arch with no dictionary."""
    d = load(arch)
    out: dict[str, Any] = {
        "schema": PLAN_SCHEMA,
        "arch": d.arch,
        "vendor": d.vendor,
        "family": d.family,
        "products": list(d.products),
        "rocm": rocm,
        "requested": list(requested),
        "limits": dict(d.limits),
        "limits_source": d.limits_source,
        "rocprof_compute": d.rocprof_compute,
    }
    if d.vendor == "nvidia":
        out.update(_nvidia_plan(d, requested, app), passes=[], pmc_lines=[], input_file="", warnings=[], notes=[])
        out["notes"] = ["Nsight Compute replays each kernel as often as the metrics need; it plans its own passes."]
        return out
    groups, cannot, notes = _resolve(d, requested)
    all_counters = hardware(d, list(dict.fromkeys(c for _, cs, _ in groups for c in cs)))
    warnings, blocking = _warnings(d, all_counters, rocm)
    if blocking:
        for name, _, _ in groups:
            cannot.append({"name": name, "why": "; ".join(f"{b['text']} ({b['issue']})" for b in blocking)})
        groups = []
        all_counters = []
    passes = pack(d, [cs for _, cs, _ in groups])
    raw = [hardware(d, p) for p in passes]
    for c in all_counters:  # counters newer than any release tuiprof can name
        if c in d.counters and d.counters[c].since:
            notes.append(f"{c} was added by {d.counters[c].since}: check rocprofv3 --list-avail lists it on your stack")
    out.update(
        metrics=_metric_rows(d, groups, passes),
        counters=[
            {
                "name": c,
                "block": d.block_of(c),
                "pass": next(i + 1 for i, p in enumerate(raw) if c in p),
                "meaning": d.counters[c].meaning if c in d.counters else "",
                "ncu": (d.counters[c].ncu if c in d.counters else "") or None,
            }
            for c in all_counters
        ],
        derived={n: cs for n, cs in derived_names(d).items() if any(n in p for p in passes)},
        passes=[{"index": i + 1, "pmc": p, "counters": r, "blocks": _block_counts(d, r)} for i, (p, r) in enumerate(zip(passes, raw, strict=True))],
        min_passes=fewest_passes(d, [cs for _, cs, _ in groups]),
        pmc_lines=["--pmc " + " ".join(p) for p in passes],
        commands=[f"rocprofv3 --kernel-trace --pmc {' '.join(p)} --output-format csv -d tuiprof_pmc_{i + 1} -- {app}" for i, p in enumerate(passes)],
        input_file="".join(f"pmc: {' '.join(p)}\n" for p in passes),
        cannot=cannot,
        warnings=warnings,
        notes=notes,
    )
    return out


def _block_counts(d: ArchDict, counters: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counters:
        b = d.block_of(c)
        out[b] = out.get(b, 0) + 1
    return out


def rocm_of(tool_version: str) -> str | None:
    """The ROCm version in a run's tool version ('7.2.0', 'ROCm 6.4.1'), or None when it is
    another numbering (rocprofiler-sdk's own 0.x/1.x versions)."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", tool_version or "")
    if not m or int(m.group(1)) < 5:
        return None
    return m.group(0)


def run_plan(arch: str, rocm: str | None, available: Sequence[str]) -> dict[str, Any] | None:
    """For a run on ``arch``: which of the Counters pane's metrics it could measure (on this
    stack), which it did (every counter collected; ``_sum`` and bare names alike), and the
    plan for the rest; on NVIDIA the ncu command for the same metrics. None when the
    dictionary has no such arch."""
    try:
        d = load(arch)
    except ValueError:
        return None
    if d.vendor == "nvidia":
        ncu = plan(arch, default_metrics(arch))
        return {"arch": d.arch, "vendor": "nvidia", "commands": ncu["commands"], "could": [m["key"] for m in ncu["metrics"]]}
    have = {c.removesuffix("_sum") for c in available}
    could = plan(arch, default_metrics(arch), rocm)

    def collected(names: Sequence[str]) -> bool:
        return all(c.removesuffix("_sum") in have for c in names)

    measured = [m["key"] for m in could["metrics"] if m.get("key") and (collected(m["counters"]) or collected(m["hardware_counters"]))]
    missing = [m["key"] for m in could["metrics"] if m.get("key") and m["key"] not in measured]
    return {
        "arch": d.arch,
        "rocm": rocm,
        "could": [m["key"] for m in could["metrics"]],
        "labels": {m["key"]: m["label"] for m in could["metrics"] if m.get("key")},
        "could_passes": len(could["passes"]),
        "measured": measured,
        "collected": sorted(available),
        "plan": plan(arch, missing, rocm) if missing else None,
        "cannot": could["cannot"],
        "warnings": could["warnings"],
    }
