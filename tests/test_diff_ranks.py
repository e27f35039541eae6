"""The rank part of ``tuiprof diff`` in text and Markdown: every rank up to --top, else the
ranks whose span changed most, checked against the generator's spans."""

from __future__ import annotations

from tui_prof.analysis.diff import diff_runsets
from tui_prof.render.diff import diff_markdown, diff_text, shown_ranks, to_json
from tui_prof.synth.ranks import RankSpec, build_ranks


def _pair():
    """4 ranks against 6 whose rank 1 computes 50 % longer: ranks 4 and 5 are in B only."""
    a = build_ranks(RankSpec(ranks=4, iterations=3, slow_rank=None))
    b = build_ranks(RankSpec(ranks=6, iterations=3, slow_rank=1, slow_pct=50))
    return a, b, diff_runsets(a.runset("a"), b.runset("b"))


def test_the_ranks_whose_span_changed_most_are_listed_first():
    a, b, result = _pair()
    ranks = to_json(result)["ranks"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3, 4, 5]
    assert [r["span_ns_a"] for r in ranks[4:]] == [None, None]
    assert [r["rank"] for r in shown_ranks(ranks, 2)] == [4, 5]  # on one side only: listed first
    change = {r["rank"]: abs(r["span_ns_b"] - r["span_ns_a"]) for r in ranks[:4]}
    three = [r["rank"] for r in shown_ranks(ranks, 3)]
    assert three[1:] == [4, 5] and change[three[0]] == max(change.values())
    assert shown_ranks(ranks, None) == ranks and shown_ranks(ranks, 6) == ranks


def test_text_and_markdown_cap_the_rank_rows_and_say_so():
    _, _, result = _pair()
    text = diff_text(result, top=2)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("rank "))
    assert [line.split()[0] for line in lines[start + 2 : start + 4]] == ["4", "5"]
    assert lines[start + 2].split()[1] == "-"  # no span in A
    assert "4 more ranks not listed: these are the 2 whose span changed most" in text
    full = diff_text(result, top=None)
    assert "more ranks not listed" not in full
    md = diff_markdown(result, top=2)
    assert "## Ranks" in md and "4 vs 6 processes; communication" in md
    assert "| collective | kernels A | kernels B | time A | time B |" in md
    assert "| AllReduce | 12 | 18 |" in md  # one AllReduce per step and rank: 3 steps
    assert "4 more ranks not listed" in md
    assert md.count("\n| 4 |") == md.count("\n| 5 |") == 1 and "\n| 0 |" not in md


def test_a_collective_type_from_a_summary_is_escaped_once_and_never_obeyed():
    """A summary handed over by a stranger may name any collective type: the Markdown cell
    escapes it once (no doubled backslashes), the text table shows its escape bytes inert."""
    _, _, result = _pair()
    hostile = "All_Reduce[b]\x1b[31m*"
    for doc in (result.summary_a, result.summary_b):
        for row in doc["communication"]["by_type"]:
            row["type"] = hostile
    md = diff_markdown(result, top=2)
    # escaped once: ESC shown as the text \x1b (safe_text), then Markdown's backslashes
    assert "| All\\_Reduce\\[b\\]\\\\x1b\\[31m\\* | 12 | 18 |" in md
    assert "\x1b" not in md and "\x1b" not in diff_text(result, top=2)
