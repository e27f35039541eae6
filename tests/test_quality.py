"""Lint, format, types and layer contracts, run as part of the test suite so the README's
one test command (and so CI) enforces them. Configuration: pyproject.toml."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """The tool installed beside this interpreter (the test extras), else on PATH."""
    found = BIN / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.fail(f"{name} is not installed: python -m pip install '.[test]'")
    return on_path


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def report(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout + proc.stderr)[-6000:]


def test_ruff_lint():
    proc = run(tool("ruff"), "check", "--no-cache", ".")
    assert proc.returncode == 0, report(proc)


def test_ruff_format():
    proc = run(tool("ruff"), "format", "--no-cache", "--check", ".")
    assert proc.returncode == 0, report(proc)


def test_mypy():
    proc = run(tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null")
    assert proc.returncode == 0, report(proc)


def test_import_contracts():
    proc = run(tool("lint-imports"), "--no-cache")
    assert proc.returncode == 0, report(proc)
