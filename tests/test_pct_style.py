"""One percentage style in every output: the analysis' messages (finding text carried in the
JSON) print ``12.3%`` through tui_prof.percent, the same function render/fmt.py uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui_prof import percent
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.render import fmt

DATA = Path(__file__).parent / "data"
SPACED = re.compile(r"\d %")  # the old "12.3 %"


def test_render_uses_the_shared_formatter():
    assert fmt.fmt_pct is percent.fmt_pct
    assert [percent.fmt_pct(v) for v in (12.345, 0, None, float("nan"), float("inf"))] == ["12.3%", "0.0%", "-", "-", "-"]
    assert percent.fmt_pct(-3.25, 2, signed=True) == "-3.25%" and percent.fmt_pct(40, 0, signed=True) == "+40%"


@pytest.mark.parametrize(
    "path",
    ["kineto/ranks", "kineto/h200/train_sync.pt.trace.json.gz", "kineto/mi300__gaunernst_bert-small-uncased__1016001.json.gz"],
)
def test_finding_messages_print_percentages_in_the_one_style(path):
    doc = build_summary(load_path(DATA / path, use_cache=False), SummaryOptions(logs=False))
    messages = [f["message"] for f in doc["findings"]]
    assert any("%" in m for m in messages)  # the check below sees some percentages
    for m in messages:
        assert not SPACED.search(m), m
    # each share in a message is the one formatter's text of a number in the document
    for f in doc["findings"]:
        if f["code"] == "straggler":
            assert percent.fmt_pct(doc["stragglers"]["compute_excess_pct"]) in f["message"]
        if f["code"] == "gpu-idle" and "active span" in f["message"]:
            assert f"GPU idle {percent.fmt_pct(doc['gpu']['idle_pct'])} " in f["message"]


@pytest.mark.parametrize(
    ("value", "sig", "text"), [(0.065789, 4, "0.06579%"), (18.75, 6, "18.75%"), (9.4494, 3, "9.45%"), (100.0, 3, "100%"), (float("nan"), 3, "-")]
)
def test_significant_digit_percentages_have_no_space(value, sig, text):
    """% of peak and occupancy keep significant digits (a tiny share is not 0.0%) in the one style."""
    assert percent.fmt_pct(value, sig=sig) == text


def test_threshold_texts_in_the_one_style():
    """The counter thresholds ("< 50% [P]") print percentages as the rest of the product does."""
    from tui_prof.analysis.counters import METRICS

    thresholds = [m.threshold for m in METRICS]
    assert "< 50% [P]" in thresholds
    assert not [t for t in thresholds if re.search(r"\d %", t)]


MODULO = re.compile(r"\d % \d")  # an integer modulo in code, not a percentage


def test_docs_and_sources_print_percentages_in_the_one_style():
    """The docs (docs/metrics.md's threshold tables and every other page), the module
    docstrings (the findings and integrity rule tables) and every message in tui_prof's
    sources write ``50%``, not ``50 %``."""
    root = Path(__file__).parent.parent
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "tui_prof").rglob("*.py"))]
    spaced = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SPACED.search(MODULO.sub("", line))
    ]
    assert spaced == []
    assert "gpu-idle                GPU idle > 20% of its span (rocinsight)                     high" in (root / "tui_prof/analysis/findings.py").read_text()
