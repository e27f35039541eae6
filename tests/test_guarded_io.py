"""One guarded way to write, to dump JSON and to notify: a scan of the package fails when a
module bypasses the guard (tui_prof/guard/), and the reproducers of issue 30 that the guard
closes (export through links, FIFOs, pre-created folders, interrupted exports) stay closed."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.synthetic import synthetic_runset
from tui_prof.export.common import ExportError
from tui_prof.export.parquet import MANIFEST, MANIFEST_KIND, check_export, export_parquet
from tui_prof.export.perfetto import export_perfetto
from tui_prof.guard import jsonout
from tui_prof.guard.write import TEMP_TAG, WriteRefused, atomic_file, atomic_folder, make_private_dir, sweep_stale

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tui_prof"
GUARD = PACKAGE / "guard"
# the generator writes the runs it generates (tests, benchmarks, the bundled samples, into a
# private folder of the cache made by guard.write); it is not imported by the product's layers
# (an import-linter contract) and never writes over a user's path
EXEMPT = {PACKAGE / "synth"}

WRITE_MODES = set("wax+")
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}
FS_CALLS = {
    ("os", "rename"),
    ("os", "replace"),
    ("os", "mkdir"),
    ("os", "makedirs"),
    ("os", "mkfifo"),
    ("os", "link"),
    ("os", "symlink"),
    ("shutil", "copy"),
    ("shutil", "copy2"),
    ("shutil", "copyfile"),
    ("shutil", "copytree"),
    ("shutil", "move"),
    ("tempfile", "mkstemp"),
    ("tempfile", "mkdtemp"),
    ("tempfile", "NamedTemporaryFile"),
    ("tempfile", "TemporaryDirectory"),
    ("tempfile", "TemporaryFile"),
    ("json", "dump"),
    ("json", "dumps"),
}
PATH_WRITERS = {"write_text", "write_bytes", "mkdir", "touch", "symlink_to", "hardlink_to"}
SINK_WRITERS = {"to_parquet": 0, "to_csv": 0, "to_feather": 0, "to_json": 0, "to_pickle": 0, "write_table": 1}  # -> argument that names the sink
GUARDED_OPENERS = {"open_new", "atomic_file"}


def _modules() -> list[Path]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(GUARD) or any(path == e or path.is_relative_to(e) for e in EXEMPT):
            continue
        out.append(path)
    return out


def _mode_of(call: ast.Call, position: int) -> str | None:
    """The constant mode argument of an ``open``-like call (positional or ``mode=``)."""
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    if len(call.args) > position and isinstance(call.args[position], ast.Constant) and isinstance(call.args[position].value, str):
        return call.args[position].value
    return None


def bypasses(source: str) -> list[str]:
    """Every way ``source`` writes a file, makes a folder or dumps JSON other than through
    :mod:`tui_prof.guard` (one line per finding)."""
    found = []
    tree = ast.parse(source)
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    guarded = {  # names bound by ``with open_new(...) as fh`` / ``with atomic_file(...) as fh``
        item.optional_vars.id
        for n in ast.walk(tree)
        if isinstance(n, ast.With)
        for item in n.items
        if isinstance(item.optional_vars, ast.Name)
        and isinstance(item.context_expr, ast.Call)
        and getattr(item.context_expr.func, "id", None) in GUARDED_OPENERS
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in WRITE_FLAGS:
            found.append(f"line {node.lineno}: os.{node.attr} (open files for writing with guard.write)")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            mode = _mode_of(node, 1)
            if mode is not None and WRITE_MODES & set(mode):
                found.append(f"line {node.lineno}: open(..., {mode!r})")
        if isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if (owner, func.attr) in FS_CALLS:
                found.append(f"line {node.lineno}: {owner}.{func.attr}")
            elif owner == "gzip" and func.attr in ("open", "GzipFile"):
                mode = _mode_of(node, 1)
                if mode is not None and WRITE_MODES & set(mode) and not any(kw.arg == "fileobj" for kw in node.keywords):
                    found.append(f"line {node.lineno}: gzip.{func.attr}(..., {mode!r}) on a path")
            elif func.attr in PATH_WRITERS:
                found.append(f"line {node.lineno}: .{func.attr}()")
            elif func.attr in SINK_WRITERS and owner not in imported:
                at = SINK_WRITERS[func.attr]
                sink = node.args[at] if len(node.args) > at else None
                if not (isinstance(sink, ast.Name) and sink.id in guarded):
                    found.append(f"line {node.lineno}: .{func.attr}() into a sink not opened by guard.write")
    return found


def test_no_module_writes_or_dumps_json_around_the_guard():
    offenders = {str(path.relative_to(ROOT)): hits for path in _modules() if (hits := bypasses(path.read_text(encoding="utf-8")))}
    assert offenders == {}, "write files, folders and JSON through tui_prof/guard/: " + json.dumps(offenders, indent=1)


def test_the_bypass_scan_finds_each_way_around_the_guard():
    """The scan itself: each construct it must catch is caught, the guarded forms are not."""
    bad = """
        open(p, "w"); open(p, mode="ab"); Path(p).write_text("x"); p.write_bytes(b""); p.mkdir()
        os.open(p, os.O_WRONLY | os.O_CREAT); os.replace(a, b); os.rename(a, b); os.makedirs(p)
        tempfile.mkstemp(); gzip.open(p, "wt"); json.dumps(x); json.dump(x, fh); frame.to_parquet(p)
        pq.write_table(t, "out.parquet"); shutil.copy(a, b); frame.to_feather(fh)
    """
    assert len(bypasses(textwrap.dedent(bad))) == 18
    good = """
        import render_diff
        open(p, "rb"); open(fd, "rb", closefd=False); gzip.GzipFile(fileobj=raw, mode="wb")
        jsonout.dumps(x); json.loads(t); frame.rename(columns={}); render_diff.to_json(result)
        with open_new(path) as fh:
            pq.write_table(t, fh)
            frame.to_feather(fh)
    """
    assert bypasses(textwrap.dedent(good)) == []


# --------------------------------------------------------------------------- notify


TUI = PACKAGE / "tui"
SANITISERS = {"safe_text", "plain"}


def notify_bypasses(source: str) -> list[str]:
    """``notify`` calls whose message is not a constant and not passed through the sanitiser
    with ``markup=False`` (a name from a trace would reach the terminal raw)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        args = list(node.args)
        if node.func.attr == "call_from_thread" and args and isinstance(args[0], ast.Attribute) and args[0].attr == "notify":
            args = args[1:]  # call_from_thread(self.notify, message, ...)
        elif node.func.attr != "notify":
            continue
        if not args:
            continue
        message = args[0]
        if isinstance(message, ast.Constant) or (isinstance(message, ast.Name) and message.id.isupper()):  # a literal or a module constant
            continue
        sanitised = isinstance(message, ast.Call) and isinstance(message.func, ast.Name) and message.func.id in SANITISERS
        no_markup = any(kw.arg == "markup" and isinstance(kw.value, ast.Constant) and kw.value.value is False for kw in node.keywords)
        if not (sanitised and no_markup):
            found.append(f"line {node.lineno}: notify({ast.unparse(message)[:60]})")
    return found


