"""The help screen's rows come from the classes' BINDINGS: every key any screen, pane or
widget of the TUI declares is in the help (found here by walking every module of
tui_prof.tui, independently of how the app collects them), and a key added to a pane's
module appears without touching the help."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from textual.binding import Binding
from textual.widget import Widget

import tui_prof.tui
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.keys import pretty_keys


def _declaring_classes() -> list[tuple[str, type]]:
    found = []
    for info in pkgutil.walk_packages(tui_prof.tui.__path__, "tui_prof.tui."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and obj.__module__ == info.name and obj.__dict__.get("BINDINGS"):
                found.append((info.name, obj))
    return found


CLASSES = _declaring_classes()


def test_the_walk_finds_the_screens_panes_and_widgets():
    names = {cls.__name__ for _, cls in CLASSES}
    assert {"MainScreen", "RankScreen", "HelpScreen", "BackScreen", "RanksTable", "StepsPane", "QueryInput", "TableView", "Timeline"} <= names


@pytest.mark.parametrize("module,cls", CLASSES, ids=[c.__name__ for _, c in CLASSES])
def test_every_binding_is_in_help(module, cls):
    app = DiffApp if module.startswith("tui_prof.tui.diff") else TuiProfApp
    rows = {(keys, action) for _, keys, action in app.key_rows()}
    for binding in cls.__dict__["BINDINGS"]:
        b = binding if isinstance(binding, Binding) else Binding(*binding)
        assert (pretty_keys(b.key), b.description) in rows, (cls.__name__, b.key)


def test_the_diff_app_lists_the_keys_it_inherits():
    rows = {(keys, action) for _, keys, action in DiffApp.key_rows()}
    assert ("q", "Quit") in rows and ("? f1", "Help") in rows and ("S", "Step diff") in rows


def test_a_new_key_in_a_pane_module_appears_in_help(monkeypatch):
    import tui_prof.tui.panes.hardware as hardware

    class Dial(Widget):
        BINDINGS = [Binding("z", "spin", "Spin the dial")]

    Dial.__module__ = hardware.__name__
    monkeypatch.setattr(hardware, "Dial", Dial, raising=False)
    assert ("hardware", "z", "Spin the dial") in TuiProfApp.key_rows()


def test_the_user_guide_key_table_is_the_help_s():
    """docs/user_guide.md's key table is the help's rows (docs/screens/make_screens.py prints it)."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "user_guide.md").read_text(encoding="utf-8")
    head = "| where | keys | action |\n|---|---|---|\n"
    start = text.index(head) + len(head)
    table = text[start : text.index("\n\n", start)]
    assert table == "\n".join(f"| {w} | `{k}` | {a} |" for w, k, a in TuiProfApp.key_rows())
