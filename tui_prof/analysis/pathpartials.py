"""The critical path, its ``critical_ns`` and the findings of a run summarised rank by rank (issue 36).

The first pass (:mod:`tui_prof.analysis.partials`) merges the ranks' partials; the critical
path needs what only that merge knows: the combined steps (a single process's window is its
steady state), the node budgets (shared by the processes) and the collectives of every rank
(whom each rank waited for). So a second pass, one task per rank, loads the rank again and
computes its part as the in-process summary does for that process
(:func:`~tui_prof.analysis.critical.process_window`, :func:`~tui_prof.analysis.critical.process_path`):
its :class:`PathPartial` holds its record of ``critical_path.processes``, its ns on the path
per kernel name (rounded per process) and per group of each grouped table, and the saving of
every edit a finding may ask for (:func:`~tui_prof.analysis.savings.projected_edits`) in its
part. The driver adds them in run order (:func:`add_path_sections`): the records, the
``critical_ns`` columns (integer sums; the grouped tables' float sums in the same order as
in one process, :func:`~tui_prof.analysis.critical.group_sums`), the ranks on the path, then
the findings of the merged document with the saving of the process each edit saves most in
(:func:`~tui_prof.analysis.savings.best_saving`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tui_prof.analysis import critical, savings
from tui_prof.analysis.critical import (
    add_critical_ns,
    add_group_critical,
    collective_waits,
    group_sums,
    operator_groups,
    process_path,
    process_window,
    steady_records,
    sums_by_key,
    window_budget,
)
from tui_prof.analysis.findings import build_findings
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.operators import has_operators, link_operators
from tui_prof.analysis.partials import PartialMerge, StepsNotMerged, keys_of
from tui_prof.analysis.runinput import RunInput, run_inputs
from tui_prof.analysis.savings import best_saving, edit_key, part_of, part_saving, projected_edits, ranked_savings, saving_budget
from tui_prof.analysis.sections import StepsSection
from tui_prof.analysis.whatif import Edits
from tui_prof.guard import jsonout
from tui_prof.model import RunMeta, RunSet

PATH_SCHEMA = "tuiprof.pathpartial/1"
PATH_CACHE_KIND = "rank-paths"  # the cache entries of path partials (loaders.cache.save_doc)
# the grouped tables with a critical_ns column: (the document's table, the group of a kernel row)
GROUP_TABLES = (("category", "category"), ("normalized", "normalized"), ("agent", "agent"), ("process", "pid"))

WaitTable = dict[str, tuple[np.ndarray, np.ndarray]]  # collective type -> (fastest ns, last rank) per instance


@dataclass(frozen=True)
class PathSettings:
    """What every rank's path task shares: the node budgets (each process's share of the
    critical path's and of the savings'), whether the run's collectives are compared (several
    windows: each record says whom it waited for) and the edits projected."""

    path_nodes: int
    saving_nodes: int
    with_waits: bool
    edits: tuple[Edits, ...]

    def key(self) -> str:
        return jsonout.dumps([PATH_SCHEMA, self.path_nodes, self.saving_nodes, self.with_waits, [edit_key(e) for e in self.edits]])


@dataclass(frozen=True)
class PathPartial:
    """One process's part of the critical path, its ``critical_ns`` columns and its savings."""

    key: tuple  # which process it is (identity)
    label: str
    record: dict[str, Any] | None  # its record of critical_path.processes; None: no window
    by_kernel: dict[str, int]  # ns on the path per kernel / copy name (scaled to the window, rounded)
    groups: dict[str, dict[str, float]]  # grouped table -> group -> ns on the path ("operator" where it records operators)
    savings: dict[str, dict[str, Any] | None]  # edit key -> savings.part_saving of its part (None: an empty graph)
    schema: str = PATH_SCHEMA


def identity(meta: RunMeta, label: str) -> tuple:
    """Which process of the first pass a path partial is (host, pid, rank and its label in
    the summary: a recording cut from a process has its own), matched to the merge's
    partials by :meth:`PathMerge.ordered`."""
    return (meta.hostname, meta.pid if meta.pid is not None else -1, meta.rank or 0, label)


