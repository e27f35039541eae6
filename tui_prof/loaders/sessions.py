"""Which fragments of one process belong to one profiler session (issue 32).

The assembly (:func:`tui_prof.loaders.detect.assemble`) merges the fragments a process
wrote (same host, pid and rank) into one run; a process may however have been profiled in
separate sessions (``torch.profiler.profile`` entered several times in one Python process:
each session exports its own trace file), and those are separate recordings, never one
process with a span from the first session's start to the last one's end.

What the files say about their session (``meta.extra``, set by each loader):

- Kineto: ``trace_id``, a random id each profiler session writes (torch >= 2.1 Kineto);
  a trace without one is still one session per file (a session exports one trace file).
- rocpd: ``rocpd_guid``, the database's id of its profiling session.
- rocprofv3 JSON: ``init_time_ns``, when the tool started in the process (once per process).
- rocprofv3 CSV/pftrace and the other formats: nothing said; their fragments of one process
  merge (one session's per-kind CSVs, a trace beside its counter pass) unless their times
  lie more than SESSION_GAP_NS apart without overlapping (:func:`apart`): a pid used again by
  a later run (containers start their programs with the same small pids).

Pure functions on a process's :class:`~tui_prof.model.RunMeta` (no loader imported): the in-process
assembly, the analysis' recording split and the cluster's grouping of units all ask here.
"""

from __future__ import annotations

from typing import Any

from tui_prof.model import RunMeta

SESSION_GAP_NS = 60 * 1_000_000_000  # [P] records of one process this far apart, not overlapping: two runs

# Formats whose every file is one whole profiler session, whether or not it names its id.
SESSION_PER_FILE = frozenset({"kineto"})


def session_key(meta: RunMeta) -> str | None:
    """The profiler session that wrote a fragment of one process (its ``meta``), as its
    files say; None where they say nothing (the fragment merges with any of its process)."""
    fmt = meta.formats[0] if meta.formats else ""
    extra = meta.extra
    if fmt == "kineto":
        trace_id = extra.get("trace_id")
        if isinstance(trace_id, str) and trace_id:
            return f"kineto:{trace_id}"
        if meta.files:
            return f"kineto-file:{meta.files[0]}"
        return None
    if fmt == "rocpd":
        guid = extra.get("rocpd_guid")
        return f"rocpd:{guid}" if isinstance(guid, str) and guid else None
    if fmt == "rocprofv3-json":
        init = extra.get("init_time_ns")
        return f"rocprofv3-init:{init}" if isinstance(init, int) else None
    return None


def same_session(a: RunMeta, b: RunMeta) -> bool:
    """Fragments ``a`` and ``b`` of one process (same host, pid and rank) come from one
    profiler session and are merged: unless both name their session and the names differ."""
    ka, kb = session_key(a), session_key(b)
    return ka is None or kb is None or ka == kb


def process_identity(meta: RunMeta) -> tuple | None:
    """(host, pid, rank) of a process, None without a pid: two runs of one run set with the
    same identity are separate sessions of one process (the assembly merged the rest)."""
    if meta.pid is None:
        return None
    return (meta.hostname, meta.pid, meta.rank)


def fragment_span(fragment: Any) -> tuple[int, int] | None:
    """(first start, last end) in ns of a fragment's API calls, kernels and copies: a
    summary partial's ``range``, else computed from a Run's tables (rows without a time, -1,
    left out); None when it has no timed row."""
    if hasattr(fragment, "range"):
        return fragment.range
    lo, hi = [], []
    for name in ("api", "kernels", "copies"):
        table = getattr(fragment, name, None)
        if table is None or not len(table):
            continue
        start, end = table["start"].to_numpy(), table["end"].to_numpy()
        start, end = start[start != -1], end[end != -1]
        if len(start) and len(end):
            lo.append(int(start.min()))
            hi.append(int(end.max()))
    return (min(lo), max(hi)) if lo else None


def apart(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    """Two time spans of one process's fragments that cannot be one session: they do not
    overlap and more than SESSION_GAP_NS lies between them (unknown spans: not apart)."""
    if a is None or b is None:
        return False
    return max(a[0], b[0]) - min(a[1], b[1]) > SESSION_GAP_NS
