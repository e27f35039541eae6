"""Occupancy (worked examples of research/counters_hw.md §3c), derived counter metrics, capabilities, log scan."""

from pathlib import Path

import pytest

from tui_prof.analysis.capability import capabilities, scan_logs
from tui_prof.analysis.counterplan import default_metrics, plan
from tui_prof.analysis.counters import counter_metrics, pmc_commands
from tui_prof.analysis.occupancy import kernel_occupancy, occupancy
from tui_prof.model import Agent, Run, make_table

DATA = Path(__file__).parent / "data" / "analysis"


def test_occupancy_mi210_measured_examples():
    # rocprof-compute docs occupancy-limiters example on MI210 (gfx90a): measured 49.92 % and 12.49 %
    vgpr = occupancy("gfx90a", 256, vgpr=124, agpr=4, sgpr=80)
    assert (vgpr["occupancy_pct"], vgpr["waves_per_simd"], vgpr["limiter"]) == (50.0, 4.0, "VGPR")
    lds = occupancy("gfx90a", 256, vgpr=96, lds_bytes=65536)
    assert (lds["occupancy_pct"], lds["limiter"], lds["workgroups_per_cu"]) == (12.5, "LDS", 1)


def test_occupancy_computed_examples_and_hints():
    mi300 = occupancy("gfx942", 256, vgpr=90, sgpr=60, lds_bytes=24576)
    assert (mi300["workgroups_per_cu"], mi300["waves_per_cu"], mi300["occupancy_pct"], mi300["limiter"]) == (2, 8, 25.0, "LDS")
    mi355 = occupancy("gfx950:sramecc+:xnack-", 256, vgpr=90, sgpr=60, lds_bytes=24576)
    assert (mi355["workgroups_per_cu"], mi355["occupancy_pct"], mi355["limiter"]) == (5, 62.5, "VGPR")
    assert "<= 80 VGPRs would give 6" in mi355["hint"]
    rdna = occupancy("gfx1100", 256, vgpr=90, lds_bytes=24576)
    assert (rdna["waves_per_cu"], rdna["occupancy_pct"], rdna["limiter"]) == (40, 62.5, "LDS")
    v128 = occupancy("gfx942", 256, vgpr=128)
    assert v128["hint"] == "VGPR-limited: 128 VGPRs give 4 of 8 waves per SIMD; <= 96 VGPRs would give 5."
    full = occupancy("gfx942", 256, vgpr=64)
    assert full["limiter"] == "none" and full["occupancy_pct"] == 100.0
    assert occupancy("gfx9999", 256, vgpr=64) is None


def test_kernel_occupancy_groups_configurations():
    k = make_table(
        "kernels",
        {
            "start": [0, 10, 20],
            "end": [5, 15, 40],
            "agent": 1,
            "name": ["a", "a", "b"],
            "wg_x": 256,
            "wg_y": 1,
            "wg_z": 1,
            "arch_vgpr": [128, 128, 64],
            "accum_vgpr": 0,
            "sgpr": 30,
            "lds_bytes": 0,
        },
    )
    rows = kernel_occupancy(k, {1: "gfx942"})
    assert [(r["name"], r["dispatches"], r["total_ns"], r["occupancy_pct"]) for r in rows] == [("b", 1, 20, 100.0), ("a", 2, 10, 50.0)]


def _counter_run(values: dict, agent=Agent(id=1, name="gfx942", cu_count=304, num_xcc=8, wave_size=64)):
    names = list(values)
    k = make_table("kernels", {"start": [0, 1000], "end": [1000, 3000], "agent": 1, "dispatch_id": [1, 2], "name": ["gemm_k", "gemm_k"]})
    rows = {"dispatch_id": [], "counter": [], "value": []}
    for d in (1, 2):
        for n in names:
            rows["dispatch_id"].append(d)
            rows["counter"].append(n)
            rows["value"].append(values[n][d - 1])
    return Run(agents=[agent], kernels=k, counters=make_table("counters", rows))


def test_derived_metrics_by_hand():
    run = _counter_run(
        {
            "TCC_HIT_sum": [30, 90],
            "TCC_MISS_sum": [70, 10],  # 30 % and 90 % -> mean 60 %
            "GRBM_GUI_ACTIVE": [8000, 8000],
            "GRBM_COUNT": [16000, 8000],  # GPU busy 50 %, 100 %
            "SQ_WAVES": [100, 300],
            "SQ_THREAD_CYCLES_VALU": [640, 320],
            "SQ_ACTIVE_INST_VALU": [20, 10],  # 50 % lanes
            "SQ_VALU_MFMA_BUSY_CYCLES": [304 * 4 * 100, 304 * 4 * 500],  # per XCD GRBM = 1000 -> 10 %, 50 %
        }
    )
    res = counter_metrics(run)
    (kern,) = res["kernels"]
    m = kern["metrics"]
    assert m["l2_hit"]["value"] == pytest.approx(60.0)
    assert m["gpu_busy"]["value"] == pytest.approx(75.0)
    assert m["waves"]["value"] == pytest.approx(200.0)
    assert m["valu_utilization"]["value"] == pytest.approx(50.0) and m["valu_utilization"]["flagged"]
    assert m["mfma_utilization"]["value"] == pytest.approx(30.0)
    assert "alu_stalled_by_lds" not in m  # not defined on gfx942
    assert m["l2_hit"]["source"].startswith("counter_defs.yaml")
    assert "lds_bank_conflict" in res["missing"]
    assert any("SQ_LDS_BANK_CONFLICT" in c for c in res["commands"])


