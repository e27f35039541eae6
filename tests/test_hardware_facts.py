"""Hardware facts right per platform (issue 34's four snags), each on a file:

* gfx1151 (the bundled Strix Halo sample, agent_info.csv as rocprofv3 writes it): the
  capability limits give per-CU figures equal to the agent's (2 SIMDs, 64 KiB LDS) and the
  per-WGP ones under a WGP name; the CPU's clock is its Max_Engine_Clk_Ccompute, never 0;
* an NVIDIA H200 Kineto trace: SMs, warps, shared memory, registers, no AMD-only rows;
* the rocprof-compute analysis database: "VALU Utilization" and "VALU Active Threads" under
  rocprof-compute's own names with the database's values;
* a FETCH_SIZE-only counter pass: a table with FETCH_SIZE and the read bandwidth.
Every expected figure is parsed from the file here, independently of the loaders.
"""

import csv
import gzip
import json
import re
import sqlite3
from pathlib import Path

from rich.console import Console

from tui_prof.analysis.api import SummaryOptions, build_summary
from tui_prof.analysis.capability import capabilities
from tui_prof.analysis.counters import counter_metrics
from tui_prof.loaders import load_path
from tui_prof.tui.panes.counters import counters_renderable
from tui_prof.tui.panes.hardware import agents_renderable, capabilities_renderable

ROOT = Path(__file__).resolve().parents[1]
GFX1151 = ROOT / "sample_traces" / "gfx1151_wmma"
H200 = ROOT / "tests" / "data" / "kineto" / "h200" / "copies.pt.trace.json.gz"
DB = ROOT / "tests" / "data" / "rocprof_compute" / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"
FETCH = ROOT / "tests" / "data" / "counters" / "fetch-size-pass"
DOCS7 = ROOT / "tests" / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7"