def path_partial(r: RunInput, records: list[dict], settings: PathSettings, table: WaitTable | None, rules: CategoryRules) -> PathPartial:
    """The path partial of one process (``records``: its steady steps when the run's steps
    are this process's alone, as :func:`~tui_prof.analysis.critical.steady_records`)."""
    run = r.run
    link = link_operators(run.kernels, run.api, run.markers, r.index) if has_operators(run) else None
    keys = keys_of(r, rules, link)  # category: operator first, which also says its collectives
    categories = keys["category"].astype(str).to_numpy(dtype=object) if link is not None else None
    w = process_window(r, records, settings.path_nodes, categories)
    if w is None:
        return PathPartial(identity(run.meta, r.label), r.label, None, {}, {}, {})
    waits = collective_waits({0: w}, rules, table).get(0) if settings.with_waits and table is not None else None
    record, by_kernel, row_ns = process_path(w, rules, waits, settings.with_waits)
    groups = {table_name: sums_by_key(keys[by], row_ns) for table_name, by in GROUP_TABLES}
    if link is not None:
        groups["operator"] = sums_by_key(operator_groups(len(run.kernels), link), row_ns)
    part = part_of(w, settings.saving_nodes)
    savings = {edit_key(e): part_saving(part, e, rules) if part is not None else None for e in settings.edits}
    return PathPartial(identity(run.meta, r.label), r.label, record, by_kernel, groups, savings)


def path_partials(runset: RunSet, steady: dict[str, list[dict]], settings: PathSettings, table: WaitTable | None, rules: CategoryRules) -> list[PathPartial]:
    """The path partial of every process of ``runset`` (one rank's files, loaded again, its
    processes cut into recordings where the first pass cut them)."""
    return [path_partial(r, steady.get(r.label, []), settings, table, rules) for r in run_inputs(runset)]


@dataclass(frozen=True)
class PathPlan:
    """What the driver sends the path tasks (:func:`path_plan`)."""

    settings: PathSettings
    steps: StepsSection
    table: WaitTable | None
    table_hash: str
    windows: int  # processes with a window (0: no critical path, no task)

    def steady(self, labels: Sequence[str], processes: int) -> dict[str, list[dict]]:
        """The steady step records of each of ``labels`` that has any."""
        found = {label: steady_records(self.steps, label, processes) for label in labels}
        return {label: recs for label, recs in found.items() if recs}

    def key(self, steady: dict[str, list[dict]]) -> str:
        """What a rank's path partials depend on besides its files (a cache key part)."""
        return self.settings.key() + self.table_hash + jsonout.dumps(sorted(steady.items()))


def table_hash(table: WaitTable | None) -> str:
    """A short digest of the wait table (made once on the driver: a part of every rank's path key)."""
    if table is None:
        return "none"
    digest = hashlib.sha256()
    for kind in sorted(table):
        fastest, last = (np.ascontiguousarray(a, dtype=np.int64) for a in table[kind])
        digest.update(kind.encode("utf-8", "surrogateescape") + b"\0" + fastest.tobytes() + b"\0" + last.tobytes() + b"\0")
    return digest.hexdigest()[:24]


def path_plan(merge: PartialMerge, max_nodes: int | None = None, saving_nodes: int | None = None) -> PathPlan | None:
    """The second pass's inputs from the merged first pass (``max_nodes``, ``saving_nodes``:
    the budgets shared by the processes; None: the critical path's and the savings' own);
    None where the steps could not be combined (a slow step's rank could not be loaded again)."""
    max_nodes = critical.MAX_NODES if max_nodes is None else max_nodes
    saving_nodes = savings.SAVING_NODES if saving_nodes is None else saving_nodes
    try:
        steps = merge.steps_memory()[0]
    except StepsNotMerged:
        return None
    windows = merge.windows
    top = merge.table("name")
    name = str(top["name"].iloc[0]) if len(top) else None
    table = merge.wait_table() if windows >= 2 else None  # one window compares no collectives
    # the records say whom they waited for where several windows have collectives to compare
    settings = PathSettings(window_budget(len(merge.ranks), max_nodes), saving_budget(windows, saving_nodes), bool(table), tuple(projected_edits(name)))
    return PathPlan(settings, steps, table, table_hash(table), windows)


