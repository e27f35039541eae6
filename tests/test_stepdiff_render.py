"""``tuiprof diff A B --steps``: CLI, the ``steps`` section of tuiprof.diff/1, text and Markdown.

The runs are the generator's stepped loop with known edits (tui_prof.synth.steps), written
as rocprofv3 CSV runs so the CLI loads them as a user's runs; expected values come from
the generator's construction.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tui_prof.analysis.stepdiff import STEPS_VERSION
from tui_prof.cli import main
from tui_prof.exits import EXIT_OK, EXIT_USAGE
from tui_prof.synth import write_run
from tui_prof.synth.steps import INSERTED, StepSpec, build_steps

BASE = StepSpec(kinds=5)
HOSTILE = "\x1b]52;c;SGVsbG8=\x07evil|[/bold]`x`<b>"


def strict(text: str) -> dict:
    def no_constant(name):
        raise AssertionError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=no_constant)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("stepdiff")
    a, _ = build_steps(BASE)
    b, _ = build_steps(replace(BASE, insert_after=2, slow=1))
    b.kernels["name"] = b.kernels["name"].cat.rename_categories({INSERTED.name: HOSTILE})
    return str(write_run(a, root / "a", "csv")), str(write_run(b, root / "b", "csv"))


def test_json_steps_section(pair, capsys):
    assert main(["diff", *pair, "--steps", "--json", "--no-cache"]) == EXIT_OK
    doc = strict(capsys.readouterr().out)
    assert doc["schema"] == "tuiprof.diff/1" and "metrics" in doc  # the section is an addition
    s = doc["steps"]
    assert s["version"] == STEPS_VERSION and s["aligned_by"] == "name"
    assert [(r["names"], r["count"], r["total_ns"]) for r in s["inserted"]] == [([HOSTILE], 1, BASE.kernel_ns)]
    assert s["removed"] == [] and s["faster"] == []
    assert [(r["key"], r["delta_ns"], r["ratio"]) for r in s["slower"]] == [("ck_tile::kentry", BASE.kernel_ns, 2.0)]
    assert s["wall_delta_ns"] == 2 * BASE.kernel_ns == sum(p["delta_ns"] for p in s["contributions"])
    assert s["a"]["step"] == s["b"]["step"] == "train_step [2]"
    assert {"floor_pct", "kernels", "gaps", "step_band_pct"} <= set(s["noise"])
    assert s["verdict"]["what"] in ("inserted", "slower") and "most of it" in s["verdict"]["text"]
    assert set(s["gaps"]) >= {"by_cause", "grown", "shrunk", "a_ns", "b_ns"}


def test_without_steps_flag_no_section(pair, capsys):
    assert main(["diff", *pair, "--json", "--no-cache"]) == EXIT_OK
    assert "steps" not in strict(capsys.readouterr().out)


def test_text_and_markdown_are_sanitised(pair, capsys):
    assert main(["diff", *pair, "--steps", "--no-cache"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "Step-aligned diff" in text and "Inserted in B (1 kernels)" in text and "Verdict: B's step is" in text
    assert "\x1b" not in text and "\x07" not in text
    assert main(["diff", *pair, "--steps", "--md", "--no-cache"]) == EXIT_OK
    md = capsys.readouterr().out
    assert "## Step-aligned diff" in md and "\x1b" not in md and "\x07" not in md
    section = md[md.index("## Step-aligned diff") :]
    table_rows = [line for line in section.splitlines() if "evil" in line]
    assert table_rows
    for line in table_rows:  # the name is one code span: its | does not split the row
        cell = line.split(" | ")[0].removeprefix("| ")
        assert cell.startswith("`") and cell.endswith("`"), line


def test_step_numbers_and_bad_step(pair, capsys):
    assert main(["diff", *pair, "--step", "4", "--step-b", "3", "--json", "--no-cache"]) == EXIT_OK
    s = strict(capsys.readouterr().out)["steps"]
    assert (s["a"]["step"], s["b"]["step"]) == ("train_step [4]", "train_step [3]")
    assert main(["diff", *pair, "--steps", "--step", "42", "--no-cache"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no step numbered 42" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
