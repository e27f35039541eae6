"""The versioned counter dictionary: per architecture, which hardware counters exist, which
block each belongs to, how many counters of a block one profiling pass can hold, the derived
metrics they feed (rocprof-compute's and rocprofv3's names), thresholds, the nearest Nsight
Compute metric, and known defects with their public issue and the ROCm versions affected.

The data are TOML files beside this module (package data, reviewed like code): ``gfx*.toml``
and ``sm_*.toml`` per architecture; a file's ``inherits`` names a shared ``_*.toml`` whose
``counters``, ``metrics`` and ``absent`` tables it extends or overrides key by key (a metric
entry in the architecture file updates the shared entry's fields). :func:`validate` checks a
file's schema; :func:`load` validates and returns a typed :class:`ArchDict`. Sources of every
fact: docs/counters.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import tomllib

SCHEMA = 1
_PACKAGE = "tui_prof.analysis.counterdict"

COUNTER_KEYS = {"meaning", "ncu", "accumulate", "block", "since"}
METRIC_KEYS = {
    "label",
    "pmc",
    "rpc",
    "sdk",
    "unit",
    "formula",
    "counters",
    "needs",
    "meaning",
    "ncu",
    "bad_below",
    "bad_above",
    "good_above",
    "bad_above_pct_of_peak",
    "bad_below_pct_of_peak",
    "threshold_source",
}
THRESHOLD_KEYS = ("bad_below", "bad_above", "good_above", "bad_above_pct_of_peak", "bad_below_pct_of_peak")
DEFECT_KEYS = {"counters", "blocks", "scope", "kind", "issue", "text", "rocm_from", "rocm_fixed"}
DEFECT_KINDS = {"wrong", "zeros", "abort", "limit", "dropped"}
ARCH_KEYS = {
    "schema",
    "arch",
    "vendor",
    "family",
    "products",
    "inherits",
    "rocprof_compute",
    "limits_source",
    "limits_inferred",
    "limits",
    "block_alias",
    "counters",
    "metrics",
    "absent",
    "defects",
}
SHARED_KEYS = {"schema", "counters", "metrics", "absent"}
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


class UnknownArch(ValueError):
    """An architecture the dictionary has no file for."""


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """'7.2.1' -> (7, 2, 1); '7.2' -> (7, 2, 0); None or unparsable -> None."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(x) for x in m.groups(default="0")) if m else None


@dataclass(frozen=True)
class CounterInfo:
    name: str
    block: str  # the block whose per-pass limit it counts against (after block_alias)
    meaning: str = ""
    ncu: str = ""  # the nearest Nsight Compute metric
    accumulate: bool = False  # an accumulate (SQ_ACCUM_PREV_HIRES-style) counter: a pass of its own
    since: str = ""  # where it was added (a PR), when the ROCm release that carries it is not known


@dataclass(frozen=True)
class MetricInfo:
    key: str
    label: str
    unit: str
    formula: str
    counters: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()  # metrics this one is built from (the planner expands them)
    rpc: str = ""  # rocprof-compute's name of the metric
    sdk: str = ""  # rocprofv3's derived-metric name
    pmc: str = ""  # the name to request on --pmc (rocprofv3 evaluates it from ``counters`` in one pass)
    ncu: str = ""
    meaning: str = ""
    thresholds: dict[str, float] = field(default_factory=dict)
    threshold_source: str = ""

    def threshold_text(self) -> str:
        words = {
            "bad_below": "bad below",
            "bad_above": "bad above",
            "good_above": "good above",
            "bad_above_pct_of_peak": "bad above (% of peak)",
            "bad_below_pct_of_peak": "bad below (% of peak)",
        }
        parts = [f"{words[k]} {v:g}" for k, v in self.thresholds.items()]
        return "; ".join(parts) + (f" {self.threshold_source}" if parts and self.threshold_source else "") if parts else "descriptive"


