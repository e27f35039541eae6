"""The deterministic campaign: case ``i`` of loader ``L`` under master seed ``S`` always
builds the same input (``random.Random(f"{S}:{L}:{i}")``), so any finding is replayed with
``python bench/fuzz_run.py --loader L --case i --seed S -v``."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from fuzz.mutate import mutate
from fuzz.oracle import HARD, Violation, baseline_good, run_case
from fuzz.seeds import all_seeds

HUGE = 5 * 1024 * 1024
_GOOD: dict[tuple[str, str], set[str]] = {}


@dataclass
class CaseResult:
    loader: str
    index: int
    seed_name: str
    target: str
    mutation: str
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def hard(self) -> list[Violation]:
        return [v for v in self.violations if v.kind in HARD]


def build_case(loader: str, index: int, master_seed: int = 0):
    """(seed, target name, mutated files, description) of one case."""
    rng = random.Random(f"{master_seed}:{loader}:{index}")
    seeds = all_seeds()[loader]
    seed = seeds[index % len(seeds)]
    target = rng.choice(seed.mutable())
    corpus = [data for s in seeds for data in s.files.values()]
    data, desc = mutate(rng, target, seed.files[target], corpus)
    files = dict(seed.files)
    files[target] = data
    return seed, target, files, desc


def run_one(loader: str, index: int, master_seed: int = 0, summary: bool = True) -> CaseResult:
    seed, target, files, desc = build_case(loader, index, master_seed)
    key = (loader, seed.name)
    if key not in _GOOD:
        _GOOD[key] = baseline_good(seed.files)
    # Inputs over HUGE are loaded but not summarised (as in the recorded campaign, when the
    # summary of a 10 MB kernel name took ~20 s; names.py is linear-time since, see
    # tests/test_fuzz_regressions.py::test_summary_of_10mb_kernel_name_is_fast).
    summary = summary and max(len(d) for d in files.values()) < HUGE
    t0 = time.perf_counter()
    violations, _ = run_case(files, {target}, _GOOD[key], summary=summary)
    return CaseResult(loader, index, seed.name, target, desc, violations, time.perf_counter() - t0)