def _text(renderable) -> str:
    console = Console(width=400, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


def _rows(text: str) -> dict[str, list[str]]:
    """Table rows 'title │ a │ b' -> {title: [a, b]}."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 1 and cells[0]:
            out[cells[0]] = cells[1:]
    return out


def _agent_rows(path: Path) -> list[dict[str, str]]:
    (name,) = [p for p in path.rglob("*agent_info.csv")]
    with open(name, newline="") as fh:
        return list(csv.DictReader(fh))


def test_gfx1151_per_cu_and_per_wgp_figures_agree_with_the_agent():
    gpu = next(r for r in _agent_rows(GFX1151) if r["Agent_Type"] == "GPU")
    limits = capabilities(gpu["Name"])["limits"]
    assert limits["simds_per_cu"] == int(gpu["Simd_Per_Cu"]) == 2
    assert limits["lds_per_cu_bytes"] == int(gpu["Lds_Size_In_Kb"]) * 1024 == 65536
    assert limits["simds_per_wgp"] == 2 * limits["simds_per_cu"] and limits["lds_per_wgp_bytes"] == 2 * limits["lds_per_cu_bytes"]
    runset = load_path(GFX1151)
    rows = _rows(_text(agents_renderable(runset)))
    assert rows["SIMD/CU"][-1] == "2" and rows["LDS/CU"][-1] == "64.0 KiB"
    pane = _text(capabilities_renderable(build_summary(runset, SummaryOptions(logs=False))))
    assert "simds per cu 2, simds per wgp 4" in pane and "lds per cu bytes 65536, lds per wgp bytes 131072" in pane


def test_cpu_clock_is_known_or_unknown_never_0():
    for folder in (GFX1151, DOCS7):
        cpu = next(r for r in _agent_rows(folder) if r["Agent_Type"] == "CPU")
        assert cpu["Max_Engine_Clk_Fcompute"] == "0"  # what agent_info writes for a CPU
        runset = load_path(folder)
        # the process whose agent_info.csv this is (a folder of loose files may hold others)
        (agent,) = [a for run in runset.runs if run.meta.label.endswith(("4242", "238")) for a in run.agents if a.type == "CPU"]
        assert agent.max_clock_mhz == int(cpu["Max_Engine_Clk_Ccompute"]) > 0
        rows = _rows(_text(agents_renderable(runset)))
        assert cpu["Max_Engine_Clk_Ccompute"] in rows["max MHz"]
        assert all(cell != "0" for cells in rows.values() for cell in cells)


def test_nvidia_agents_in_cuda_words_without_amd_rows():
    props = json.load(gzip.open(H200))["deviceProperties"][0]
    rows = _rows(_text(agents_renderable(load_path(H200))))
    for amd_only in ("SIMD/CU", "waves/SIMD", "XCC", "LDS/CU", "CUs", "arch"):
        assert amd_only not in rows
    assert rows["SMs"] == [str(props["numSms"])]
    assert rows["warp size"] == [str(props["warpSize"])]
    assert rows["max warps/SM"] == [str(props["maxThreadsPerMultiprocessor"] // props["warpSize"])]
    assert rows["registers/SM"] == [str(props["regsPerMultiprocessor"])]
    assert rows["shared memory/SM"] == [f"{props['sharedMemPerMultiprocessor'] / 1024:.1f} KiB"]
    assert rows["compute capability"] == [f"{props['computeMajor']}.{props['computeMinor']}"]


def test_nvidia_hardware_pane_names_the_ncu_command():
    pane = _text(capabilities_renderable(build_summary(load_path(H200), SummaryOptions(logs=False))))
    assert "collect" in pane and "ncu --metrics " in pane and "lts__t_sector_hit_rate.pct" in pane
    assert "rocprofv3" not in pane


def test_rocprof_compute_valu_metrics_under_their_own_names():
    con = sqlite3.connect(DB)
    rows = con.execute(
        "select k.kernel_name, d.name, v.value_name, v.value from compute_kernel_metric_value v "
        "join compute_metric_definition d using (metric_uuid) join compute_kernel k using (kernel_uuid) "
        "where d.name in ('VALU Utilization', 'VALU Active Threads') and v.value_name in ('Avg', 'Pct of Peak')"
    ).fetchall()
    expected = {(k, n, s): v for k, n, s, v in rows}
    (run,) = load_path(DB).runs
    block = counter_metrics(run, "amd")
    seen = 0
    for kernel in block["kernels"]:
        for key, name, stat in (("valu_busy", "VALU Utilization", "Avg"), ("valu_utilization", "VALU Active Threads", "Pct of Peak")):
            m = kernel["metrics"].get(key)
            if m is None:
                continue
            assert m["label"] == name  # rocprof-compute's name, never tuiprof's
            assert m["value"] == expected[(kernel["name"], name, stat)]
            seen += 1
    assert seen >= 2


def test_fetch_size_pass_prints_a_table():
    with open(FETCH / "238_counter_collection.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    (run,) = load_path(FETCH).runs
    block = counter_metrics(run, "amd")
    doc = {"counters": [dict(block, process="p")]}
    for row in rows:
        name = row["Kernel_Name"]
        kib = float(row["Counter_Value"])
        gbs = kib * 1024 / (int(row["End_Timestamp"]) - int(row["Start_Timestamp"]))
        (kernel,) = [k for k in block["kernels"] if k["name"] == name]
        assert kernel["metrics"]["fetch_size"]["value"] == kib
        assert abs(kernel["metrics"]["read_bandwidth"]["value"] - gbs) < 1e-9 * gbs
        text = _text(counters_renderable(doc, name, False))
        assert re.search(rf"Bytes read from memory \(FETCH_SIZE\)\s+│\s+{kib:.4g} KiB", text)
        assert f"{gbs:.4g} GB/s" in text


def test_a_counter_no_formula_reads_is_still_shown(tmp_path):
    src = (FETCH / "238_counter_collection.csv").read_text().replace('"FETCH_SIZE"', '"SQ_INSTS_SALU"')
    (tmp_path / "238_counter_collection.csv").write_text(src)
    (tmp_path / "238_agent_info.csv").write_text((FETCH / "238_agent_info.csv").read_text())
    (run,) = load_path(tmp_path).runs
    block = counter_metrics(run, "amd")
    for kernel in block["kernels"]:
        assert list(kernel["metrics"]) == ["counter:SQ_INSTS_SALU"] and kernel["metrics"]["counter:SQ_INSTS_SALU"]["value"] == 8192.0
    text = _text(counters_renderable({"counters": [dict(block, process="p")]}, block["kernels"][0]["name"], False))
    assert "SQ_INSTS_SALU" in text and "8192 count" in text


def test_a_hostile_counter_name_is_shown_as_text(tmp_path):
    hostile = "[bold red]EVIL[/]\x1b[31m"
    src = (FETCH / "238_counter_collection.csv").read_text().replace('"FETCH_SIZE"', '"' + hostile + '"')
    (tmp_path / "238_counter_collection.csv").write_text(src)
    (tmp_path / "238_agent_info.csv").write_text((FETCH / "238_agent_info.csv").read_text())
    (run,) = load_path(tmp_path).runs
    block = counter_metrics(run, "amd")
    for explain in (False, True):
        text = _text(counters_renderable({"counters": [dict(block, process="p")]}, block["kernels"][0]["name"], explain))
        assert "[bold red]EVIL[/]" in text and "\x1b" not in text


def _plan_rows_of(pane: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in pane.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) == 2 and cells[0]:
            rows.setdefault(cells[0], []).append(cells[1])
    return rows


def test_hardware_pane_plans_what_the_run_could_measure():
    from tui_prof.analysis.api import counter_defaults, counter_plan

    pane = _text(capabilities_renderable(build_summary(load_path(GFX1151), SummaryOptions(logs=False))))
    rows = _plan_rows_of(pane)
    assert rows["measured"] == ["none (no counters collected)"]
    expected = counter_plan("gfx1151", counter_defaults("gfx1151"))
    assert rows["collect"] == [f"rocprofv3 --kernel-trace {line} -- <app>" for line in expected["pmc_lines"]]
    assert any("SQ_WAVES" in d and "rocm-systems#3828" in d for d in rows["defect"])
    assert f"{len(expected['passes'])} rocprofv3 pass(es) on gfx1151" in rows["could measure"][0]


def test_hardware_pane_says_what_a_run_did_measure(tmp_path):
    # the real rocprofv3 7.x counter file (SQ_WAVES per dispatch) on an agent named gfx942
    (tmp_path / "238_counter_collection.csv").write_text((DOCS7 / "counter_collection.csv").read_text())
    (tmp_path / "238_agent_info.csv").write_text((DOCS7 / "238_agent_info.csv").read_text().replace('"gfx900"', '"gfx942"'))
    rows = _plan_rows_of(_text(capabilities_renderable(build_summary(load_path(tmp_path), SummaryOptions(logs=False)))))
    assert rows["measured"] == ["Wavefronts (counters: SQ_WAVES)"]
    assert all("SQ_WAVES" not in c.split("--pmc ")[1] for c in rows["collect"])  # the plan is for the rest
