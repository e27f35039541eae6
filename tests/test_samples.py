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