def test_every_notify_message_goes_through_the_sanitiser():
    offenders = {str(p.relative_to(ROOT)): hits for p in sorted(TUI.rglob("*.py")) if (hits := notify_bypasses(p.read_text(encoding="utf-8")))}
    assert offenders == {}, "wrap notify messages in safe_text(...) with markup=False: " + json.dumps(offenders, indent=1)
    assert len(notify_bypasses('self.notify(f"{name}: x", markup=False)\nself.app.call_from_thread(self.notify, text)')) == 2


# --------------------------------------------------------------------------- strict JSON


HOSTILE = "k\x1b]0;pwn\x07\x1b[2J\x9b31m\u202eevil\u2028\u2029\x7f\ufeff\udcff"


def test_json_is_strict_and_escapes_terminal_controls():
    seen = jsonout.NonFinite()
    text = jsonout.dumps({"name": HOSTILE, "v": [float("inf"), float("-inf"), float("nan"), 1.5]}, seen=seen, indent=2)
    assert seen.count == 3 and seen.paths[0] == "$.v[0]"

    def refuse(constant):
        raise ValueError(constant)

    doc = json.loads(text, parse_constant=refuse)  # RFC 8259: no NaN/Infinity
    assert doc == {"name": HOSTILE, "v": [None, None, None, 1.5]}  # the exact string survives
    assert all(not (0x7F <= ord(c) <= 0x9F) and c not in "\x1b\u202e\u2028\u2029\ufeff" and not 0xD800 <= ord(c) <= 0xDFFF for c in text)
    text.encode("utf-8")  # no lone surrogate left


# --------------------------------------------------------------------------- safe write


@pytest.fixture(scope="module")
def runset():
    return synthetic_runset()[0]


