"""Counter advice (issue 34): a sentence per metric that crosses a threshold of the counter
dictionary (read here from the TOML file itself), bound-relevant metrics first, each naming
its formula and the rocprofv3 pass of the plan that collects it."""

from importlib import resources
from pathlib import Path

import pytest
import tomllib

from tui_prof.analysis.counteradvice import advise
from tui_prof.analysis.counterplan import default_metrics, plan
from tui_prof.analysis.counters import counter_metrics
from tui_prof.loaders import load_path

DB = Path(__file__).parent / "data" / "rocprof_compute" / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"

CDNA = tomllib.loads(resources.files("tui_prof.analysis.counterdict").joinpath("_cdna.toml").read_text(encoding="utf-8"))
L2_BAD_BELOW = CDNA["metrics"]["l2_hit"]["bad_below"]
VALU_BAD_BELOW = CDNA["metrics"]["valu_active_threads"]["bad_below"]


def _metric(value, unit="%", pct=None):
    return {"value": value, "unit": unit, "pct_of_peak": pct}


def _kernel(bound=None, name="my_kernel", **metrics):
    k = {"name": name, "metrics": metrics}
    if bound:
        k["roofline"] = {"bound": bound, "ai": 0.5 if bound == "memory" else 500.0, "ridge": 200.0}
    return k


@pytest.mark.parametrize(("value", "expected"), [(L2_BAD_BELOW - 0.1, True), (L2_BAD_BELOW + 0.1, False)])
def test_threshold_from_the_dictionary(value, expected):
    out = advise("gfx942", _kernel(l2_hit=_metric(value)))
    assert bool(out) is expected
    if expected:
        (a,) = out
        assert a["label"] == "L2 Cache Hit Rate" and f"< {L2_BAD_BELOW:g}" in a["text"]
        assert "100*TCC_HIT_sum/(TCC_HIT_sum+TCC_MISS_sum)" in a["text"]
        default = plan("gfx942", default_metrics("gfx942"))
        (row,) = [m for m in default["metrics"] if m["key"] == "l2_hit"]
        assert a["passes"] == row["passes"] and f"pass {row['passes'][0]} of `tuiprof counters plan --arch gfx942`" in a["text"]


@pytest.mark.parametrize(("bound", "first"), [("memory", "l2_hit"), ("compute", "valu_active_threads")])
def test_the_bound_orders_the_advice(bound, first):
    out = advise("gfx942", _kernel(bound, l2_hit=_metric(L2_BAD_BELOW / 2), valu_utilization=_metric(VALU_BAD_BELOW / 2)))
    assert out[0]["metric"] == "roofline" and f"{bound}-bound" in out[0]["text"]
    assert out[1]["metric"] == first


def test_mfma_only_matters_in_a_gemm():
    low = _metric(5.0)
    assert advise("gfx942", _kernel(name="elementwise_add", mfma_utilization=low)) == []
    (a,) = advise("gfx942", _kernel(name="Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", mfma_utilization=low))
    assert a["label"] == "MFMA Utilization" and not a["good"]
    (good,) = advise("gfx942", _kernel(name="Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", mfma_utilization=_metric(90.0)))
    assert good["good"] and "good" in good["text"]


def test_a_metric_outside_the_default_plan_names_its_own_plan():
    (a,) = advise("gfx942", _kernel(vl1d_stalled_on_l2=_metric(60.0)))
    assert "`tuiprof counters plan --arch gfx942 vl1d_stalled_on_l2`" in a["text"]


def test_no_advice_where_the_dictionary_has_no_arch():
    assert advise("gfx9999", _kernel(l2_hit=_metric(1.0))) == []
    assert advise("sm_90", _kernel(l2_hit=_metric(1.0))) == []


def test_the_database_kernels_carry_advice():
    (run,) = load_path(DB).runs
    block = counter_metrics(run, "amd")
    advised = [k for k in block["kernels"] if k.get("advice")]
    assert advised
    for k in advised:
        for a in k["advice"]:
            if a["metric"] != "roofline":
                assert a["formula"] in a["text"] and a["passes"]


def test_a_defective_counter_is_said_whatever_its_value():
    (a,) = advise("gfx1151", _kernel(waves=_metric(1280.0, "waves")))
    assert "SQ_WAVES" in a["text"] and "rocm-systems#3828" in a["text"] and a["defect"]
    assert advise("gfx942", _kernel(waves=_metric(1280.0, "waves"))) == []


def test_a_percent_value_is_written_in_the_one_percent_style():
    """A metric in % prints ``12.3%`` like every other percentage (tui_prof.percent.fmt_pct)."""
    value = L2_BAD_BELOW - 7.25
    (a,) = advise("gfx942", _kernel(l2_hit=_metric(value)))
    assert f"{value:.3g}%" in a["text"] and f"{value:.3g} %" not in a["text"]