@dataclass(frozen=True)
class Defect:
    kind: str  # wrong | zeros | abort | limit | dropped
    text: str
    issue: str
    counters: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    scope: str = ""  # "all": every counter of the arch
    rocm_from: str = ""  # first ROCm version affected (inclusive; empty: all known)
    rocm_fixed: str = ""  # first ROCm version without it (empty: not fixed)

    def applies(self, rocm: str | None) -> bool | None:
        """True when ``rocm`` is in the affected range, False when outside, None when the
        version is not given and the range is bounded (it may apply)."""
        lo, hi = version_tuple(self.rocm_from), version_tuple(self.rocm_fixed)
        if lo is None and hi is None:
            return True
        v = version_tuple(rocm)
        if v is None:
            return None
        return (lo is None or v >= lo) and (hi is None or v < hi)

    def versions(self) -> str:
        if self.rocm_from and self.rocm_fixed:
            return f"ROCm {self.rocm_from} up to (not incl.) {self.rocm_fixed}"
        if self.rocm_fixed:
            return f"ROCm before {self.rocm_fixed}"
        if self.rocm_from:
            return f"ROCm {self.rocm_from} and later"
        return "all known versions"

    def touches(self, counter: str, block: str) -> bool:
        return self.scope == "all" or counter in self.counters or block in self.blocks


@dataclass(frozen=True)
class ArchDict:
    arch: str
    vendor: str  # amd | nvidia
    family: str
    products: tuple[str, ...]
    rocprof_compute: bool
    limits: dict[str, int]
    limits_source: str
    block_alias: dict[str, str]
    counters: dict[str, CounterInfo]
    metrics: dict[str, MetricInfo]
    absent: dict[str, str]
    defects: tuple[Defect, ...]
    limits_inferred: tuple[str, ...] = ()  # blocks whose limit no source states: inferred (the plan says so)

    def block_of(self, counter: str) -> str:
        """The block ``counter`` counts against: the dictionary's, else its name's prefix
        (``TCC_HIT_sum`` -> TCC), SQC folded into SQ where the arch says so."""
        info = self.counters.get(counter)
        if info is not None:
            return info.block
        prefix = counter.split("_", 1)[0].upper()
        return self.block_alias.get(prefix, prefix)


def _files() -> dict[str, str]:
    """stem -> TOML text of every data file (a copy of what :func:`_read_files` read once:
    the package's data does not change while tuiprof runs, and every process of a run asks)."""
    return dict(_read_files())


@cache
def _read_files() -> dict[str, str]:
    out = {}
    for entry in resources.files(_PACKAGE).iterdir():
        if entry.name.endswith(".toml"):
            with entry.open("r", encoding="utf-8") as fh:  # tuiprof's own package data, not a run file
                out[entry.name[: -len(".toml")]] = fh.read()
    return out


def known_archs() -> list[str]:
    return sorted(stem for stem in _files() if not stem.startswith("_"))


