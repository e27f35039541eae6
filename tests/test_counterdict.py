"""The counter dictionary's data files (issue 34): every file passes the schema, the data
are consistent (each metric's counters exist and have a per-pass limit, ``needs`` name
metrics, defects name counters the arch has), and a broken file is caught."""

from importlib import resources

import pytest
import tomllib

from tui_prof.analysis import counterdict
from tui_prof.analysis.counterdict import UnknownArch, load, normalise_arch, validate

FILES = sorted(e.name[:-5] for e in resources.files("tui_prof.analysis.counterdict").iterdir() if e.name.endswith(".toml"))
ARCHS = [f for f in FILES if not f.startswith("_")]


def test_the_issue_s_architectures_are_all_there():
    assert {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "sm_80", "sm_90"} <= set(ARCHS)
    assert counterdict.known_archs() == ARCHS


@pytest.mark.parametrize("stem", FILES)
def test_every_data_file_passes_the_schema(stem):
    raw = tomllib.loads(resources.files("tui_prof.analysis.counterdict").joinpath(f"{stem}.toml").read_text(encoding="utf-8"))
    assert validate(stem, raw) == []


@pytest.mark.parametrize("arch", ARCHS)
def test_the_data_are_consistent(arch):
    d = load(arch)
    for m in d.metrics.values():
        for dep in m.needs:
            assert dep in d.metrics, f"{arch} {m.key} needs unknown metric {dep}"
        assert m.counters or m.needs or d.vendor == "nvidia", f"{arch} {m.key} reads nothing"
        for c in m.counters:
            assert c in d.counters, f"{arch} {m.key} reads {c}, which has no dictionary entry"
        if d.vendor == "nvidia":
            assert m.ncu, f"{arch} {m.key} has no ncu name"
    for c in d.counters.values():
        assert c.block in d.limits, f"{arch} {c.name}: block {c.block} has no per-pass limit"
    for defect in d.defects:
        assert defect.issue and defect.text
        for c in defect.counters:
            assert c in d.counters, f"{arch}: defect names {c}, which the arch does not have"
        for b in defect.blocks:
            assert b in d.limits
    for name in d.absent:
        assert name not in d.metrics and name not in d.counters, f"{arch}: {name} is both absent and present"


def test_known_defects_carry_their_public_issues():
    gfx1151 = load("gfx1151")
    sq = [d for d in gfx1151.defects if "SQ_WAVES" in d.counters]
    assert sq and "rocm-systems#3828" in sq[0].issue
    tcp = [d for d in gfx1151.defects if "TCP" in d.blocks]
    assert tcp and "10041" in tcp[0].issue and gfx1151.limits["TCP"] == 1
    abort = [d for d in gfx1151.defects if d.kind == "abort"]
    assert abort and abort[0].applies("7.2.0") is True and abort[0].applies("7.2.1") is False and abort[0].applies(None) is None


def test_rocprof_compute_names_are_its_own():
    d = load("gfx942")
    # rocprof-compute's "VALU Utilization" is the busy share; its "VALU Active Threads" the active lanes
    assert d.metrics["valu_utilization"].rpc == "VALU Utilization" and d.metrics["valu_utilization"].sdk == "VALUBusy"
    assert d.metrics["valu_active_threads"].rpc == "VALU Active Threads" and d.metrics["valu_active_threads"].sdk == "VALUUtilization"


@pytest.mark.parametrize(
    ("given", "stem"),
    [
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("GFX1151", "gfx1151"),
        ("9.0", "sm_90"),
        ("sm90", "sm_90"),
        ("sm_90a", "sm_90"),
        ("8.0", "sm_80"),
        ("gfx94x", "gfx942"),
        ("gfx940", "gfx942"),
    ],
)
def test_arch_names_normalise(given, stem):
    assert normalise_arch(given) == stem
    assert load(given).arch == stem


@pytest.mark.parametrize("arch", ["gfx9999", "", "_cdna", "../gfx942", "gfx942\x1b[31m"])
def test_unknown_arch_is_an_error(arch):
    with pytest.raises(UnknownArch):
        load(arch)


def test_a_broken_file_is_caught():
    raw = {
        "schema": 1,
        "arch": "gfx1",
        "vendor": "amd",
        "family": "X",
        "limits_source": "s",
        "limits": {"SQ": 0},
        "bogus": 1,
        "counters": {"sq_lower": {"meaning": "m"}, "SQ_X": {"meaning": "", "colour": 1}},
        "metrics": {"m": {"counters": "SQ_X", "bad_below": "low"}},
        "defects": [{"kind": "bad", "text": "", "issue": "i"}],
    }
    errors = "\n".join(validate("gfx2", raw))
    for expected in (
        "arch must equal the file name",
        "limits.SQ must be a positive integer",
        "unknown top-level key 'bogus'",
        "'sq_lower' is not an upper-case",
        "counters.SQ_X: unknown key 'colour'",
        "counters.SQ_X: meaning is required",
        "metrics.m.counters must be a list",
        "metrics.m.bad_below: must be a number",
        "kind must be one of",
        "text is required",
        "needs counters, blocks or scope",
    ):
        assert expected in errors


def test_docs_metric_name_table_is_the_dictionary_s():
    from pathlib import Path

    from tui_prof.render.counterplan import metric_names_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "counters.md").read_text(encoding="utf-8")
    table = doc.split("<!-- metric-names:begin -->\n", 1)[1].split("<!-- metric-names:end -->", 1)[0]
    assert table == metric_names_markdown()
