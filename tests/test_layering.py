"""The pure-data layers (model, loaders, analysis) never import textual or rich."""

import ast
import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "tui_prof"
PURE_LAYERS = ("model", "loaders", "analysis")


def imported_modules(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_pure_layers_do_not_import_textual_or_rich():
    offenders = []
    for layer in PURE_LAYERS:
        for path in (PACKAGE / layer).rglob("*.py"):
            bad = imported_modules(path) & {"textual", "rich"}
            if bad:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {sorted(bad)}")
    assert offenders == []


def test_loading_and_analysis_leave_textual_and_rich_unimported():
    code = (
        "import sys, tui_prof.loaders.detect, tui_prof.analysis.summary, tui_prof.model;"
        "import tui_prof.loaders as L; L.loader_modules();"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_help_does_not_import_pandas_or_textual():
    code = (
        "import sys; from tui_prof import cli; cli.build_parser().format_help();"
        "print(sorted(m for m in ('pandas', 'numpy', 'textual', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_pane_contract_covers_every_pane_module_and_the_registry_every_pane():
    """The import-linter contract "Panes are independent of each other" covers every module
    of tui_prof/tui/panes (a wildcard: a new pane needs no line there), and those modules
    are exactly the ones defining the panes tui_prof.tui.registry.PANES lists (a pane module
    nobody registers is dead)."""
    import tomllib

    from tui_prof.tui.pane import Pane
    from tui_prof.tui.registry import PANES

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "independence" and "Panes" in c["name"])
    modules = {f"tui_prof.tui.panes.{p.stem}" for p in (PACKAGE / "tui" / "panes").glob("*.py") if p.stem != "__init__"}
    assert contract["modules"] == ["tui_prof.tui.panes.*"]
    assert {cls.__module__ for cls in PANES} == modules
    assert all(issubclass(cls, Pane) and cls.TAB and cls.KEY and cls.FOCUS for cls in PANES)
    assert len({cls.TAB for cls in PANES}) == len({cls.KEY for cls in PANES}) == len(PANES)
