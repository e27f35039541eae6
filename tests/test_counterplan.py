"""The pass planner and ``tuiprof counters plan`` (issue 34).

Checked against: a brute-force search for the fewest passes on generated small instances;
rocprof-compute's own grouping (its first-fit rule over per-block limits, soc_base.py
``perfmon_coalesce`` at ROCm/rocprofiler-compute 95b600ea, with the gfx942 limits of its
``mi_gpu_spec.yaml``), on counter lists from its gfx940 ``pmc_tcc_perf.txt`` /
``pmc_tcp_perf.txt``; and the gfx1151 facts (one TCP counter per pass, SQ_WAVES wrong).
"""

import itertools
import json
import random

import pytest

from tui_prof import cli
from tui_prof.analysis.counterdict import ArchDict, CounterInfo, load
from tui_prof.analysis.counterplan import min_passes, pack, plan
from tui_prof.exits import EXIT_OK, EXIT_USAGE


def _arch(limits: dict[str, int], accumulate: tuple[str, ...] = ()) -> ArchDict:
    counters = {c: CounterInfo(c, c.split("_")[0], "m", "", True) for c in accumulate}
    return ArchDict("gfxtest", "amd", "T", (), False, limits, "test", {}, counters, {}, {}, ())


def _fewest_by_search(limits: dict[str, int], counters: list[str]) -> int:
    """The fewest passes by exhaustive search over assignments (independent of the planner)."""
    for k in range(1, len(counters) + 1):
        for assignment in itertools.product(range(k), repeat=len(counters)):
            load_ = {}
            for c, p in zip(counters, assignment, strict=True):
                key = (p, c.split("_")[0])
                load_[key] = load_.get(key, 0) + 1
            if all(n <= limits[b] for (_, b), n in load_.items()):
                return k
    return 0


def _check_limits(d: ArchDict, passes: list[list[str]]) -> None:
    for p in passes:
        assert len(p) == len(set(p))
        for block in {d.block_of(c) for c in p}:
            assert sum(d.block_of(c) == block for c in p) <= d.limits[block], p


@pytest.mark.parametrize("seed", range(40))
def test_generated_sets_get_the_fewest_passes(seed):
    rng = random.Random(seed)
    limits = {b: rng.randint(1, 3) for b in ("AA", "BB", "CC")}
    n = rng.randint(1, 6)
    counters = [f"{rng.choice(list(limits))}_C{i}" for i in range(n)]
    groups = []
    rest = list(counters)
    while rest:  # random metric groups over the counters
        k = rng.randint(1, len(rest))
        groups.append(rest[:k])
        rest = rest[k:]
    d = _arch(limits)
    passes = pack(d, groups)
    _check_limits(d, passes)
    assert sorted(c for p in passes for c in p) == sorted(counters)
    assert len(passes) == _fewest_by_search(limits, counters) == min_passes(d, counters)


def test_known_optimum_by_construction():
    # 9 SQ counters under SQ 8 need 2 passes; 4 TCP counters under TCP 1 need 4; together 4
    d = _arch({"SQ": 8, "TCP": 1})
    sq = [f"SQ_X{i}" for i in range(9)]
    tcp = [f"TCP_Y{i}" for i in range(4)]
    passes = pack(d, [sq, tcp])
    assert len(passes) == 4
    _check_limits(d, passes)


def test_accumulate_counters_get_a_pass_each():
    d = _arch({"SQ": 8, "GRBM": 2}, accumulate=("SQ_LEVEL_WAVES_ACCUM", "SQ_INST_LEVEL_LDS_ACCUM"))
    passes = pack(d, [["SQ_LEVEL_WAVES_ACCUM", "GRBM_GUI_ACTIVE"], ["SQ_INST_LEVEL_LDS_ACCUM"], ["SQ_A", "SQ_B"]])
    acc = [p for p in passes if any(c.endswith("_ACCUM") for c in p)]
    assert len(acc) == 2 and all(sum(c.endswith("_ACCUM") for c in p) == 1 for p in acc)
    assert len(passes) == 3 == min_passes(d, ["SQ_LEVEL_WAVES_ACCUM", "GRBM_GUI_ACTIVE", "SQ_INST_LEVEL_LDS_ACCUM", "SQ_A", "SQ_B"])