def _check_number(errors: list[str], where: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.append(f"{where}: must be a number, not {value!r}")


def _validate_counters(errors: list[str], name: str, counters: Any) -> None:
    if not isinstance(counters, dict):
        errors.append(f"{name}: counters must be a table")
        return
    for cname, entry in counters.items():
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*(_sum|_max|_min|_avr)?", cname):
            errors.append(f"{name}: counter name {cname!r} is not an upper-case counter name")
        if not isinstance(entry, dict):
            errors.append(f"{name}: counters.{cname} must be a table")
            continue
        for k in set(entry) - COUNTER_KEYS:
            errors.append(f"{name}: counters.{cname}: unknown key {k!r}")
        if not str(entry.get("meaning", "")).strip():
            errors.append(f"{name}: counters.{cname}: meaning is required")


def _validate_metrics(errors: list[str], name: str, metrics: Any, partial: bool) -> None:
    if not isinstance(metrics, dict):
        errors.append(f"{name}: metrics must be a table")
        return
    for key, entry in metrics.items():
        if not isinstance(entry, dict):
            errors.append(f"{name}: metrics.{key} must be a table")
            continue
        for k in set(entry) - METRIC_KEYS:
            errors.append(f"{name}: metrics.{key}: unknown key {k!r}")
        for k in THRESHOLD_KEYS:
            if k in entry:
                _check_number(errors, f"{name}: metrics.{key}.{k}", entry[k])
        if "pmc" in entry and not (re.fullmatch(r"[A-Z][A-Za-z0-9_]*", str(entry["pmc"])) and entry.get("counters", True)):
            errors.append(f"{name}: metrics.{key}.pmc must be a rocprofv3 name requested for its counters")
        for k in ("counters", "needs"):
            if k in entry and not (isinstance(entry[k], list) and all(isinstance(x, str) for x in entry[k])):
                errors.append(f"{name}: metrics.{key}.{k} must be a list of names")
        if not partial:
            for k in ("label", "unit", "formula"):
                if not str(entry.get(k, "")).strip():
                    errors.append(f"{name}: metrics.{key}: {k} is required")


def _validate_defects(errors: list[str], name: str, defects: Any) -> None:
    if not isinstance(defects, list):
        errors.append(f"{name}: defects must be an array of tables")
        return
    for i, d in enumerate(defects):
        where = f"{name}: defects[{i}]"
        if not isinstance(d, dict):
            errors.append(f"{where} must be a table")
            continue
        for k in set(d) - DEFECT_KEYS:
            errors.append(f"{where}: unknown key {k!r}")
        if d.get("kind") not in DEFECT_KINDS:
            errors.append(f"{where}: kind must be one of {sorted(DEFECT_KINDS)}")
        for k in ("issue", "text"):
            if not str(d.get(k, "")).strip():
                errors.append(f"{where}: {k} is required")
        if not (d.get("counters") or d.get("blocks") or d.get("scope") == "all"):
            errors.append(f"{where}: needs counters, blocks or scope = 'all'")
        for k in ("rocm_from", "rocm_fixed"):
            if k in d and not _VERSION.match(str(d[k])):
                errors.append(f"{where}: {k} must be a version like 7.2.1")


def validate(stem: str, raw: dict[str, Any]) -> list[str]:
    """Schema errors of one data file (``stem`` = its name without .toml); [] when valid."""
    errors: list[str] = []
    shared = stem.startswith("_")
    allowed = SHARED_KEYS if shared else ARCH_KEYS
    for k in set(raw) - allowed:
        errors.append(f"{stem}: unknown top-level key {k!r}")
    if raw.get("schema") != SCHEMA:
        errors.append(f"{stem}: schema must be {SCHEMA}")
    if not shared:
        if raw.get("arch") != stem:
            errors.append(f"{stem}: arch must equal the file name")
        if raw.get("vendor") not in ("amd", "nvidia"):
            errors.append(f"{stem}: vendor must be amd or nvidia")
        for k in ("family", "limits_source"):
            if not str(raw.get(k, "")).strip():
                errors.append(f"{stem}: {k} is required")
        limits = raw.get("limits", {})
        if raw.get("vendor") == "amd" and not limits:
            errors.append(f"{stem}: an AMD arch needs per-block limits")
        for block, n in limits.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                errors.append(f"{stem}: limits.{block} must be a positive integer")
        inferred = raw.get("limits_inferred", [])
        if not isinstance(inferred, list) or any(b not in limits for b in inferred):
            errors.append(f"{stem}: limits_inferred must list blocks of limits")
        for src, dst in raw.get("block_alias", {}).items():
            if dst not in limits:
                errors.append(f"{stem}: block_alias.{src} -> {dst}: no such limit")
    _validate_counters(errors, stem, raw.get("counters", {}))
    _validate_metrics(errors, stem, raw.get("metrics", {}), partial=not shared)
    if not isinstance(raw.get("absent", {}), dict) or not all(isinstance(v, str) and v for v in raw.get("absent", {}).values()):
        errors.append(f"{stem}: absent must map names to reasons")
    if "defects" in raw:
        _validate_defects(errors, stem, raw["defects"])
    return errors


# targets that share a dictionary: MI300 variants (rocprof-compute runs gfx942 on the gfx940
# configs with the same limits), and the family names a HIP Kineto trace gives (gfx94x: HIP
# reports 9.4 without the stepping digit)
ALIASES = {"gfx940": "gfx942", "gfx941": "gfx942", "gfx94x": "gfx942", "gfx95x": "gfx950", "gfx90x": "gfx90a"}


def normalise_arch(arch: str) -> str:
    """'gfx942:sramecc+:xnack-' -> gfx942; 'SM90' / '9.0' / 'sm_90a' -> sm_90; gfx94x -> gfx942."""
    a = (arch or "").strip().lower().split(":")[0]
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d)\.?(\d)a?", a)
    if m:
        return f"sm_{m.group(1)}{m.group(2)}"
    return ALIASES.get(a, a)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) for k, v in base.items()}
    for k, v in over.items():
        out[k] = {**out.get(k, {}), **v}
    return out


