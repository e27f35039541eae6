"""Per-rank partials as JSON (the partial cache of issue 36): exact, and never executable.

A cached partial is read back by the driver of a later ``--cluster`` run, so its format
carries data only: JSON objects, lists, strings and numbers, with a few tagged objects for
what JSON has no word for. Decoding builds only the dataclasses reachable from
:class:`~tui_prof.analysis.partials.RankPartial`'s field types (an allow-list derived from the
type hints, so a field added to a partial is covered without a change here) and numpy arrays
of a few plain dtypes; any other tag, class or dtype is an error (the entry is a miss).
Nothing is ever imported or called by name from the data (no pickle).

Tags: ``{"__t__": [...]}`` a tuple; ``{"__d__": [[key, value], ...]}`` a dict whose keys are
not all plain strings; ``{"__a__": dtype, "v": [...]}`` a numpy array (int64, float64,
bool, or object of encoded values); ``{"__n__": dtype, "v": x}`` a numpy scalar;
``{"__f__": "nan" | "inf" | "-inf"}`` a float JSON cannot hold; ``{"__c__": name, "v":
{field: value}}`` one of the allowed dataclasses. Floats are written by ``repr`` and read
back to the same double, integers of any size exactly, so a merge of decoded partials equals
the merge of the originals.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any

import numpy as np

from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.partials import PARTIAL_SCHEMA, RankPartial

ARRAY_DTYPES = ("int64", "float64", "bool", "object")
SCALAR_DTYPES = ("int64", "int32", "float64", "float32", "bool")
_TAGS = ("__t__", "__d__", "__a__", "__n__", "__f__", "__c__")


class PartialFormatError(ValueError):
    """Data that is not a partial this version writes (a miss for the cache)."""


def _dataclasses_of(root: type) -> dict[str, type]:
    """Every dataclass reachable from ``root``'s field type hints, by class name."""
    found: dict[str, type] = {}
    todo: list[Any] = [root]
    while todo:
        hint = todo.pop()
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if found.get(hint.__name__) is hint:
                continue
            if hint.__name__ in found:
                raise TypeError(f"two dataclasses named {hint.__name__} in a partial")
            found[hint.__name__] = hint
            todo.extend(typing.get_type_hints(hint).values())
        else:
            todo.extend(typing.get_args(hint))
    return found


ALLOWED = _dataclasses_of(RankPartial)


def encode(value: Any) -> Any:
    """``value`` (a partial or any part of one) as JSON-ready data; TypeError for a type a
    partial does not hold."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__f__": repr(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"__t__": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _TAGS for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__d__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, np.generic) and value.dtype.name in SCALAR_DTYPES:
        return {"__n__": value.dtype.name, "v": encode(value.item())}
    if dataclasses.is_dataclass(value) and ALLOWED.get(type(value).__name__) is type(value):
        return {"__c__": type(value).__name__, "v": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    raise TypeError(f"a partial holds no {type(value).__name__}")


def _encode_array(value: np.ndarray) -> dict[str, Any]:
    if value.ndim != 1 or value.dtype.name not in ARRAY_DTYPES:
        raise TypeError(f"a partial holds no {value.ndim}-d {value.dtype} array")
    if value.dtype == object:
        return {"__a__": "object", "v": [encode(v) for v in value]}
    return {"__a__": value.dtype.name, "v": [encode(v) for v in value.tolist()]}


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote; :class:`PartialFormatError` for anything else."""
    if data is None or isinstance(data, (bool, int, str, float)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        raise PartialFormatError(f"unexpected {type(data).__name__}")
    tag = next((k for k in _TAGS if k in data), None)
    if tag is None:
        return {k: decode(v) for k, v in data.items()}
    body = data[tag]
    if tag == "__t__" and isinstance(body, list):
        return tuple(decode(v) for v in body)
    if tag == "__d__" and isinstance(body, list) and all(isinstance(kv, list) and len(kv) == 2 for kv in body):
        return {_hashable(decode(k)): decode(v) for k, v in body}
    if tag == "__f__" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "__a__" and body in ARRAY_DTYPES and isinstance(data.get("v"), list):
        return _decode_array(body, data["v"])
    if tag == "__n__" and body in SCALAR_DTYPES:
        return np.dtype(body).type(decode(data.get("v")))
    if tag == "__c__" and isinstance(body, str) and body in ALLOWED and isinstance(data.get("v"), dict):
        return _decode_dataclass(ALLOWED[body], data["v"])
    raise PartialFormatError(f"unexpected {tag} object")


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        raise PartialFormatError("a dict key that cannot be one") from None
    return key


def _decode_array(dtype: str, values: list) -> np.ndarray:
    items = [decode(v) for v in values]
    if dtype == "object":
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    if not all(isinstance(v, (int, float)) for v in items):  # bool is an int
        raise PartialFormatError(f"a {dtype} array of other values")
    return np.array(items, dtype=dtype)


def _decode_dataclass(cls: type, fields: dict[str, Any]) -> Any:
    known = {f.name: f for f in dataclasses.fields(cls)}
    if set(fields) != set(known):
        raise PartialFormatError(f"{cls.__name__} with other fields")
    values = {name: decode(v) for name, v in fields.items()}
    obj = cls(**{name: v for name, v in values.items() if known[name].init})
    for name, v in values.items():
        if not known[name].init:
            object.__setattr__(obj, name, v)
    return obj


def partials_doc(partials: list[RankPartial], errors: list[str]) -> dict[str, Any]:
    """One rank's partials and its load's error lines, as JSON-ready data."""
    return {"schema": PARTIAL_SCHEMA, "partials": [encode(p) for p in partials], "errors": list(errors)}


def partials_of_doc(doc: Any) -> tuple[list[RankPartial], list[str]]:
    """(partials, error lines) of :func:`partials_doc`'s data; :class:`PartialFormatError`
    when it is not that."""
    if not isinstance(doc, dict) or doc.get("schema") != PARTIAL_SCHEMA:
        raise PartialFormatError("not a partial of this schema")
    partials = [decode(p) for p in doc.get("partials") or []]
    errors = doc.get("errors")
    if not all(isinstance(p, RankPartial) and p.schema == PARTIAL_SCHEMA for p in partials):
        raise PartialFormatError("not a list of partials")
    if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
        raise PartialFormatError("errors are not lines")
    return partials, errors


PARTIAL_CACHE_KIND = "rank-partials"  # the cache entries of partials (loaders.cache.save_doc)


def partial_settings(rules: CategoryRules, threshold_ns: int | None, max_gaps: int | None) -> str:
    """What a rank's partials depend on besides its files and tuiprof's version: the schema,
    the category rules, the gaps' threshold and how many are listed (a cache key part)."""
    rule_text = [[category, pattern.pattern, pattern.flags] for category, pattern in rules.rules]
    return json.dumps([PARTIAL_SCHEMA, rules.source, rule_text, threshold_ns, max_gaps], ensure_ascii=True)
