"""Run-directory discovery: what is loaded, skipped or reported, and that nothing is written."""

import hashlib
import os
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

from tui_prof.loaders import LOADER_MODULES, detect, load_path, loader_modules
from tui_prof.loaders.base import IssueSink


def tree_state(root: Path) -> dict:
    """Every path under root with its size, mtime and content hash."""
    state = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            state[str(path)] = "dir-or-link"
            continue
        stat = path.stat()
        state[str(path)] = (stat.st_size, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return state


def test_missing_path_is_one_error(tmp_path):
    runset = load_path(tmp_path / "nope")
    assert runset.runs == []
    assert len(runset.errors) == 1
    assert "no such file or directory" in runset.errors[0].message


def test_unrelated_files_are_skipped_not_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "script.py").write_text("print(1)\n")
    runset = load_path(tmp_path)
    assert runset.errors == []
    assert sorted(Path(i.path).name for i in runset.skipped) == ["notes.txt", "script.py"]


def test_empty_and_binary_profiler_named_files_are_errors(tmp_path):
    (tmp_path / "1234_kernel_trace.csv").write_bytes(b"")
    (tmp_path / "1234_results.db").write_bytes(os.urandom(4096))
    (tmp_path / "run.pftrace").write_bytes(b"\x00\xff" * 100)
    runset = load_path(tmp_path)
    messages = {Path(i.path).name: i.message for i in runset.errors}
    assert messages["1234_kernel_trace.csv"] == "empty file (0 bytes)"
    assert "1234_results.db" in messages
    assert "run.pftrace" in messages
    assert all("\n" not in m for m in messages.values())


def test_symlink_loop_does_not_hang(tmp_path):
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path, tmp_path / "sub" / "loop")
    os.symlink(tmp_path / "missing", tmp_path / "dangling_results.json")
    runset = load_path(tmp_path)
    assert runset.runs == []
    assert any("broken symbolic link" in i.message for i in runset.issues)


def test_loading_never_writes_into_the_run_directory(tmp_path):
    (tmp_path / "1_kernel_trace.csv").write_text("garbage\n")
    (tmp_path / "1_results.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    before = tree_state(tmp_path)
    load_path(tmp_path)
    assert tree_state(tmp_path) == before


def test_cli_reports_nothing_loaded_without_traceback(tmp_path):
    (tmp_path / "1_kernel_trace.csv").write_bytes(b"\x00\x01\x02binary")
    proc = subprocess.run([sys.executable, "-m", "tui_prof.cli", "summary", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert f"{tmp_path / '1_kernel_trace.csv'}: not recognised" in proc.stderr
    assert "nothing could be loaded" in proc.stderr


def test_reading_progress_while_a_unit_is_parsed(tmp_path, monkeypatch):
    """A big unit reports progress by the bytes this process has read (the loader itself
    reports none): done counts up from 0, never reaches total before the load ends, and
    the load's result is unchanged."""
    import time

    from tui_prof.loaders import detect, rocprofv3_csv
    from tui_prof.synth import SynthSpec, build
    from tui_prof.synth.write_csv import write_rocprofv3_csv

    if detect._bytes_read() is None:
        import pytest

        pytest.skip("no /proc/self/io on this system")
    run = build(SynthSpec(iterations=2000, kernels_per_iteration=5, seed=3, pid=77), hostname="h")  # ~4 MB of CSV
    write_rocprofv3_csv(run, tmp_path, hostname="h", pid=77)
    total = sum(p.stat().st_size for p in tmp_path.rglob("*.csv"))
    monkeypatch.setattr(detect, "READ_PROGRESS_MIN_BYTES", 0)
    monkeypatch.setattr(detect, "READ_PROGRESS_INTERVAL_S", 0.005)
    original = rocprofv3_csv.load

    def slow_load(files, issues):
        time.sleep(0.1)  # before reading: the meter reports 0 read
        runs = original(files, issues)
        time.sleep(0.1)  # after reading: the meter reports "building tables"
        return runs

    monkeypatch.setattr(rocprofv3_csv, "load", slow_load)
    seen = []
    runset = load_path(tmp_path, progress=lambda stage, done, count: seen.append((stage, done, count)))
    assert len(runset.runs[0].kernels) == run.expected.dispatches
    reading = [(s, d, c) for s, d, c in seen if s in ("reading MiB", "building tables")]
    assert reading and all(0 <= d < c == max(1, total >> 20) for _, d, c in reading)
    assert reading[0] == ("reading MiB", 0, max(1, total >> 20))
    assert reading[-1][0] == "building tables"
    assert seen[-1] == ("done", 1, 1)


DATA = Path(__file__).parent / "data"


def test_loader_registry_gives_the_sniff_order_and_the_format_tables():
    """Each loader module declares its LoaderSpec once; detect derives its tables from them."""
    modules = loader_modules()
    assert [m.__name__.rsplit(".", 1)[1] for m in modules] == list(LOADER_MODULES)
    assert (
        [m.FORMAT for m in modules]
        == [m.LOADER.format for m in modules]
        == [
            "rocpd",
            "rocprof-compute-db",
            "rocprofv3-json",
            "pftrace",
            "kineto",
            "rocprof-v1",
            "rocprofv3-csv",
            "rocprof-compute",
            "rocprofv2",
            "rocm-smi-csv",
            "rocprofv3-summary",
        ]
    )
    assert detect.FORMAT_PRIORITY == ("rocpd", "rocprofv3-json", "rocprofv3-csv", "pftrace", "kineto")
    assert sorted(detect.PARALLEL_FORMATS) == ["rocpd", "rocprof-compute", "rocprofv3-csv"]
    assert detect.FILE_FORMATS == ("rocprof-compute-db", "pftrace", "kineto", "rocprofv3-summary")
    expected = [
        "1234_kernel_trace.csv",
        "x_memory_allocation_trace.csv",
        "counter_collection.csv",
        "agent_info.csv",
        "kernel_stats.csv",
        "results.db",
        "a.pftrace",
        "host_1.pt.trace.json",
        "kineto.json",
        "rocpd.db",
        "summary.txt",
        "run_summary.txt",
    ]
    assert [name for name in expected if detect.PROFILER_NAME.search(name)] == expected
    assert [n for n in ("notes.txt", "trace.json", "gpu_info_power_profiler_output.csv", "summary.md") if detect.PROFILER_NAME.search(n)] == []


def test_every_sniffed_kind_is_declared_by_its_loader():
    specs = {m.FORMAT: m.LOADER for m in loader_modules()}
    detected = detect.scan(DATA, IssueSink())
    assert {d.format for d in detected} == set(specs)
    undeclared = [(d.format, d.kind) for d in detected if not any(fnmatch(d.kind, k) for k in specs[d.format].kinds)]
    assert undeclared == []
