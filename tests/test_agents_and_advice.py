"""Issue 20 items 2, 11 and 17: identical GPUs collapsed in ``summary`` (text and
``--md``), communication advice for a dominant collective kernel in the platform's words,
and what cannot be measured on gfx1151 with what to do instead (hardware pane, summary).

Expected agent ids and products come from the loaded model's agents; the advice's words
from :mod:`tui_prof.analysis.platform`'s tables; the gfx1151 text from
:func:`tui_prof.analysis.capability.capabilities`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_stats_and_gate import HEADER
from tui_harness import drive, press, text_of

from tui_prof.analysis.capability import capabilities
from tui_prof.analysis.platform import AMD, COLLECTIVE_PHRASES, NVIDIA
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.cli import main
from tui_prof.exits import EXIT_OK
from tui_prof.loaders import load_path
from tui_prof.render.fmt import fmt_ids
from tui_prof.render.summary import gpu_groups
from tui_prof.samples import sample_path
from tui_prof.tui.app import TuiProfApp

ROCPD_8_GPUS = Path(__file__).parent / "data" / "rocpd" / "28_results.db"


def flat(text: str) -> str:
    return " ".join(text.split())


# ---- item 2: identical agents collapsed ------------------------------------------------------


def test_fmt_ids_runs():
    assert fmt_ids([9, 2, 3, 4, 7, 11, 12]) == "2–4, 7, 9, 11–12"
    assert fmt_ids([5]) == "5" and fmt_ids(["a", "b"]) == "a, b"


def test_gpu_groups_keep_different_agents_apart():
    caps = {"arch": "gfx942", "counters": "yes"}
    agents = [
        {"id": 0, "type": "CPU"},
        *({"id": i, "type": "GPU", "arch": "gfx942", "product": "MI300X", "process": "p", "capabilities": caps} for i in (1, 2, 3)),
        {"id": 4, "type": "GPU", "arch": "gfx90a", "product": "MI210", "process": "p", "capabilities": {**caps, "arch": "gfx90a"}},
        {"id": 1, "type": "GPU", "arch": "gfx942", "product": "MI300X", "process": "q", "capabilities": caps},
    ]
    assert [[a["id"] for a in g] for g in gpu_groups(agents)] == [[1, 2, 3], [4], [1]]


def test_summary_text_and_md_collapse_eight_identical_gpus(capsys):
    runset = load_path(ROCPD_8_GPUS, use_cache=False)
    gpus = [a for run in runset.runs for a in run.agents if a.type == "GPU"]
    ids = sorted(a.id for a in gpus)
    assert len(gpus) == 8 and ids == list(range(ids[0], ids[0] + 8)) and len({(a.arch, a.product) for a in gpus}) == 1
    arch, product = gpus[0].arch, gpus[0].product
    span = f"{ids[0]}–{ids[-1]}"
    assert main(["summary", str(ROCPD_8_GPUS), "--no-cache"]) == EXIT_OK
    text = capsys.readouterr().out
    assert f"GPUs: {span}: {arch} {product} ×8\n" in text
    assert text.count("Profiling capability") == 1 and f"Profiling capability: agents {span} {arch} ×8" in text
    assert main(["summary", str(ROCPD_8_GPUS), "--no-cache", "--md"]) == EXIT_OK
    md = capsys.readouterr().out
    assert md.count("## Profiling capability") == 1 and f"## Profiling capability: agents {span} {arch} ×8" in md


# ---- item 11: a dominant collective kernel gets communication advice ------------------------------

COLLECTIVES = ("ncclDevKernel_Generic_1", "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")


@pytest.mark.parametrize("name", COLLECTIVES)
def test_dominant_collective_gets_communication_advice_in_amd_words(tmp_path, name):
    """A stats-only rocprofv3 run (AMD) whose top kernel is a collective at 93.6 %."""
    quoted = name.replace('"', '""')
    (tmp_path / "1_kernel_stats.csv").write_text(HEADER + f'"{quoted}",100,936000,9360.0,93.6,9000,9900,10.0\n"gemm_kernel",100,64000,640.0,6.4,600,700,5.0\n')
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    assert doc["platform"]["vendor"] == AMD
    (f,) = [f for f in doc["findings"] if f["code"] == "dominant-kernel"]
    say = COLLECTIVE_PHRASES[AMD]
    assert f["message"] == f"One kernel takes 93.6% of kernel time: {name[:80]} (a collective: communication)"
    assert f["numbers"] == {"name": name, "percent": 93.6, "category": "communication"}
    assert f["fix"] == (
        "A RCCL collective: its time is communication, which occupancy and counters do not shorten. "
        f"{say['overlap'][0].upper()}{say['overlap'][1:]}; {say['bucketing']}; {say['topology']}; "
        "and check for stragglers: a rank that arrives late makes every other rank wait inside the collective."
    )
    assert "HIP stream" in f["fix"] and "rocm-smi --showtopo" in f["fix"] and "CUDA" not in f["fix"] and "nvidia-smi" not in f["fix"]


def test_dominant_collective_in_nvidia_words_and_compute_kernel_unchanged():
    from tui_prof.analysis.findings import _dominant_kernel

    f, weight = _dominant_kernel({"name": "ncclDevKernel_Generic_1", "percent": 93.6}, NVIDIA)
    assert weight == 93.6 and f["fix"].startswith("A NCCL collective:") and "nvidia-smi topo -m" in f["fix"] and "CUDA stream" in f["fix"]
    assert "rocm" not in f["fix"].lower() and "HIP" not in f["fix"]
    f, _ = _dominant_kernel({"name": "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", "percent": 60.0}, AMD)
    assert f["fix"] == "Optimise this kernel first (counters, occupancy below)." and f["numbers"] == {
        "name": "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32",
        "percent": 60.0,
    }


# ---- item 17: gfx1151, what cannot be measured and what to do instead --------------------------------


def test_gfx1151_says_what_cannot_be_measured_and_what_to_do_instead(capsys):
    caps = capabilities("gfx1151", "")
    instead = caps["instead"]
    assert [i["cannot"].split(":")[0] for i in instead] == ["PC sampling", "hardware counters and thread trace with ROCm 7.2.0", "an MFMA roofline"]
    assert "instead" not in capabilities("gfx942", "")
    path = sample_path("gfx1151_wmma")
    assert main(["summary", str(path), "--no-cache"]) == EXIT_OK
    text = capsys.readouterr().out
    for item in instead:
        assert f"Cannot measure {item['cannot']}. Instead: {item['instead']}." in text

    async def flow(app, pilot):
        await press(app, pilot, "3")
        shown = flat(text_of(app, "#capabilities-body", width=2000))
        for item in instead:
            assert f"cannot measure │ {flat(item['cannot'])}" in shown
            assert f"instead │ {flat(item['instead'])}" in shown
        pane = app.main.query_one("#hardware-pane")
        await press(app, pilot, "G")  # the last rows are reachable at 80×24
        assert pane.scroll_y == pane.max_scroll_y > 0

    drive(TuiProfApp(path, use_cache=False), flow)
