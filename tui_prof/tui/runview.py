"""What the TUI shows of a loaded run set, prepared once in the loading worker.

Every number comes from :mod:`tui_prof.analysis` or straight from the model tables;
this module only arranges them (lane layout, relative times, group columns). Analysis
functions that are not available in this build are recorded in ``missing`` and their
panes say "not available yet".
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunSet
from tui_prof.tui.lanes import Lane, TimelineModel

# group-by choices: label -> ``by`` of analysis.hotspots.hotspots / group_key
GROUPS = ("name", "normalised name", "category", "agent", "process")
GROUP_BY = {"name": "name", "normalised name": "normalized", "category": "category", "agent": "agent", "process": "pid"}


def _optional(module: str, name: str):
    """``tui_prof.analysis.<module>.<name>`` or None when this build lacks it."""
    try:
        return getattr(importlib.import_module(f"tui_prof.analysis.{module}"), name)
    except (ImportError, AttributeError):
        return None


@dataclass
class RunView:
    runset: RunSet
    kernels: pd.DataFrame  # all runs' kernels + display columns t (rel ns), dur, lane, run
    origin: int
    timeline: TimelineModel
    gaps: pd.DataFrame | None  # analysis gaps (+ lane, rel start/end) or None
    group_columns: dict[str, pd.Series] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    _hotspots: dict[str, pd.DataFrame] = field(default_factory=dict)
    launches: pd.DataFrame | None = None  # analysis link_launches per kernel row, or None
    summary: dict | None = None  # analysis.summary.build_summary document (findings, measurement, ...)

    @property
    def groups(self) -> list[str]:
        return [g for g in GROUPS if g in self.group_columns]

    def hotspots(self, group: str = "name") -> pd.DataFrame:
        """Hotspot table of analysis.hotspots.hotspots(kernels, by=GROUP_BY[group])."""
        if group not in self._hotspots:
            from tui_prof.analysis.hotspots import hotspots

            self._hotspots[group] = hotspots(self.kernels, by=GROUP_BY[group])
        return self._hotspots[group]

    def dispatches(self, group: str, value: str) -> pd.DataFrame:
        """Kernel rows whose ``group`` key equals ``value`` (a display-ready frame)."""
        key = self.group_columns[group]
        if isinstance(key.dtype, pd.CategoricalDtype):
            cats = key.cat.categories
            where = np.flatnonzero(cats.astype(str) == str(value))
            mask = np.isin(key.cat.codes.to_numpy(), where) if len(where) else np.zeros(len(key), bool)
        elif key.dtype.kind in "iu":
            try:
                mask = key.to_numpy() == int(value)
            except ValueError:
                mask = np.zeros(len(key), bool)
        else:
            mask = key.astype(str).to_numpy() == str(value)
        return self.kernels[mask]

    def kernel_rows(self, name: str) -> pd.DataFrame:
        """Dispatches of the kernel called ``name``."""
        return self.dispatches("name", name)

    def run_of(self, row: pd.Series) -> Run:
        return self.runset.runs[int(row["run"])]


def _gpu_label(run_prefix: str, agent: int, queue_rank: int, many_queues: bool) -> str:
    text = f"{run_prefix}GPU{agent}"
    return text + (f" q{queue_rank}" if many_queues else "")


def build_view(runset: RunSet, progress=None) -> RunView:
    """Arrange a loaded run set for the TUI (lanes, display columns, analysis results)."""
    from tui_prof.analysis.hotspots import all_kernels

    missing: list[str] = []
    api_classes = _optional("hostapi", "api_classes")
    gpu_timeline = _optional("timeline", "gpu_timeline")
    link_launches = _optional("hostapi", "link_launches")
    if api_classes is None:
        missing.append("sync-call classes (analysis.hostapi.api_classes)")
    if gpu_timeline is None:
        missing.append("idle gaps (analysis.timeline.gpu_timeline)")

    starts = [int(t["start"].min()) for r in runset.runs for t in (r.kernels, r.api, r.copies) if len(t)]
    ends = [int(t["end"].max()) for r in runset.runs for t in (r.kernels, r.api, r.copies) if len(t)]
    origin = min(starts) if starts else 0
    span = (max(ends) - origin) if ends else 1
    multi = len(runset.runs) > 1

    lanes: list[Lane] = []
    kernel_lane_parts = []
    gap_parts = []
    launch_parts = []
    row_base = 0
    for ri, run in enumerate(runset.runs):
        prefix = f"{run.meta.pid or ri}:" if multi else ""
        api = run.api
        # host rows: one per thread, sync calls as their own intervals
        if len(api):
            classes = api_classes(api) if api_classes else None
            tid = api["tid"].to_numpy()
            s_all = api["start"].to_numpy() - origin
            e_all = api["end"].to_numpy() - origin
            for t in np.unique(tid):
                m = tid == t
                lane = Lane(f"{prefix}host T{t}" if t >= 0 else f"{prefix}host", "host", s_all[m], e_all[m], key=(ri, "host", int(t)))
                if classes is not None:
                    from tui_prof.analysis.hostapi import BLOCKING_COPY, SYNC

                    sm = m & ((classes == SYNC) | (classes == BLOCKING_COPY))
                    lane.sync_start, lane.sync_end = s_all[sm], e_all[sm]
                lanes.append(lane)
        # GPU rows: one per (agent, queue); stream when the queue is unknown
        k = run.kernels
        k_lane = np.full(len(k), -1, dtype=np.int64)
        if len(k):
            agent = k["agent"].to_numpy().astype(np.int64)
            queue = k["queue"].to_numpy()
            queue = np.where(queue >= 0, queue, k["stream"].to_numpy())
            ks = k["start"].to_numpy() - origin
            ke = k["end"].to_numpy() - origin
            for a in np.unique(agent):
                am = agent == a
                queues = np.unique(queue[am])
                for qi, q in enumerate(queues):
                    m = am & (queue == q)
                    k_lane[m] = len(lanes)
                    lanes.append(Lane(_gpu_label(prefix, int(a), qi, len(queues) > 1), "gpu", ks[m], ke[m], key=(ri, int(a), int(q))))
        c = run.copies
        if len(c):
            lanes.append(Lane(f"{prefix}copies", "copy", c["start"].to_numpy() - origin, c["end"].to_numpy() - origin, key=(ri, "copy")))
        kernel_lane_parts.append(k_lane)
        if gpu_timeline is not None and len(k):
            _, gaps = gpu_timeline(run)
            if len(gaps):
                gaps = gaps.copy()
                gaps["run"] = ri
                gap_parts.append(gaps)
        if link_launches is not None and len(k) and len(api):
            linked = link_launches(k, api)
            linked = linked.assign(kernel_row=linked["kernel_row"].to_numpy() + row_base)
            launch_parts.append(linked)
        row_base += len(k)
        if progress:
            progress("preparing", ri + 1, len(runset.runs))

    kernels = all_kernels(runset).copy()
    kernels["t"] = kernels["start"].to_numpy() - origin
    kernels["dur"] = kernels["end"].to_numpy() - kernels["start"].to_numpy()
    kernels["lane"] = np.concatenate(kernel_lane_parts) if kernel_lane_parts else np.zeros(0, np.int64)
    kernels["run"] = np.concatenate([np.full(len(r.kernels), i) for i, r in enumerate(runset.runs)]) if runset.runs else []
    kernels["row"] = np.arange(len(kernels))

    gaps = None
    gap_array = gap_lanes = None
    if gap_parts:
        gaps = pd.concat(gap_parts, ignore_index=True).sort_values("start", kind="stable").reset_index(drop=True)
        gaps["t"] = gaps["start"].to_numpy() - origin
        gap_array = np.stack([gaps["start"].to_numpy() - origin, gaps["end"].to_numpy() - origin], axis=1).astype(np.int64)
        # the gap's lane: the first lane of its agent in its run (gaps are per agent)
        first_lane = {}
        for i, lane in enumerate(lanes):
            if lane.kind == "gpu":
                first_lane.setdefault((lane.key[0], lane.key[1]), i)
        gap_lanes = np.array([first_lane.get((int(r), int(a)), -1) for r, a in zip(gaps["run"], gaps["agent"])], dtype=np.int64)
    elif gpu_timeline is not None:
        gap_array = np.zeros((0, 2), dtype=np.int64)
        gap_lanes = np.zeros(0, dtype=np.int64)

    timeline = TimelineModel(lanes, origin=origin, span=max(span, 1), gaps=gap_array, gap_lanes=gap_lanes)

    kernels = kernels.reset_index(drop=True)
    from tui_prof.analysis.hotspots import group_key

    group_columns: dict[str, pd.Series] = {}
    for label in GROUPS:
        try:
            group_columns[label] = group_key(kernels, GROUP_BY[label]).reset_index(drop=True)
        except (ImportError, AttributeError, KeyError):
            missing.append(f"hotspot grouping by {label} (analysis.hotspots.group_key)")

    launches = None
    if launch_parts:
        launches = pd.concat(launch_parts, ignore_index=True).set_index("kernel_row")
    elif link_launches is None:
        missing.append("launch links / queue delay (analysis.hostapi.link_launches)")
    summary = None
    build_summary = _optional("summary", "build_summary")
    if build_summary is not None:
        if progress:
            progress("analysing", 0, 1)
        summary = build_summary(runset, top=50)
        if progress:
            progress("analysing", 1, 1)
    else:
        missing.append("findings, measurement table, counters (analysis.summary.build_summary)")
    return RunView(runset, kernels, origin, timeline, gaps, group_columns, missing, launches=launches, summary=summary)
