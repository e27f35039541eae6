"""Fixed-seed slice of the mutation-fuzz campaign (issue 7) that runs in CI: the first
cases of ``bench/fuzz_run.py`` for every loader. Each case loads a seed run directory
(real sample files) with one file mutated, read-only and under a path with a space and
non-ASCII characters, and checks the contract in ``tests/fuzz/oracle.py``: no exception,
a one-line issue naming the file, good siblings unharmed, nothing written, schema kept,
the summary still builds. Replay a failure with
``python bench/fuzz_run.py --loader L --case I -v``."""

from __future__ import annotations

import pytest
from fuzz.campaign import build_case, run_one
from fuzz.oracle import baseline_good
from fuzz.seeds import LOADERS, all_seeds

CASES_PER_LOADER = 14


@pytest.mark.parametrize("loader", LOADERS)
def test_seeds_load_cleanly(loader):
    """The unmutated seeds load with every file contributing (else 'sibling' checks are void)."""
    for seed in all_seeds()[loader]:
        good = baseline_good(seed.files)
        assert good, f"{loader} seed {seed.name}: nothing loaded"


@pytest.mark.parametrize("loader", LOADERS)
def test_fixed_seed_slice(loader):
    failures = []
    for index in range(CASES_PER_LOADER):
        result = run_one(loader, index, master_seed=0)
        if result.hard:
            failures.append(f"case {index} ({result.target}: {result.mutation}): " + "; ".join(map(str, result.hard)))
    assert not failures, "\n".join(failures)


def test_cases_are_deterministic():
    for loader in LOADERS:
        a = build_case(loader, 3, 7)
        b = build_case(loader, 3, 7)
        assert a[1] == b[1] and a[2] == b[2] and a[3] == b[3]