def test_missing_counters_give_exact_commands_per_arch():
    run = Run(agents=[Agent(id=1, name="gfx1100")], kernels=make_table("kernels", {"start": [0], "end": [1], "agent": 1, "name": ["k"]}))
    res = counter_metrics(run)
    assert res["kernels"] == [] and res["commands"]
    # the counter dictionary's plan (docs/counters.md): the L2 hit rate's two counters in one run
    assert res["commands"] == plan("gfx1100", default_metrics("gfx1100"))["commands"]
    assert any(" GL2C_HIT GL2C_MISS " in c and c.startswith("rocprofv3 --kernel-trace --pmc ") for c in res["commands"])
    assert all("TCC_" not in c for c in pmc_commands("gfx1100"))
    assert any("TCC_HIT_sum" in c for c in pmc_commands("gfx942"))
    assert all("SQ_WAIT_INST_LDS" not in c for c in pmc_commands("gfx942"))
    assert any("SQ_WAIT_INST_LDS" in c for c in pmc_commands("gfx90a"))


def test_capabilities_are_version_dependent():
    c = capabilities("gfx1151", "7.2.0")
    assert c["counters"].startswith("partial") and any(n.startswith("This run's ROCm 7.2.0 is affected") for n in c["notes"])
    assert not any("affected" in n for n in capabilities("gfx1151", "7.11.0")["notes"])
    assert any("stable power state" in n for n in c["notes"])
    assert capabilities("gfx942")["pc_sampling"].startswith("host_trap and stochastic")
    assert capabilities("gfx90a")["pc_sampling"].startswith("host_trap only")
    assert capabilities("gfx942")["limits"]["max_waves_per_simd"] == 8


def test_scan_logs_finds_known_errors_read_only():
    hits = scan_logs(DATA / "logs")
    assert sorted((Path(h["path"]).name, h["code"], h["line"]) for h in hits) == [
        ("compute.txt", "no-supported-arch", 1),
        ("rocprofv3_pmc.log", "hsa-iterate-agents", 2),
    ]
    assert scan_logs(DATA / "does-not-exist") == []
    # size cap: 16 bytes (8 from the head, 8 from the tail) hold none of the messages
    assert scan_logs(DATA / "logs", max_bytes=16) == []


def test_scan_logs_reads_only_head_and_tail_of_a_large_file(tmp_path):
    """128 bytes: the first 64 hold line 1's message, the last 64 the final line's (line -1);
    the message in the middle is not read."""
    head = "ERROR Cannot find a supported arch in rocminfo: gfx1201\n"
    middle = "x" * 1000 + "\nthis service needs a newer version of KFD\n" + "y" * 1000 + "\n"
    tail = "Error Calling hsa_iterate_agents: HSA_STATUS_ERROR\n"
    assert len(head) <= 64 and len(tail) <= 64
    (tmp_path / "run.log").write_text(head + middle + tail)
    hits = scan_logs(tmp_path, max_bytes=128)
    assert [(h["code"], h["line"]) for h in hits] == [("no-supported-arch", 1), ("hsa-iterate-agents", -1)]
    whole = scan_logs(tmp_path)
    assert [(h["code"], h["line"]) for h in whole] == [("no-supported-arch", 1), ("kfd-too-old", 3), ("hsa-iterate-agents", 5)]


def test_low_occupancy_finding_names_its_kernel():
    """lds 65536 B per 256-thread workgroup on gfx90a: 1 workgroup per CU = 12.5 % (the MI210
    example above), so the finding fires and carries the kernel's full name for the TUI."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.model import RunMeta, RunSet

    name = "void big_lds_kernel<" + "T" * 100 + ">(float*)"
    kernels = make_table(
        "kernels",
        {
            "start": [0, 100],
            "end": [50, 150],
            "agent": 1,
            "name": [name, name],
            "wg_x": 256,
            "wg_y": 1,
            "wg_z": 1,
            "arch_vgpr": 96,
            "accum_vgpr": 0,
            "sgpr": 30,
            "lds_bytes": 65536,
        },
    )
    run = Run(meta=RunMeta(label="t", pid=1), agents=[Agent(id=1, name="gfx90a")], kernels=kernels)
    doc = build_summary(RunSet(root="mem", runs=[run]), SummaryOptions(logs=False))
    finding = next(f for f in doc["findings"] if f["code"] == "low-occupancy")
    assert finding["numbers"]["name"] == name
    assert finding["numbers"]["limiter"] == "LDS"


def test_scan_logs_depth_and_file_caps_follow_path_order(tmp_path):
    """Files at depth <= max_depth (a file directly under the folder is depth 1), the first
    max_files of them in path order; the tree below max_depth is never walked."""
    line = (DATA / "logs" / "compute.txt").read_text().splitlines()[0]
    made = []
    for rel in ("a.log", "b/a.log", "b/c/d.log", "b/c/e/f.log", "b/c/e/g/h.log", "z.txt", "b.out", "b/x.csv"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line + "\n")
        made.append(path)

    def hits(**kw):
        return [Path(h["path"]).relative_to(tmp_path).as_posix() for h in scan_logs(tmp_path, **kw)]

    # the reference: every log-suffix file at depth <= max_depth, sorted as paths
    def reference(max_depth, max_files):
        shallow = [p for p in sorted(made) if len(p.relative_to(tmp_path).parts) <= max_depth and p.suffix != ".csv"]
        return [p.relative_to(tmp_path).as_posix() for p in shallow[:max_files]]

    assert hits() == reference(3, 200) == ["a.log", "b/a.log", "b/c/d.log", "b.out", "z.txt"]
    assert hits(max_depth=1) == reference(1, 200)
    assert hits(max_depth=5) == reference(5, 200)
    assert hits(max_files=2) == reference(3, 2)
