"""Deterministic mutation fuzzer for the loaders, shared by the test suite
(``tests/test_fuzz_*.py``, a small fixed-seed slice) and ``bench/fuzz_run.py`` (the long run).

* :mod:`fuzz.seeds` — seed file sets built from the real samples in ``tests/data``;
* :mod:`fuzz.mutate` — seeded mutations (bytes, lines/CSV columns, JSON trees, SQLite);
* :mod:`fuzz.oracle` — load one mutated run directory through ``load_path`` and check
  the contract (no exception, one-line issue naming the file, siblings unharmed,
  nothing written, schema kept, summary builds).
"""