def test_a_metric_is_kept_in_one_pass_when_it_fits():
    d = _arch({"TCC": 4})
    # first-fit counter by counter would split the second metric over passes 1 and 2
    passes = pack(d, [["TCC_A", "TCC_B"], ["TCC_C", "TCC_D", "TCC_E"], ["TCC_F"]])
    assert len(passes) == 2
    assert any({"TCC_C", "TCC_D", "TCC_E"} <= set(p) for p in passes)


# ------------------------------------------------------------------- gfx1151
GFX1151_ALL = sorted(load("gfx1151").metrics) + ["TCP_TA_REQ", "TCP_PENDING_STALL_CYCLES", "SQ_WAVES"]


@pytest.mark.parametrize("seed", range(20))
def test_gfx1151_never_puts_two_tcp_counters_in_one_pass(seed):
    rng = random.Random(seed)
    names = rng.sample(GFX1151_ALL, rng.randint(1, len(GFX1151_ALL)))
    p = plan("gfx1151", names, rocm="7.2.1")
    d = load("gfx1151")
    for ps in p["passes"]:
        assert sum(d.block_of(c) == "TCP" for c in ps["counters"]) <= 1, ps
    assert len(p["passes"]) == p["min_passes"]


def test_gfx1151_tcp_ratio_is_two_passes_and_says_so():
    p = plan("gfx1151", ["tcp_stall_per_request"], rocm="7.2.1")
    assert [ps["counters"] for ps in p["passes"]] == [["TCP_PENDING_STALL_CYCLES"], ["TCP_TA_REQ"]]
    assert p["metrics"][0]["split"] is True and p["metrics"][0]["passes"] == [1, 2]
    assert any(w["kind"] == "limit" and "10041" in w["issue"] for w in p["warnings"])
    assert sum("10041" in n and "--list-avail" in n for n in p["notes"]) == 2  # both counters are new


@pytest.mark.parametrize("names", [["SQ_WAVES"], ["wavefronts"], ["Wavefronts"], ["alu_stalled_by_lds"]])
def test_gfx1151_warns_on_sq_waves(names):
    p = plan("gfx1151", names, rocm="7.2.1")
    sq = [w for w in p["warnings"] if "SQ_WAVES" in w["counters"]]
    assert sq and "rocm-systems#3828" in sq[0]["issue"] and sq[0]["applies"] is True


def test_gfx1151_rocm_7_2_0_cannot_count_at_all():
    p = plan("gfx1151", ["l2_hit", "wavefronts"], rocm="7.2.0")
    assert p["passes"] == [] and p["pmc_lines"] == []
    assert [c["name"] for c in p["cannot"]] == ["l2_hit", "wavefronts"]
    assert all("2169" in c["why"] for c in p["cannot"])
    unknown = plan("gfx1151", ["l2_hit"])  # version not given: planned, with the abort as a possible defect
    assert unknown["passes"] and any(w["kind"] == "abort" and w["applies"] is None for w in unknown["warnings"])


def test_what_does_not_exist_says_why():
    p = plan("gfx1151", ["mfma_utilization", "TA_FLAT_WAVEFRONTS", "no_such_metric", "XYZ_FOO"], rocm="7.2.1")
    why = {c["name"]: c["why"] for c in p["cannot"]}
    assert "no matrix cores" in why["mfma_utilization"]
    assert "intellikit" in why["TA_FLAT_WAVEFRONTS"]
    assert "not a metric or counter" in why["no_such_metric"]
    assert "no per-pass limit" in why["XYZ_FOO"]
    assert p["passes"] == []


