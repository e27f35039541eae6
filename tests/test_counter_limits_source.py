"""Issue 34: every per-pass block limit is sourced or marked inferred. gfx1100 has no
rocprof-compute SoC: its limits are the gfx11 blocks' counter registers as Mesa's gfx11
perfcounter table gives them (src/amd/common/ac_perfcounter_gfx11.c, groups_gfx11,
num_counters; read at bminor/mesa-mesa 3c7ea1e4), except GCEA, which Mesa programs one
counter of: that limit is inferred, and the plan says so in its JSON and its text."""

from __future__ import annotations

import pytest

from tui_prof.analysis.counterdict import load, validate
from tui_prof.analysis.counterplan import plan
from tui_prof.render.counterplan import plan_text

# num_counters of the gfx11 blocks in Mesa's table (the source cited in gfx1100.toml)
MESA_GFX11 = {"SQ": 8, "TA": 2, "GRBM": 2, "CPC": 2, "TCP": 4, "SPI": 6, "GL1A": 4, "GL1C": 4, "GL2A": 4, "GL2C": 4, "GCEA": 1}


def test_gfx1100_limits_are_mesa_s_or_marked_inferred():
    d = load("gfx1100")
    assert "ac_perfcounter_gfx11.c" in d.limits_source
    assert d.limits_inferred == ("GCEA",)
    for block, n in d.limits.items():
        if block not in d.limits_inferred:
            assert n == MESA_GFX11[block], block


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1151"])
def test_sourced_archs_have_no_inferred_limit(arch):
    assert load(arch).limits_inferred == ()
    assert plan(arch, ["gpu_busy"])["limits_inferred"] == []


def test_the_plan_says_which_limit_is_inferred():
    p = plan("gfx1100", ["GCEA_PERF_SEL_RDREQ", "GRBM_GUI_ACTIVE"])
    assert p["limits_inferred"] == ["GCEA"]
    assert any("GCEA limit (2 per pass) is inferred" in n for n in p["notes"])
    text = plan_text(p)
    assert "GCEA 2 (inferred)" in text and "SQ 8 (inferred)" not in text
    # a plan that uses no GCEA counter names the inferred limit in its JSON and text only
    q = plan("gfx1100", ["GRBM_GUI_ACTIVE"])
    assert q["limits_inferred"] == ["GCEA"] and not any("inferred" in n for n in q["notes"])


def test_limits_inferred_must_name_limited_blocks():
    raw = {"schema": 1, "arch": "gfx9", "vendor": "amd", "family": "X", "limits_source": "s", "limits": {"SQ": 8}, "limits_inferred": ["TCP"]}
    assert any("limits_inferred must list blocks of limits" in e for e in validate("gfx9", raw))