def test_parquet_export_never_writes_through_a_link_in_a_forged_folder(runset, tmp_path):
    """Reproducer 1: a forged manifest listing ``kernels.parquet``, which is a link to a
    victim file, makes the export replace the folder, never write the victim."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    (out / "kernels.parquet").symlink_to(victim)
    (out / MANIFEST).write_text(json.dumps({"kind": MANIFEST_KIND, "files": ["kernels.parquet"]}))
    export_parquet(runset, out, ["kernels"])
    assert victim.read_text() == "precious"
    assert not (out / "kernels.parquet").is_symlink() and check_export(out) == []
    assert (os.stat(out).st_mode & 0o777) == 0o700


def test_parquet_export_refuses_a_link_or_a_folder_others_can_write(runset, tmp_path):
    """Reproducer 1 (second account): a pre-created world-writable folder, another user's
    folder, or a link to a folder is refused before anything is written."""
    shared = tmp_path / "run.tuiprof-parquet"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ExportError, match="writable by others"):
        export_parquet(runset, shared, ["kernels"])
    assert os.listdir(shared) == []
    os.chmod(shared, 0o757)  # others can write it, the group cannot: still refused
    with pytest.raises(ExportError, match="writable by others"):
        export_parquet(runset, shared, ["kernels"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    with pytest.raises(ExportError, match="symbolic link"):
        export_parquet(runset, link, ["kernels"])
    assert os.listdir(elsewhere) == []
    if os.getuid() == 0:  # root can make a folder of another account
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 65534, 65534)
        with pytest.raises(ExportError, match="owned by uid 65534"):
            export_parquet(runset, foreign, ["kernels"])


def test_parquet_export_accepts_the_users_own_group_writable_folder(runset, tmp_path):
    """``mkdir out`` under umask 002 gives a folder the group can write: the user's own
    destination is accepted, and the export that replaces it is private (0700)."""
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o775)
    written = export_parquet(runset, out, ["kernels"])
    assert set(written) == {"kernels"} and written["kernels"].is_file()
    assert (os.stat(out).st_mode & 0o777) == 0o700 and check_export(out) == []


def test_perfetto_export_refuses_a_fifo_and_a_link_without_blocking(runset, tmp_path):
    """Reproducer 9: ``export --perfetto`` to an existing FIFO hung on its open."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    result: list = []

    def run():
        try:
            export_perfetto(runset, fifo)
        except ExportError as err:
            result.append(err)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "the export blocked on a FIFO"
    assert result and "not a regular file" in str(result[0])
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    (tmp_path / "t.json").symlink_to(victim)
    with pytest.raises(ExportError, match="symbolic link"):
        export_perfetto(runset, tmp_path / "t.json")
    assert victim.read_text() == "{}"


def test_an_interrupted_export_leaves_the_previous_one_whole(runset, tmp_path, monkeypatch):
    """Reproducer 14 (an exception): the previous export stays, no temporary name is left."""
    out = tmp_path / "out"
    export_parquet(runset, out, ["kernels", "api"])
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import tui_prof.export.parquet as parquet

    real = parquet.build_table

    def failing(rs, name, analysis):
        if name == "kernels":
            raise KeyboardInterrupt
        return real(rs, name, analysis)

    monkeypatch.setattr(parquet, "build_table", failing)
    with pytest.raises(KeyboardInterrupt):
        export_parquet(runset, out, ["kernels", "api"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and check_export(out) == []
    assert [p.name for p in tmp_path.iterdir() if TEMP_TAG in p.name] == []


KILLED_WRITER = """
import sys, time
from tui_prof.guard.write import atomic_folder, open_new
with atomic_folder(sys.argv[1], lambda p: None) as work:
    with open_new(work / "kernels.parquet") as fh:
        fh.write(b"half a table")
    print("written", flush=True)
    time.sleep(60)
"""


def test_kill_9_leaves_no_partial_folder_and_the_next_write_sweeps_it(tmp_path):
    """Reproducer 14 (kill -9): the destination never exists half written; the temporary
    folder of the killed writer is removed by the next write to the same destination."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert not out.exists()
    left = [p.name for p in tmp_path.iterdir() if TEMP_TAG in p.name]
    assert len(left) == 1
    with atomic_folder(out, lambda p: None) as work:
        (work / "x").write_bytes(b"")  # test-side content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_temporary_files_are_removed_on_sigterm(tmp_path):
    script = """
import sys, time
from tui_prof.guard.write import atomic_file, install_signal_cleanup
install_signal_cleanup()
with atomic_file(sys.argv[1]) as fh:
    fh.write(b"x")
    print("written", flush=True)
    time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "t.json")], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []


