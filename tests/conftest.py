"""Shared test set-up: the columnar cache goes to a temporary folder, never the user's."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Every test writes cache entries under a session temp folder (tests that check the
    cache set their own ``TUIPROF_CACHE_DIR`` with monkeypatch, which takes precedence)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TUIPROF_CACHE_DIR", str(tmp_path_factory.mktemp("tuiprof-cache")))
    yield
    mp.undo()
