"""`tuiprof` with no path opens the bundled sample; an installed wheel regenerates it identically."""

import filecmp
from pathlib import Path

from tui_prof import samples

REPO = Path(__file__).resolve().parents[1]


def test_checkout_sample_is_used_when_present():
    assert samples.sample_path() == REPO / "sample_traces" / samples.DEFAULT_SAMPLE


def test_regenerated_samples_equal_the_bundled_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(samples, "__file__", str(tmp_path / "site-packages" / "tui_prof" / "samples.py"))
    for name in samples.SAMPLES:
        generated = samples.sample_path(name)
        assert generated == tmp_path / "samples" / name
        bundled = REPO / "sample_traces" / name / "synthhost"
        files = sorted(p.name for p in bundled.iterdir())
        assert files == sorted(p.name for p in (generated / "synthhost").iterdir())
        match, mismatch, errors = filecmp.cmpfiles(bundled, generated / "synthhost", files, shallow=False)
        assert mismatch == [] and errors == []


def test_tuiprof_without_arguments_opens_the_sample(monkeypatch):
    from tui_prof import cli

    seen = []
    monkeypatch.setattr(cli, "cmd_open", lambda args: seen.append(args.path) or 0)
    assert cli.main([]) == 0
    assert seen == [None]  # cmd_open resolves None to samples.sample_path()


def test_sample_option_opens_the_gfx1151_sample(monkeypatch):
    from tui_prof import cli

    seen = []
    monkeypatch.setattr(samples, "sample_path", lambda name=samples.DEFAULT_SAMPLE: seen.append(name) or REPO)
    monkeypatch.setattr("tui_prof.tui.app.TuiProfApp.run", lambda self, **kw: None)
    assert cli.main(["--sample", "gfx1151"]) == 0
    assert cli.main(["open", "--sample", "gfx1151_wmma"]) == 0
    assert seen == ["gfx1151_wmma", "gfx1151_wmma"]
    assert cli.main(["open", "--sample", "gfx1151", str(REPO)]) == 2  # a path or a sample, not both


def test_help_lists_the_samples():
    from tui_prof import cli

    text = cli.build_parser().format_help()
    for alias, name in samples.SAMPLE_ALIASES.items():
        assert alias in text and name in " ".join(text.split())


def test_gfx1151_sample_is_a_wmma_run_without_counters():
    """Kernel and HIP API traces of a gfx1151 agent, no counters; the generator's answers."""
    from tui_prof.loaders import load_path
    from tui_prof.synth import SynthSpec, build

    args, _ = samples.SAMPLES["gfx1151_wmma"]
    synth = build(SynthSpec(**args))
    run = load_path(REPO / "sample_traces" / "gfx1151_wmma", use_cache=False).runs[0]
    gpu = [a for a in run.agents if a.type == "GPU"]
    assert [(a.arch, a.product, a.cu_count, a.wave_size) for a in gpu] == [("gfx1151", "AMD Radeon 8060S Graphics", 40, 32)]
    assert len(run.kernels) == synth.expected.dispatches == 200
    assert len(run.counters) == 0 and len(run.copies) == 0
    names = run.kernels["name"].astype(str)
    assert (names == synth.expected.gemm_name).sum() == 50 and "WMMA" in synth.expected.gemm_name
    assert int((run.kernels["end"] - run.kernels["start"]).sum()) == synth.expected.kernel_total_ns
