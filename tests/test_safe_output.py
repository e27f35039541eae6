"""Names from a trace never reach the terminal or a Markdown ticket as escape sequences,
hidden characters or live Markdown (issue 13): the one sanitiser (tui_prof.render.safe)
and the CLI renderers that use it, on hand-built hostile names and on any string."""

import html
import re
import unicodedata

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.render.safe import md_code, md_fence, md_text, safe_text
from tui_prof.render.summary import summary_markdown, summary_text
from tui_prof.synth import SynthSpec, build

HOSTILE = {
    "title": "k\x1b]0;pwned\x07",
    "clipboard": "k\x1b]52;c;cm0gLXJmIH4=\x07",
    "hyperlink": "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",
    "clear": "k\x1b[2J\x1b[H",
    "c1_csi": "k\x9b31m",
    "bidi": "gemm\u202eclipse",
    "zero_width": "ge\u200bmm\u2060",
    "surrogate": "kern\udcff",
    "line_sep": "a\u2028b\u2029c",
    "del": "a\x7fb",
}


def visible_only(text: str) -> bool:
    """No character a terminal would act on: every one printable, or a plain space/newline
    the renderer put there itself."""
    return all(ch.isprintable() or ch in " \n" or unicodedata.category(ch) == "Zs" for ch in text)


@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_safe_text_shows_every_control_visibly(name):
    out = safe_text(name)
    assert visible_only(out) and "\n" not in out
    assert safe_text(out) == out  # idempotent: a second pass changes nothing


def test_safe_text_spellings():
    assert safe_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert safe_text("\x9b") == "\\x9b"
    assert safe_text("x\u202ey") == "x⟨U+202E⟩y"
    assert safe_text("x\u200by") == "x⟨U+200B⟩y"
    assert safe_text("l1\nl2\tt\r") == "l1\\nl2\\tt\\r"
    assert safe_text("kern\udcff") == "kern⟨U+DCFF⟩"
    plain = "void at::native::kernel<float, 4>(Params) é ü 東京 µs"
    assert safe_text(plain) is plain or safe_text(plain) == plain


def test_markdown_escapes_links_images_html_and_code_fences():
    md = MarkdownIt("commonmark").enable("table")
    for hostile in (
        "[fix](https://evil.example/x)",
        "![img](https://evil.example/i.png)",
        "<img src=x onerror=alert(1)>",
        "<https://evil.example>",
        "*bold* _em_ ~~s~~",
        "&lt;&#x41;",
    ):
        html = md.render(md_text(hostile))
        assert "<a " not in html and "<img" not in html and "<em>" not in html and "<strong>" not in html, html
        html = md.render(md_code(hostile))
        assert "<a " not in html and "<img" not in html
    # a backtick inside the name cannot close its code span
    name = "k`[fix](https://evil.example)`"
    html = md.render(md_code(name))
    assert "<a " not in html and html.count("<code>") == 1
    block = "\n".join(md_fence(["rocprofv3 ``` [x](http://e)"], "sh"))
    assert "<a " not in md.render(block)


def _run_named(name: str) -> RunSet:
    synth = build(SynthSpec(iterations=3, kernels_per_iteration=2))
    kernels = synth.kernels.copy()
    names = kernels["name"].astype(str).to_numpy(dtype=object)  # object: numpy str arrays drop trailing NULs
    names[names == names[0]] = name
    kernels["name"] = pd.Categorical(names)
    meta = RunMeta(formats=["synthetic"], tool="synth", label=name + "/1", hostname=name, pid=1)
    return RunSet(root=name, runs=[Run(meta=meta, agents=synth.agents, kernels=kernels, api=synth.api, copies=synth.copies)])


def _check_reports(name: str) -> None:
    doc = build_summary(_run_named(name), SummaryOptions(top=10, logs=False))
    assert name in {h["name"] for h in doc["hotspots"]}  # the JSON keeps the exact name
    text = summary_text(doc)
    assert visible_only(text), repr(text)
    md = summary_markdown(doc)
    assert visible_only(md), repr(md)
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<a " not in html and "<img" not in html and "<script" not in html.lower()


# the model's Arrow-backed strings cannot hold a lone surrogate (loaders replace them)
MODEL_NAMES = {k: v for k, v in HOSTILE.items() if k != "surrogate"}


@pytest.mark.parametrize(
    "name",
    [*MODEL_NAMES.values(), "k`[fix](https://evil)`![i](x)", "bad[/]kern [link=file:///etc/passwd]x[/link]"],
    ids=[*MODEL_NAMES.keys(), "md_breakout", "rich_markup"],
)
def test_summary_reports_with_hostile_kernel_and_host_names(name):
    _check_reports(name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=40))
def test_any_kernel_name_renders_without_raw_controls(name):
    _check_reports(name)


def _screen_text(app) -> str:
    """Every character of the app's current screen, from its SVG screenshot's text."""
    svg = app.export_screenshot()
    return "\n".join(html.unescape(m.group(1)) for m in re.finditer(r"<text [^>]*>(.*?)</text>", svg))


async def _tui_shows_safely(name: str) -> None:
    from tui_harness import first_screen, press, settle

    from tui_prof.tui.app import TuiProfApp

    app = TuiProfApp(_run_named(name))
    async with app.run_test(size=(120, 30)) as pilot:
        await first_screen(app, pilot)
        await settle(app, pilot)
        for keys in ((), ("4",), ("2",), ("1", "enter")):  # hotspots, findings, timeline, the kernel's dispatches
            await press(app, pilot, *keys)
            shown = _screen_text(app)
            assert visible_only(shown), repr(shown)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=24))
def test_any_kernel_name_shows_in_the_tui_without_raw_controls_or_markup(name):
    import asyncio

    asyncio.run(_tui_shows_safely(name))


@pytest.mark.parametrize(
    "name",
    [*MODEL_NAMES.values(), "bad[/]kern", "[link=file:///etc/passwd]x[/link]", "[@click=app.quit]q"],
    ids=[*MODEL_NAMES.keys(), "close_tag", "link", "action"],
)
def test_hostile_kernel_names_in_the_tui(name):
    import asyncio

    asyncio.run(_tui_shows_safely(name))


def test_timeline_go_to_kernel_notification_shows_a_hostile_name_escaped():
    """Issue 30 reproducer 2: the timeline's ``c`` (go to the selected kernel) notification
    printed the kernel name raw (OSC 0/52/8, CSI 2J reached the terminal)."""
    import asyncio

    from tui_harness import first_screen, press, settle

    from tui_prof.tui.app import TuiProfApp

    name = "".join(MODEL_NAMES[k] for k in ("title", "clipboard", "hyperlink", "clear", "c1_csi", "bidi")) + "[b]x[/b]"

    async def drive() -> list[str]:
        app = TuiProfApp(_run_named(name))
        async with app.run_test(size=(120, 30)) as pilot:
            await first_screen(app, pilot)
            await settle(app, pilot)
            await press(app, pilot, "1", "2", "c", "c")
            return [str(n.message) for n in app._notifications]

    messages = asyncio.run(drive())
    shown = [m for m in messages if "dispatch" in m]
    assert any(m.startswith(safe_text(name)) for m in shown), messages  # the hostile kernel was the one centred
    assert all(visible_only(m) for m in messages), messages
