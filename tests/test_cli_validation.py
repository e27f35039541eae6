"""Command-line validation (issue 13): every bad option value and empty path is a usage
error (exit 2) on one stderr line, a path the OS cannot take is exit 1 on one line, and no
file name can break the one-line promise."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_prof import cli
from tui_prof.exits import EXIT_NOTHING_LOADED, EXIT_OK, EXIT_USAGE
from tui_prof.render.safe import safe_text

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "synthetic_sync_per_launch"
NAME_MAX = os.pathconf("/", "PC_NAME_MAX")
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")


def one_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.err.endswith("\n"), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["summary", "RUN", "--gap-threshold", "1e309"], "argument --gap-threshold: not a finite duration: '1e309'"),
        (["summary", "RUN", "--gap-threshold", "inf"], "argument --gap-threshold: not a finite duration: 'inf'"),
        (["summary", "RUN", "--gap-threshold=-inf"], "argument --gap-threshold: not a finite duration: '-inf'"),
        (["summary", "RUN", "--gap-threshold", "nan"], "argument --gap-threshold: not a finite duration: 'nan'"),
        (["summary", "RUN", "--gap-threshold", "nanms"], "argument --gap-threshold: not a finite duration: 'nanms'"),
        (["summary", "RUN", "--gap-threshold=-1us"], "argument --gap-threshold: duration must not be negative: '-1us'"),
        (["summary", "RUN", "--gap-threshold", "1e30"], "argument --gap-threshold: duration too long: '1e30' (at most 9223372036854775807 ns"),
        (["summary", "RUN", "--gap-threshold", "9223372036854775808ns"], "argument --gap-threshold: duration too long: '9223372036854775808ns'"),
        (["summary", "RUN", "--gap-threshold", "10 parsecs"], "argument --gap-threshold: not a duration: '10 parsecs'"),
        (["summary", "RUN", "--top", "-1"], "argument --top: must not be negative: '-1' (0 lists all)"),
        (["summary", "RUN", "--top", "1.5"], "argument --top: not a whole number: '1.5'"),
        (["summary", "RUN", "--top", "9" * 30], f"argument --top: too large: '{'9' * 30}'"),
        (["summary", "RUN", "--max-gaps", "-5"], "argument --max-gaps: must not be negative: '-5' (0 lists all)"),
        (["summary", ""], "argument path: empty path"),
        (["open", ""], "argument path: empty path"),
        (["diff", "", "RUN"], "argument A: empty path"),
        (["diff", "RUN", ""], "argument B: empty path"),
        (["diff", "RUN", "RUN", "--fail-on-regression", "nan"], "argument --fail-on-regression: not a finite number: 'nan'"),
        (["diff", "RUN", "RUN", "--fail-on-regression", "inf"], "argument --fail-on-regression: not a finite number: 'inf'"),
        (["diff", "RUN", "RUN", "--fail-on-regression", "-1"], "argument --fail-on-regression: must not be negative: '-1'"),
        (["diff", "RUN", "RUN", "--noise", "nan"], "argument --noise: not a finite number: 'nan'"),
        (["diff", "RUN", "RUN", "--noise", "-2"], "argument --noise: must not be negative: '-2'"),
        (["diff", "RUN", "RUN", "--noise-pp", "nan"], "argument --noise-pp: not a finite number: 'nan'"),
        (["diff", "RUN", "RUN", "--noise-pp", "-0.5"], "argument --noise-pp: must not be negative: '-0.5'"),
        (["diff", "RUN", "RUN", "--top", "-3"], "argument --top: must not be negative: '-3'"),
        (["diff", "RUN", "RUN", "--gap-threshold", "inf"], "argument --gap-threshold: not a finite duration: 'inf'"),
    ],
)
def test_bad_value_is_a_one_line_usage_error(args, message, capsys, monkeypatch):
    def no_load(*_args, **_kwargs):
        raise AssertionError("loaded although the arguments are bad")

    monkeypatch.setattr("tui_prof.loaders.load_path", no_load)
    args = [str(SAMPLE) if a == "RUN" else a for a in args]
    assert cli.main(args) == EXIT_USAGE
    line = one_line(capsys)
    assert line.startswith(f"tuiprof: {message}"), line
    assert line.endswith(f"(see: tuiprof {args[0]} --help)")


@pytest.mark.parametrize("value", ["1e309", "inf", "nan"])
def test_gap_threshold_traceback_is_gone_in_a_real_process(value):
    """argparse type errors are raised in parsing, outside the commands' error handling:
    checked in a real process, where a traceback would show."""
    done = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "summary", str(SAMPLE), "--gap-threshold", value],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"tuiprof: argument --gap-threshold: not a finite duration: '{value}'")


def test_limits_that_are_valid_still_run(capsys):
    """The largest int64 duration and counts of all (0) are accepted and reach --json as given."""
    args = ["summary", str(SAMPLE), "--json", "--no-cache", "--gap-threshold", "9223372036854775807ns", "--top", "0", "--max-gaps", "0"]
    assert cli.main(args) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["gaps"]["threshold_ns"] == 9223372036854775807
    assert cli.parse_duration_ns("2.5ms") == 2_500_000 and cli.parse_duration_ns("7") == 7_000
    assert cli.parse_duration_ns("-0") == 0 and cli.parse_duration_ns("1s") == 10**9


def test_fail_on_regression_zero_and_noise_zero_are_valid():
    args = cli.build_parser().parse_args(["diff", "a", "b", "--fail-on-regression", "0", "--noise", "0", "--noise-pp", "0"])
    assert (args.fail_on_regression, args.noise, args.noise_pp) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("command", ["summary", "diff", "open"])
def test_path_longer_than_the_os_limit_is_one_line_exit_1(command, capsys):
    path = "/" + "a" * (PATH_MAX + 10)
    args = {"summary": ["summary", path], "diff": ["diff", str(SAMPLE), path], "open": ["open", path]}[command]
    assert cli.main(args) == EXIT_NOTHING_LOADED
    line = one_line(capsys)
    assert line.startswith("tuiprof: cannot open '/aaaa") and "File name too long" in line, line
    assert f"({PATH_MAX + 11} characters)" in line and len(line) < 400  # the middle of the path elided


def test_path_with_a_component_too_long_is_one_line_exit_1(tmp_path, capsys):
    path = tmp_path / ("b" * (NAME_MAX + 1)) / "run"
    assert cli.main(["summary", str(path)]) == EXIT_NOTHING_LOADED
    line = one_line(capsys)
    assert line.startswith(f"tuiprof: cannot open {str(path)[:40]!r}"[:-1]) and "File name too long" in line, line
    assert f"{NAME_MAX} a component" in line


def test_control_characters_in_file_names_are_escaped(tmp_path, capsys):
    """A run path holding a newline, an OSC title sequence and a bidi override: every
    stderr message is still one line, with the characters shown escaped."""
    name = "run\nINJECTED\x1b]0;pwned\x07\u202e"
    run = tmp_path / name
    run.mkdir()
    (run / "notes.txt").write_text("not a trace\n")
    assert cli.main(["summary", str(run), "--no-cache"]) == EXIT_NOTHING_LOADED
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    lines = err.splitlines()
    assert lines[-1] == f"tuiprof: nothing could be loaded from {str(run)!r}"
    assert "\\n" in lines[-1] and "\\x1b]0;pwned\\x07" in lines[-1] and "\\u202e" in lines[-1]

    missing = tmp_path / "gone\r\n\x9b2J"
    assert cli.main(["summary", str(missing), "--no-cache"]) == EXIT_NOTHING_LOADED
    err = capsys.readouterr().err
    assert "\x9b" not in err and "\r" not in err
    assert err.splitlines() == [f"tuiprof: {tmp_path}/gone\\r\\n\\x9b2J: no such file or directory"]  # one line (issue 33 item 14)


def test_usage_error_with_control_characters_is_one_line(capsys):
    assert cli.main(["summary", str(SAMPLE), "--top", "1\n2\x1b[2J"]) == EXIT_USAGE
    line = one_line(capsys)
    assert line == "tuiprof: argument --top: not a whole number: '1\\n2\\x1b[2J' (see: tuiprof summary --help)"


def test_unknown_option_with_a_newline_is_one_line(capsys):
    assert cli.main(["summary", str(SAMPLE), "--x\ny"]) == EXIT_USAGE
    assert one_line(capsys) == "tuiprof: unrecognized arguments: --x\\ny (see: tuiprof --help)"


def test_internal_error_message_is_escaped(monkeypatch, capsys):
    from tui_prof.analysis import api

    def boom(*_args, **_kwargs):
        raise RuntimeError("bad name k\x1b]52;c;ZXZpbA==\x07\nnext")

    monkeypatch.setattr(api, "build_summary", boom)  # the CLI imports it from the door
    assert cli.main(["summary", str(SAMPLE), "--no-cache"]) == 3
    assert one_line(capsys) == ("tuiprof: internal error: RuntimeError: bad name k\\x1b]52;c;ZXZpbA==\\x07\\nnext (please report)")


def test_stderr_lines_go_through_the_one_sanitiser():
    assert cli.safe_text is safe_text


def test_safe_text_shows_every_non_printing_character():
    assert safe_text("plain ünïcode 名前") == "plain ünïcode 名前"
    assert safe_text("a\tb\rc\nd\x00e\x7ff\x9bg") == "a\\tb\\rc\\nd\\x00e\\x7ff\\x9bg"
    assert safe_text("x\u202ey\u200bz\u2028w\udcff") == "x⟨U+202E⟩y⟨U+200B⟩z⟨U+2028⟩w⟨U+DCFF⟩"
    assert safe_text("no\u00a0break") == "no\u00a0break"