# --------------------------------------------------- gfx942 against rocprof-compute
# counter lists of rocprof-compute's gfx940 profile configs (ROCm/rocprofiler-compute
# 95b600ea src/rocprof_compute_soc/profile_configs/gfx940/pmc_tcc_perf.txt, in file order,
# TCC_BUBBLE left out as its rocprofv3 path leaves it out)
RPC_TCC = [
    "GRBM_COUNT",
    "GRBM_GUI_ACTIVE",
    "SQ_CYCLES",
    "SQ_BUSY_CYCLES",
    "SQ_WAVES",
    "TCC_CYCLE_sum",
    "TCC_BUSY_sum",
    "TCC_PROBE_sum",
    "TCC_PROBE_ALL_sum",
    "TCC_NC_REQ_sum",
    "TCC_UC_REQ_sum",
    "TCC_CC_REQ_sum",
    "TCC_RW_REQ_sum",
    "TCC_REQ_sum",
    "TCC_STREAMING_REQ_sum",
    "TCC_HIT_sum",
    "TCC_MISS_sum",
    "TCC_READ_sum",
    "TCC_WRITE_sum",
    "TCC_ATOMIC_sum",
    "TCC_WRITEBACK_sum",
    "TCC_EA0_WRREQ_sum",
    "TCC_EA0_WRREQ_64B_sum",
    "TCC_EA0_WR_UNCACHED_32B_sum",
    "TCC_EA0_WRREQ_DRAM_sum",
    "TCC_EA0_RDREQ_sum",
    "TCC_EA0_RDREQ_32B_sum",
]
RPC_TCP = [
    "GRBM_COUNT",
    "GRBM_GUI_ACTIVE",
    "SQ_CYCLES",
    "SQ_BUSY_CYCLES",
    "SQ_BUSY_CU_CYCLES",
    "SQ_WAVES",
    "SQ_WAVE_CYCLES",
    "TCP_GATE_EN1_sum",
    "TCP_GATE_EN2_sum",
    "TCP_TD_TCP_STALL_CYCLES_sum",
    "TCP_TCR_TCP_STALL_CYCLES_sum",
    "TCP_READ_TAGCONFLICT_STALL_CYCLES_sum",
    "TCP_WRITE_TAGCONFLICT_STALL_CYCLES_sum",
    "TCP_ATOMIC_TAGCONFLICT_STALL_CYCLES_sum",
    "TCP_TA_TCP_STATE_READ_sum",
    "TCP_TCC_READ_REQ_sum",
    "TCP_TCC_WRITE_REQ_sum",
    "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
]
RPC_GFX942_LIMITS = {"SQ": 8, "TA": 2, "TD": 2, "TCP": 4, "TCC": 4, "CPC": 2, "CPF": 2, "SPI": 6, "GRBM": 2, "GDS": 4}


def _rocprof_compute_rule(counters: list[str]) -> list[list[str]]:
    """rocprof-compute's grouping restated: each counter, in order, into the first pass
    whose block (name prefix; SQC counts as SQ) still has room, else a new pass."""
    passes: list[tuple[dict[str, int], list[str]]] = []
    for c in counters:
        block = c.split("_")[0]
        block = "SQ" if block == "SQC" else block
        for room, members in passes:
            if room[block] > 0:
                room[block] -= 1
                members.append(c)
                break
        else:
            room = dict(RPC_GFX942_LIMITS)
            room[block] -= 1
            passes.append((room, [c]))
    return [members for _, members in passes]


@pytest.mark.parametrize("counters", [RPC_TCC, RPC_TCP], ids=["pmc_tcc_perf", "pmc_tcp_perf"])
def test_gfx942_groups_as_rocprof_compute_does(counters):
    assert load("gfx942").limits == RPC_GFX942_LIMITS
    p = plan("gfx942", counters)
    ours = [[c for c in ps["counters"] if c != "GRBM_GUI_ACTIVE" or ps["index"] == 1] for ps in p["passes"]]  # GRBM_GUI_ACTIVE: repeated per pass
    assert ours == _rocprof_compute_rule(counters)


def test_gfx942_tcc_lines_are_rocprof_compute_s_lines():
    # the four-counter TCC lines of its config file are exactly its passes 1-4 (TCC 4 per pass)
    p = plan("gfx942", RPC_TCC)
    tcc = [[c for c in ps["counters"] if c.startswith("TCC")] for ps in p["passes"]]
    assert tcc[:4] == [
        ["TCC_CYCLE_sum", "TCC_BUSY_sum", "TCC_PROBE_sum", "TCC_PROBE_ALL_sum"],
        ["TCC_NC_REQ_sum", "TCC_UC_REQ_sum", "TCC_CC_REQ_sum", "TCC_RW_REQ_sum"],
        ["TCC_REQ_sum", "TCC_STREAMING_REQ_sum", "TCC_HIT_sum", "TCC_MISS_sum"],
        ["TCC_READ_sum", "TCC_WRITE_sum", "TCC_ATOMIC_sum", "TCC_WRITEBACK_sum"],
    ]
    assert len(p["passes"]) == p["min_passes"] == 6  # 22 TCC counters / 4


