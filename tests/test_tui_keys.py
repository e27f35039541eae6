"""Pilot tests of the keys a newcomer tries first (issue 20): the pane keys from every
pane, scrolling the hardware pane and the help by keyboard."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from synthetic import synthetic_runset
from textual.widgets import TabbedContent
from tui_harness import drive, press, text_of

from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.help import HelpScreen

ROCPD_8_GPUS = Path(__file__).parent / "data" / "rocpd" / "28_results.db"
TABS = ["hotspots", "timeline", "hardware", "findings", "counters", "issues"]


def every_transition(keys: int) -> list[int]:
    """keys² + 1 presses in which every ordered pair (from, to) of the ``keys`` keys, the
    same key twice included, occurs exactly once as two consecutive presses (a de Bruijn
    sequence of order 2, made linear)."""
    walk = []
    for a in range(keys):
        walk.append(a)
        for b in range(a + 1, keys):
            walk += [a, b]
    return walk + [0]


def test_every_transition_walk_covers_each_pair_once():
    walk = every_transition(6)
    assert len(walk) == 37
    assert sorted(pairwise(walk)) == [(a, b) for a in range(6) for b in range(6)]


def test_pane_keys_from_every_pane():
    """1–6 from each of the six panes shows the pane pressed and it stays shown (Findings
    → 3 or 6 switched back to Findings when focus stayed in the hidden table). One walk
    through the 36 (from, to) pairs, each once: every press lands on the pane the previous
    press showed and checked."""
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        tabs = app.main.query_one("#tabs", TabbedContent)
        walk = every_transition(6)
        for src, dst in zip([TABS.index(tabs.active)] + walk[:-1], walk):
            assert tabs.active == TABS[src], (TABS[src], tabs.active)
            await press(app, pilot, str(dst + 1))
            for _ in range(3):
                await pilot.pause(0.03)
            assert tabs.active == TABS[dst], (TABS[src], TABS[dst], tabs.active)
            # the shown pane holds the focus, so its keys work without Tab
            assert app.focused is not None and app.focused.id is not None
            assert app.main.query_one(f"#{TABS[dst]}").query(f"#{app.focused.id}")

    drive(TuiProfApp(runset), flow)


def test_hardware_pane_scrolls_by_keyboard_and_collapses_identical_agents():
    """The rocpd run (2 CPUs, 8 identical MI300X) at 80×24: one column and one capability
    block for the eight GPUs, and j/G/End/g/space scroll the pane."""

    async def flow(app, pilot):
        await press(app, pilot, "3")
        pane = app.main.query_one("#hardware-pane")
        agents = " ".join(text_of(app, "#hardware-body", width=78).split())
        assert "GPU 2–9 ×8" in agents and "agent 0" in agents and "agent 1" in agents
        assert "agent 2" not in agents
        caps = text_of(app, "#capabilities-body", width=78)
        assert caps.count("Profiling capability") == 1
        assert "agents 2–9 gfx942 ×8" in caps
        assert pane.max_scroll_y > 0  # 80×24 cannot show it all
        await press(app, pilot, "j")
        assert pane.scroll_y == 1
        await press(app, pilot, "G")
        assert pane.scroll_y == pane.max_scroll_y
        await press(app, pilot, "g")
        assert pane.scroll_y == 0
        await press(app, pilot, "end")
        assert pane.scroll_y == pane.max_scroll_y
        await press(app, pilot, "home", "space")
        assert pane.scroll_y > 1

    drive(TuiProfApp(ROCPD_8_GPUS, use_cache=False), flow)


def test_help_scrolls_with_j_G_end():
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help")
        assert scroll.max_scroll_y > 0
        await press(app, pilot, "j", "j")
        assert scroll.scroll_y == 2
        await press(app, pilot, "G")
        assert scroll.scroll_y == scroll.max_scroll_y
        await press(app, pilot, "g")
        assert scroll.scroll_y == 0
        await press(app, pilot, "end")
        assert scroll.scroll_y == scroll.max_scroll_y

    drive(TuiProfApp(runset), flow)


def test_gfx1151_sample_hardware_pane_says_what_cannot_be_measured():
    """tuiprof --sample gfx1151, tab 3: the capability notes of analysis.capability for
    gfx1151 (counters partial, no PC sampling, VALU-only roofline) are shown."""
    from tui_prof.analysis.capability import capabilities
    from tui_prof.samples import sample_path

    path = sample_path("gfx1151_wmma")
    caps = capabilities("gfx1151", "")

    async def flow(app, pilot):
        await press(app, pilot, "3")
        text = " ".join(text_of(app, "#capabilities-body", width=2000).split())
        assert "agent 1 gfx1151" in text
        for key in ("counters", "pc_sampling", "thread_trace", "roofline"):
            assert f"{key.replace('_', ' ')} │ {' '.join(str(caps[key]).split())}" in text
        for note in caps["notes"]:
            assert " ".join(note.split()) in text
        assert "Radeon 8060S" in text_of(app, "#hardware-body")

    drive(TuiProfApp(path, use_cache=False), flow)