def test_guard_primitives(tmp_path):
    with pytest.raises(WriteRefused, match="symbolic link"):
        (tmp_path / "l").symlink_to(tmp_path / "nowhere")
        with atomic_file(tmp_path / "l"):
            pass
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(ValueError), atomic_file(tmp_path / "f") as fh:
        fh.write(b"partial")
        raise ValueError
    assert not (tmp_path / "f").exists() and [p.name for p in tmp_path.iterdir()] == ["l"]
    folder = make_private_dir(tmp_path / "a" / "b", parents=True)
    assert (os.stat(folder).st_mode & 0o777) == 0o700 == (os.stat(folder.parent).st_mode & 0o777)
    os.chmod(folder, 0o775)
    with pytest.raises(WriteRefused, match="writable by group or others"):
        make_private_dir(folder, exist_ok=True)
    assert sweep_stale(tmp_path / "nothing") == 0


# --------------------------------------------------------------------------- CLI output and options


def test_cli_json_is_strict_with_a_note_for_non_finite_values(capsys):
    """Reproducer 10 and 2's ``--json`` part: ``summary --json``/``diff --json`` wrote
    ``Infinity``/``NaN`` and raw C1, DEL and bidi controls."""
    from tui_prof import cli

    cli._write_json({"hit_rate_pct": float("-inf"), "name": HOSTILE})
    out, err = capsys.readouterr()
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc == {"hit_rate_pct": None, "name": HOSTILE}
    assert "1 value(s) were not finite" in err and "$.hit_rate_pct" in err
    assert not any(0x7F <= ord(c) <= 0x9F or c in "\x1b\u202e" for c in out)