def test_gfx942_metrics_expand_and_plan():
    p = plan("gfx942", ["L2 Cache Hit Rate", "hbm_bandwidth_pct", "vL1D Cache Hit Rate", "wave_occupancy"])
    counters = [c["name"] for c in p["counters"]]
    assert {"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_BUBBLE_sum", "TCC_EA0_WRREQ_64B_sum", "SQ_LEVEL_WAVES_ACCUM"} <= set(counters)
    _check_limits(load("gfx942"), [ps["counters"] for ps in p["passes"]])
    assert len(p["passes"]) == p["min_passes"]
    assert p["input_file"].splitlines() == [f"pmc: {' '.join(ps['pmc'])}" for ps in p["passes"]]
    assert p["pmc_lines"] == [f"--pmc {' '.join(ps['pmc'])}" for ps in p["passes"]]
    assert any(w["kind"] == "dropped" for w in p["warnings"])  # TCC_BUBBLE


def test_nvidia_plan_names_ncu_metrics():
    p = plan("sm_90", ["l2_hit", "hbm_bandwidth_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "fetch_sizeX"])
    assert p["ncu_metrics"] == [
        "lts__t_sector_hit_rate.pct",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ]
    assert p["commands"][0].startswith("ncu --metrics lts__t_sector_hit_rate.pct,")
    assert [c["name"] for c in p["cannot"]] == ["fetch_sizeX"]


# ------------------------------------------------------------------------ CLI
def test_cli_text_and_json(capsys):
    assert cli.main(["counters", "plan", "--arch", "gfx1151", "--rocm", "7.2.1", "tcp_stall_per_request", "wavefronts"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "pass 1: --pmc TCP_PENDING_STALL_CYCLES" in out and "pass 2: --pmc TCP_TA_REQ" in out
    assert "rocm-systems#3828" in out and "pmc: TCP_TA_REQ" in out
    assert cli.main(["counters", "plan", "--arch", "gfx942", "--json", "l2_hit"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "tuiprof.counters-plan/1" and doc["pmc_lines"] == ["--pmc TCC_HIT_sum TCC_MISS_sum"]


def test_cli_without_names_plans_the_pane_s_metrics(capsys):
    assert cli.main(["counters", "plan", "--arch", "gfx90a", "--json"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert "l2_hit" in doc["requested"] and doc["passes"]


@pytest.mark.parametrize("arch", ["gfx9999", "\x1b[31mred\x1b[0m\nline"])
def test_cli_unknown_arch_is_one_line_exit_2(arch, capsys):
    assert cli.main(["counters", "plan", "--arch", arch, "l2_hit"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "no counter dictionary" in lines[0] and "\x1b" not in captured.err


def test_cli_hostile_metric_name_is_shown_safely(capsys):
    assert cli.main(["counters", "plan", "--arch", "gfx942", "\x1b]0;pwned\x07l2\u202ehit"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert cli.main(["counters", "plan", "--arch", "gfx942", "--json", "\x1b[2J"]) == EXIT_OK
    assert "\x1b" not in capsys.readouterr().out


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151"])
def test_derived_metrics_are_requested_whole_in_one_pass(arch):
    # rocprofv3 evaluates FETCH_SIZE/WRITE_SIZE from their hardware counters within one pass
    d = load(arch)
    p = plan(arch, ["hbm_bandwidth_pct", "l2_hit", "gpu_busy"], rocm="7.2.1")
    for name in ("FETCH_SIZE", "WRITE_SIZE"):
        (ps,) = [ps for ps in p["passes"] if name in ps["pmc"]]
        assert set(d.metrics[name.lower()].counters) <= set(ps["counters"])
    _check_limits(d, [ps["counters"] for ps in p["passes"]])
    assert len(p["passes"]) == p["min_passes"]
    assert p["derived"] == {n: list(d.metrics[n.lower()].counters) for n in ("FETCH_SIZE", "WRITE_SIZE")}


@pytest.mark.parametrize("version", ["garbage", "7", "7.2.1.5", "\x1b[31m7.2"])
def test_cli_bad_rocm_version_is_one_line_exit_2(version, capsys):
    assert cli.main(["counters", "plan", "--arch", "gfx1151", "--rocm", version, "l2_hit"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and "--rocm" in captured.err and "\x1b" not in captured.err