def _build(stem: str, raw: dict[str, Any], shared: dict[str, Any]) -> ArchDict:
    alias = dict(raw.get("block_alias", {}))
    counters_raw = _merge(shared.get("counters", {}), raw.get("counters", {}))
    metrics_raw = _merge(shared.get("metrics", {}), raw.get("metrics", {}))
    absent = {**shared.get("absent", {}), **raw.get("absent", {})}
    for name in absent:  # an arch file may give back what the shared file marks absent
        metrics_raw.pop(name, None)

    def block(name: str, entry: dict) -> str:
        b = entry.get("block") or name.split("_", 1)[0]
        return alias.get(b, b)

    counters = {
        n: CounterInfo(n, block(n, e), e.get("meaning", ""), e.get("ncu", ""), bool(e.get("accumulate")), e.get("since", "")) for n, e in counters_raw.items()
    }
    metrics = {
        k: MetricInfo(
            key=k,
            label=e.get("label", k),
            unit=e.get("unit", ""),
            formula=e.get("formula", ""),
            counters=tuple(e.get("counters", ())),
            needs=tuple(e.get("needs", ())),
            rpc=e.get("rpc", ""),
            sdk=e.get("sdk", ""),
            pmc=e.get("pmc", ""),
            ncu=e.get("ncu", ""),
            meaning=e.get("meaning", ""),
            thresholds={t: float(e[t]) for t in THRESHOLD_KEYS if t in e},
            threshold_source=e.get("threshold_source", ""),
        )
        for k, e in metrics_raw.items()
    }
    defects = tuple(
        Defect(
            kind=d["kind"],
            text=d["text"],
            issue=d["issue"],
            counters=tuple(d.get("counters", ())),
            blocks=tuple(d.get("blocks", ())),
            scope=d.get("scope", ""),
            rocm_from=d.get("rocm_from", ""),
            rocm_fixed=d.get("rocm_fixed", ""),
        )
        for d in raw.get("defects", ())
    )
    return ArchDict(
        arch=stem,
        vendor=raw["vendor"],
        family=raw["family"],
        products=tuple(raw.get("products", ())),
        rocprof_compute=bool(raw.get("rocprof_compute")),
        limits=dict(raw.get("limits", {})),
        limits_source=raw["limits_source"],
        limits_inferred=tuple(raw.get("limits_inferred", ())),
        block_alias=alias,
        counters=counters,
        metrics=metrics,
        absent=absent,
        defects=defects,
    )


@cache
def load(arch: str) -> ArchDict:
    """The dictionary of ``arch`` (normalised); :class:`UnknownArch` when there is none,
    ValueError when a data file breaks the schema."""
    stem = normalise_arch(arch)
    files = _files()
    if stem.startswith("_") or stem not in files:
        raise UnknownArch(f"no counter dictionary for {arch!r} (known: {', '.join(known_archs())})")
    raw = tomllib.loads(files[stem])
    errors = validate(stem, raw)
    shared: dict[str, Any] = {}
    if raw.get("inherits"):
        parent = raw["inherits"]
        if parent not in files:
            errors.append(f"{stem}: inherits {parent!r}: no such file")
        else:
            shared = tomllib.loads(files[parent])
            errors.extend(validate(parent, shared))
    if errors:
        raise ValueError("; ".join(errors))
    return _build(stem, raw, shared)