@dataclass
class PathMerge:
    """The path partials of the ranks, and the ranks whose path task failed."""

    parts: list[PathPartial] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (rank label, one-line reason)

    def add(self, parts: Sequence[PathPartial]) -> None:
        self.parts.extend(parts)

    def ordered(self, merge: PartialMerge) -> list[PathPartial]:
        """The partials of the merge's processes, in the run set's order (RankPartial.key)."""
        order = {identity(meta, label): key for key, label, _record, _core, meta in merge.ranks}
        return sorted((p for p in self.parts if p.key in order), key=lambda p: order[p.key])


def run_in_process(merge: PartialMerge, plan: PathPlan, load: Callable[[str], RunSet], rules: CategoryRules) -> PathMerge:
    """The second pass here, rank by rank (``load``: a rank by its label, as the first pass loaded it)."""
    out = PathMerge()
    if not plan.windows:
        return out
    processes = len(merge.ranks)
    merged = {identity(meta, label) for _key, label, _record, _core, meta in merge.ranks}
    loaded: set[str] = set()
    for _key, label, *_rest in sorted(merge.ranks, key=lambda x: x[0]):
        if label in loaded:  # processes that share a label are loaded together
            continue
        loaded.add(label)
        try:
            runset = load(label)
            labels = [r.label for r in run_inputs(runset)]
            out.add([p for p in path_partials(runset, plan.steady(labels, processes), plan.settings, plan.table, rules) if p.key in merged])
        except Exception as err:  # a rank that cannot be loaded again (its files gone): named, the rest built
            out.failed.append((label, f"{type(err).__name__}: {err}".splitlines()[0]))
    return out


def add_path_sections(doc: dict[str, Any], merge: PartialMerge, paths: PathMerge, plan: PathPlan) -> None:
    """``critical_path``, the ``critical_ns`` columns and ``findings`` of the merged ``doc``
    (its other sections made), as :func:`~tui_prof.analysis.summary.summarise` adds them."""
    parts = paths.ordered(merge)
    with_path = [p for p in parts if p.record is not None]
    doc["critical_path"] = None
    if paths.failed:  # the ranks whose path task failed: said, the rest still built
        doc["critical_path"] = {"processes": [p.record for p in with_path], "failed_ranks": [{"label": lb, "reason": why} for lb, why in paths.failed]}
    if with_path:
        by_kernel: dict[str, int] = {}
        for p in with_path:
            for name, ns in p.by_kernel.items():
                by_kernel[name] = by_kernel.get(name, 0) + ns
        add_critical_ns(doc["hotspots"], by_kernel)
        section: dict[str, Any] = {"processes": [p.record for p in with_path]}
        on_path = merge.ranks_on_path(plan.steps)
        if on_path:
            section["ranks_on_path"] = on_path
        doc["critical_path"] = section | ({"failed_ranks": doc["critical_path"]["failed_ranks"]} if paths.failed else {})
    findings = build_findings(doc)  # type: ignore[arg-type]
    if with_path:
        findings = ranked_savings(findings, lambda edits: best_saving([(p.label, s) for p in with_path if (s := p.savings.get(edit_key(edits))) is not None]))
        by = doc["hotspots_by"]
        for table_name, _by in GROUP_TABLES:
            add_group_critical(by[table_name], group_sums([p.groups.get(table_name, {}) for p in with_path]))
        if doc["hotspots_by_operator"]:
            add_group_critical(doc["hotspots_by_operator"], group_sums([p.groups.get("operator", {}) for p in with_path]))
    doc["findings"] = findings
