"""Run one benchmark child process and measure it: wall time, CPU time, peak RSS, load.

Shared by the ``bench/bench_*.py`` scripts (each runs every measured reader in its own
process). The child is reaped with ``os.wait4``, so the figures are its own: CPU = user +
system time of all its threads, peak RSS = its ``ru_maxrss``. On Linux ``ru_maxrss`` is
carried across exec, so a parent holding much memory at spawn time inflates the child's
figure: keep the parent small, or have the child report its own (VmHWM, or ``getrusage``).

The child's last stdout line, when it is a JSON object, is merged into the result and wins
over the parent's figures, so a child that times itself (imports excluded, say) reports that.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time


def run_child(argv: list[str], env: dict | None = None, cwd=None) -> dict:
    """Run ``argv`` to the end; returns ``wall_s``, ``cpu_s``, ``peak_rss_mb``, ``load1`` (the
    1-minute load average just before the start: other jobs share the CPUs), ``rc``,
    ``error`` (last stderr line, when ``rc`` is not 0) and either the keys of the child's
    last stdout line, when that is a JSON object, or that line as ``last_line``. ``BENCH_LAUNCH`` in the child's environment is its start time."""
    environment = dict(os.environ, **(env or {}))
    load = os.getloadavg()[0]
    environment["BENCH_LAUNCH"] = repr(time.time())
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:  # files: no pipe to drain
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=environment, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
        errors = err.read().decode(errors="replace").strip().splitlines()
    result = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024, "load1": round(load, 2), "rc": proc.returncode}
    if proc.returncode != 0:
        result["error"] = errors[-1] if errors else "?"
    last = lines[-1] if lines else ""
    try:
        reported = json.loads(last) if last.startswith("{") else None
    except json.JSONDecodeError:
        reported = None
    if isinstance(reported, dict):
        result.update(reported)
    else:
        result["last_line"] = last
    return result


def run_checked(argv: list[str], env: dict | None = None, cwd=None) -> dict:
    """:func:`run_child`, stopping the benchmark when the child fails."""
    result = run_child(argv, env, cwd)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(map(str, argv[:4]))} failed: {result['error']}")
    return result