def test_perfetto_export_is_strict_json(runset, tmp_path):
    from tui_prof.export.perfetto import num

    assert [num(float(v)) for v in ("inf", "-inf", "nan", "1.5")] == ["null", "null", "null", "1.5"]
    path, count = export_perfetto(runset, tmp_path / "t.json")
    doc = json.loads(path.read_text(encoding="ascii"), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert len(doc["traceEvents"]) == count > 0


def test_noise_above_the_gate_is_a_usage_error(tmp_path, capsys):
    """Reproducer 11: ``--noise 100`` let +100 % kernel time pass ``--fail-on-regression 5``."""
    from tui_prof import cli
    from tui_prof.exits import EXIT_USAGE

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for flag in ("--noise", "--noise-pp"):
        assert cli.main(["diff", str(a), str(b), "--fail-on-regression", "5", flag, "100"]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"{flag} 100 is above --fail-on-regression 5" in err and err.count("\n") == 1


def test_empty_table_list_is_a_usage_error(tmp_path, capsys):
    from tui_prof import cli
    from tui_prof.exits import EXIT_USAGE

    assert cli.main(["export", str(tmp_path), "--parquet", str(tmp_path / "out"), "--tables", ",,,"]) == EXIT_USAGE
    assert "names no table" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_cache_size_setting_is_validated(monkeypatch, capsys):
    from tui_prof.loaders import cache

    for good, value in (("0", 0), ("12345", 12345), (" 7 ", 7)):
        monkeypatch.setenv("TUIPROF_CACHE_MAX_BYTES", good)
        assert cache.max_bytes() == value
    for bad in ("garbage", "-5", "1e9", "１２"):
        monkeypatch.setenv("TUIPROF_CACHE_MAX_BYTES", bad)
        assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES
    assert "is not a whole number of bytes" in capsys.readouterr().err


def test_warnings_never_print_an_install_path(tmp_path):
    script = "import numpy as np, sys\nfrom tui_prof import cli\nimport warnings\nwarnings.showwarning = cli._show_warning\nnp.log(np.zeros(1))\n"
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip() == "tuiprof: warning: RuntimeWarning: divide by zero encountered in log"


def test_sqlite_is_opened_only_through_the_sqlite_guard():
    """rocpd, rocprof-compute databases and rocprof v1 results.db all open through
    tui_prof/loaders/sqlguard.py (read-only, immutable, bounded); a module that calls
    ``sqlite3.connect`` itself bypasses those bounds."""
    allowed = PACKAGE / "loaders" / "sqlguard.py"
    offenders = []
    for path in _modules():
        if path == allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "sqlite3":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "open SQLite through tui_prof.loaders.sqlguard.connect: " + ", ".join(offenders)


def read_bypasses(source: str) -> list[str]:
    """Reads of a file by name that skip ``loaders.base.open_regular``/``open_binary`` (a
    FIFO would block, a gzip would not be bounded): the builtin ``open`` of a path,
    ``gzip.open``, ``Path.read_text``/``read_bytes``, pandas/pyarrow readers given a name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and func.id == "open" and args:
            first = args[0]
            by_descriptor = isinstance(first, ast.Name) and "fd" in first.id
            proc = isinstance(first, ast.Constant) and str(first.value).startswith("/proc/")
            if not (by_descriptor or proc):
                found.append(f"line {node.lineno}: open({ast.unparse(first)})")
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if (owner, func.attr) == ("gzip", "open") or (func.attr in ("read_text", "read_bytes") and owner not in ("base",) and not args):
                found.append(f"line {node.lineno}: {ast.unparse(func)}()")
            elif (
                func.attr in ("read_csv", "read_json", "read_parquet", "read_feather")
                and args
                and not (isinstance(args[0], ast.Name) and args[0].id in ("fh", "source", "buffer"))
            ) and not (isinstance(args[0], ast.Call) and getattr(args[0].func, "attr", "") in ("StringIO", "BytesIO", "BufferReader")):
                found.append(f"line {node.lineno}: {ast.unparse(func)}({ast.unparse(args[0])[:40]})")
            elif func.attr in ("OSFile", "memory_map", "input_stream") and args:
                # pyarrow opening a name itself: only the /proc/self/fd link of a checked descriptor
                first = args[0]
                by_descriptor = isinstance(first, ast.JoinedStr) and ast.unparse(first).startswith("f'/proc/self/fd/")
                if not by_descriptor:
                    found.append(f"line {node.lineno}: {ast.unparse(func)}({ast.unparse(first)[:40]})")
    return found


def test_every_input_is_read_through_the_bounded_regular_file_reader():
    """The loaders and the analysis read run files only through ``open_regular`` (O_NONBLOCK,
    fstat on the descriptor) and ``open_binary``/``read_text`` (gzip bounded)."""
    allowed = {PACKAGE / "loaders" / "base.py"}
    offenders = {}
    for layer in ("loaders", "analysis", "export", "render"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            if path in allowed:
                continue
            hits = read_bypasses(path.read_text(encoding="utf-8"))
            if hits:
                offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}, "read run files through loaders.base.open_regular / open_binary: " + json.dumps(offenders, indent=1)
    bad = 'open(p, "rb"); gzip.open(p); path.read_text(); pd.read_csv(path); pcsv.read_csv(str(path)); pa.OSFile(os.fsencode(path))'
    assert len(read_bypasses(bad)) == 6
    good = 'open(fd, "rb"); open("/proc/self/io", "rb"); pd.read_csv(fh); pd.read_csv(io.StringIO(t)); base.read_text(p); pa.OSFile(f"/proc/self/fd/{n}")'
    assert read_bypasses(good) == []


KERNEL_HEADER = '"Kind","Agent_Id","Queue_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'


def _kernel_rows(name: str, rows: int) -> str:
    return KERNEL_HEADER + "".join(f'"KERNEL_DISPATCH",1,1,"{name}",{i + 1},{1000 + 10 * i},{1005 + 10 * i}\n' for i in range(rows))


@pytest.mark.parametrize(("rows", "proc"), [(1, True), (5000, True), (5000, False)])
def test_csv_parsed_is_the_file_checked(tmp_path, monkeypatch, rows, proc):
    """rocprofv3 CSV: a file swapped in by name right after the descriptor was checked is
    not what gets parsed; the checked (opened) file is (pyarrow once opened it by name)."""
    from tui_prof.loaders import rocprofv3_csv

    host = tmp_path / "run" / "node"
    host.mkdir(parents=True)
    target = host / "42_kernel_trace.csv"
    target.write_text(_kernel_rows("checked_kernel", rows))
    other = tmp_path / "swap.csv"
    other.write_text(_kernel_rows("swapped_in_kernel", 3))
    swaps = []

    def swap(path):
        if os.path.exists(other):
            os.replace(other, path)
            swaps.append(path)

    monkeypatch.setattr(rocprofv3_csv, "_after_check", swap)
    if not proc:  # a system without /proc/self/fd: pyarrow reads through a Python file wrapper
        exists = os.path.exists
        monkeypatch.setattr(os.path, "exists", lambda p: False if str(p).startswith("/proc/self/fd/") else exists(p))
    cols, _warnings, _truncated, _malformed = rocprofv3_csv.read_csv_table(target, "kernel_trace")
    assert swaps == [target]
    assert list(cols["kernel_name"].unique()) == ["checked_kernel"] and len(cols["kernel_name"]) == rows
