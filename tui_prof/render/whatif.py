"""Text report of a what-if (``tuiprof whatif``): the ``tuiprof.whatif/1`` document as lines."""

from __future__ import annotations

from tui_prof.render.fmt import fmt_ns, fmt_pct
from tui_prof.render.safe import safe_text

GROUP_TITLES = {
    "gpu_compute": "GPU compute",
    "communication": "communication",
    "copies": "copies",
    "launch_queue": "launch/queue",
    "host_ops": "host ops",
    "sync": "sync",
    "host_api": "host API",
}


def _edit_line(edit: dict) -> str:
    kind = edit.get("edit", "")
    if kind == "scale":
        head = f"scale {safe_text(edit['pattern'])} x{edit['factor']:g}"
    elif kind == "remove":
        head = f"remove {safe_text(edit['cause'])}"
    else:
        head = str(kind)
    matched = edit.get("matched")
    tail = f": {matched} matched" if matched is not None else ""
    if edit.get("matched_ns"):
        tail += f" ({fmt_ns(edit['matched_ns'])} recorded)"
    notes = "; ".join(safe_text(n) for n in edit.get("notes", []))
    return f"  {head}{tail}" + (f" -- {notes}" if notes else "")


def _path_lines(path: dict, title: str) -> list[str]:
    total = path["total_ns"]
    lines = [f"{title}: {fmt_ns(total)}"]
    groups = [f"{GROUP_TITLES.get(k, k)} {fmt_pct(100.0 * v / total if total else 0.0)}" for k, v in sorted(path["groups"].items(), key=lambda kv: -kv[1]) if v]
    if groups:
        lines.append("  " + ", ".join(groups))
    for row in path["top"][:8]:
        lines.append(f"  {fmt_ns(row['ns']):>10}  {fmt_pct(row['pct']):>6}  {GROUP_TITLES.get(row['group'], row['group'])}: {safe_text(row['name'])[:90]}")
    return lines


def stream_wait_notes(links: dict, path: dict) -> list[str]:
    """What the graph knows of the waits across streams (analysis.streamwaits), and how much
    of ``path`` (a critical path's JSON) rests on the inferred ones."""
    out = []
    named, inferred, calls = links.get("stream_waits", 0), links.get("stream_waits_inferred", 0), links.get("wait_event_calls_unlinked", 0)
    if named or inferred or calls:
        out.append(f"waits across streams: {named} from the trace's event links, {inferred} inferred from time order, {calls} wait calls not linked")
    if path.get("inferred_edges"):
        out.append(
            f"{fmt_ns(path['inferred_ns'])} of the path rests on {path['inferred_edges']} inferred waits across streams (the path before the last of them)"
        )
    return out


def whatif_text(doc: dict) -> str:
    lines = []
    for proc in doc["processes"]:
        lines.append(f"process {safe_text(proc['process'])}")
        lines.append(f"  baseline span  {fmt_ns(proc['baseline_ns'])}")
        lines.append(f"  projected span {fmt_ns(proc['projected_ns'])}")
        lines.append(f"  saving         {fmt_ns(proc['saving_ns'])} ({fmt_pct(proc['saving_pct'])})")
        steady = proc.get("steady")
        if steady:
            lines.append(
                f"  steady step    {fmt_ns(steady['baseline_step_ns'])} -> {fmt_ns(steady['projected_step_ns'])} "
                f"(median of {steady['steps']} steps; {steady['warmup_steps']} warm-up steps: {fmt_ns(steady['baseline_warmup_ns'])} -> {fmt_ns(steady['projected_warmup_ns'])})"
            )
        links = proc["links"]
        unknown = [f"{k} {v}" for k, v in links.items() if k in ("unlaunched", "inferred_waits", "queue_overlaps", "unknown_lane") and v]
        if unknown:
            lines.append("  links not recorded (time order used): " + ", ".join(unknown))
        cp = proc["critical_path"]
        lines.extend("  " + x for x in stream_wait_notes(links, cp["baseline"]))
        lines.extend("  " + x for x in _path_lines(cp["baseline"], f"critical path, baseline ({cp['window']})"))
        lines.extend("  " + x for x in _path_lines(cp["projected"], "critical path, projected"))
    lines.append("edits:")
    lines.extend(_edit_line(e) for e in doc["edits"]) if doc["edits"] else lines.append("  none (the baseline re-scheduled)")
    cross = doc.get("cross_rank")
    if cross:
        if cross["settled"]:
            lines.append(f"ranks: re-scheduled together through {cross['instances']} collective instances ({cross['rounds']} rounds)")
        else:
            lines.append(f"ranks: {cross['instances']} collective instances did not settle in {cross['rounds']} rounds: each rank re-scheduled alone")
    return "\n".join(lines)
