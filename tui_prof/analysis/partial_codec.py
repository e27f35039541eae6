"""Per-rank partials as JSON (the partial cache of issue 36): exact, and never executable.

A cached partial is read back by the driver of a later ``--cluster`` run, so its format
carries data only: JSON objects, lists, strings and numbers, with a few tagged objects for
what JSON has no word for. Decoding builds only the dataclasses reachable from
:class:`~tui_prof.analysis.partials.RankPartial`'s field types (an allow-list derived from the
type hints, so a field added to a partial is covered without a change here) and numpy arrays
of a few plain dtypes; any other tag, class or dtype is an error (the entry is a miss).
Nothing is ever imported or called by name from the data (no pickle).

Tags: ``{"__t__": [...]}`` a tuple; ``{"__d__": [[key, value], ...]}`` a dict whose keys are
not all plain strings; ``{"__a__": dtype, "b": base64}`` a numpy array of int64, float64 or
bool (its little-endian bytes), ``{"__a__": "object", "v": [...]}`` one of encoded values; ``{"__n__": dtype, "v": x}`` a numpy scalar;
``{"__f__": "nan" | "inf" | "-inf"}`` a float JSON cannot hold; ``{"__r__": [name, ...],
"v": [[value, ...], ...]}`` a list of records with the same keys (``"p"``: the first items of
(item, record) pairs); ``{"__df__": rows, "cols": [[name, dtype, values], ...]}`` a table
on a 0..rows-1 index whose columns are int64, float64, bool (as arrays), str or object; ``{"__c__": name, "v":
{field: value}}`` one of the allowed dataclasses. Floats are written by ``repr`` and read
back to the same double, integers of any size exactly, so a merge of decoded partials equals
the merge of the originals.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import typing
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.partials import PARTIAL_SCHEMA, RankPartial
from tui_prof.guard import jsonout

ARRAY_DTYPES = ("int64", "float64", "bool", "object")
SCALAR_DTYPES = ("int64", "int32", "float64", "float32", "bool")
_WIRE = {"int64": "<i8", "float64": "<f8", "bool": "|b1"}  # an array's bytes as written
_TAGS = ("__t__", "__d__", "__a__", "__n__", "__f__", "__c__", "__r__", "__df__")
FRAME_DTYPES = ("int64", "float64", "bool", "object", "str")  # a table's column dtypes (pandas' names)
_TAG_SET = frozenset(_TAGS)
_PLAIN = frozenset({str, int, float, bool, type(None)})  # JSON scalars: decoded as they are


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
        return _encode_rows(value) or [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"__t__": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _TAGS for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__d__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, pd.DataFrame):
        return _encode_frame(value)
    if isinstance(value, np.generic) and value.dtype.name in SCALAR_DTYPES:
        return {"__n__": value.dtype.name, "v": encode(value.item())}
    if dataclasses.is_dataclass(value) and ALLOWED.get(type(value).__name__) is type(value):
        return {"__c__": type(value).__name__, "v": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    raise TypeError(f"a partial holds no {type(value).__name__}")


def _encode_rows(value: list) -> dict[str, Any] | None:
    """A list of records (dicts of the same plain-string keys), or of (number, record) pairs
    as the listed gaps are, by columns' names once and one list of values per item; None
    for any other list."""
    if len(value) < 2:
        return None
    pairs = all(type(v) is tuple and len(v) == 2 and type(v[1]) is dict for v in value)
    rows = [v[1] for v in value] if pairs else value
    first = rows[0]
    if type(first) is not dict or not all(type(k) is str and k not in _TAGS for k in first):
        return None
    keys = list(first)
    if not all(type(r) is dict and list(r) == keys for r in rows):
        return None
    values = [[encode(x) for x in r.values()] for r in rows]
    if pairs:
        return {"__r__": keys, "v": values, "p": [encode(v[0]) for v in value]}
    return {"__r__": keys, "v": values}


def _encode_frame(value: pd.DataFrame) -> dict[str, Any]:
    """A table of a few plain column dtypes on a 0..n-1 index (the partials' small tables:
    statistics, steps, modules)."""
    index = value.index
    if not (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1):
        raise TypeError("a partial holds no table with another index")
    cols = []
    for i in range(value.shape[1]):
        col = value.iloc[:, i]
        dtype = str(col.dtype)
        if dtype not in FRAME_DTYPES:
            raise TypeError(f"a partial holds no {dtype} column")
        data = _encode_array(col.to_numpy()) if dtype in _WIRE else [encode(v) for v in col.tolist()]
        cols.append([encode(value.columns[i]), dtype, data])
    return {"__df__": len(value), "cols": cols}


def _encode_array(value: np.ndarray) -> dict[str, Any]:
    if value.ndim != 1 or value.dtype.name not in ARRAY_DTYPES:
        raise TypeError(f"a partial holds no {value.ndim}-d {value.dtype} array")
    if value.dtype == object:
        return {"__a__": "object", "v": [encode(v) for v in value]}
    # the little-endian bytes in base64: exact, and read back without a value-by-value parse
    return {"__a__": value.dtype.name, "b": base64.b64encode(value.astype(_WIRE[value.dtype.name], copy=False).tobytes()).decode("ascii")}


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote; :class:`PartialFormatError` for anything else."""
    kind = type(data)
    if kind in _PLAIN:
        return data
    if kind is list:
        return [v if type(v) in _PLAIN else decode(v) for v in data]
    if kind is not dict:
        raise PartialFormatError(f"unexpected {kind.__name__}")
    if _TAG_SET.isdisjoint(data):
        return {k: v if type(v) in _PLAIN else decode(v) for k, v in data.items()}
    tag = next(k for k in _TAGS if k in data)
    body = data[tag]
    if tag == "__df__":
        return _decode_frame(body, data.get("cols"))
    if tag == "__r__":
        return _decode_rows(body, data.get("v"), data.get("p"))
    if tag == "__t__" and isinstance(body, list):
        return tuple(decode(v) for v in body)
    if tag == "__d__" and isinstance(body, list) and all(isinstance(kv, list) and len(kv) == 2 for kv in body):
        return {_hashable(decode(k)): decode(v) for k, v in body}
    if tag == "__f__" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "__a__" and body == "object" and isinstance(data.get("v"), list):
        return _decode_objects(data["v"])
    if tag == "__a__" and body in _WIRE and isinstance(data.get("b"), str):
        return _decode_array(body, data["b"])
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


def _decode_rows(keys: Any, values: Any, firsts: Any) -> list:
    if not (isinstance(keys, list) and all(type(k) is str for k in keys) and isinstance(values, list)):
        raise PartialFormatError("records without names")
    if not all(type(row) is list and len(row) == len(keys) for row in values):
        raise PartialFormatError("a record of other fields")
    rows = [dict(zip(keys, [x if type(x) in _PLAIN else decode(x) for x in row], strict=True)) for row in values]
    if firsts is None:
        return rows
    if not (isinstance(firsts, list) and len(firsts) == len(rows)):
        raise PartialFormatError("pairs without their first items")
    return [(decode(a), row) for a, row in zip(firsts, rows, strict=True)]


def _decode_frame(rows: Any, cols: Any) -> pd.DataFrame:
    if type(rows) is not int or not isinstance(cols, list) or not all(isinstance(c, list) and len(c) == 3 and c[1] in FRAME_DTYPES for c in cols):
        raise PartialFormatError("a table of other columns")
    names, arrays = [], []
    for name, dtype, data in cols:
        if dtype in _WIRE:
            values = decode(data)
            if not isinstance(values, np.ndarray) or str(values.dtype) != dtype:
                raise PartialFormatError(f"a {dtype} column of other values")
        elif isinstance(data, list):
            items = [decode(v) for v in data]
            values = _decode_objects(data) if dtype == "object" else pd.array(items, dtype=dtype)
        else:
            raise PartialFormatError("a column without values")
        if len(values) != rows:
            raise PartialFormatError("a column of another length")
        names.append(_hashable(decode(name)))
        arrays.append(values)
    frame = pd.DataFrame(dict(enumerate(arrays))) if arrays else pd.DataFrame(index=pd.RangeIndex(rows))
    frame.columns = pd.Index(names) if names else frame.columns
    return frame


def _decode_objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [decode(v) for v in values]
    return out


def _decode_array(dtype: str, text: str) -> np.ndarray:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        wire = np.frombuffer(raw, dtype=_WIRE[dtype])
    except (ValueError, UnicodeEncodeError) as err:  # not base64, or not a whole number of items
        raise PartialFormatError(f"a {dtype} array that is not one: {err}") from None
    if dtype == "bool" and (wire.view(np.uint8) > 1).any():
        raise PartialFormatError("a bool array of other bytes")
    return wire.astype(dtype)  # a native, writable copy


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
CODEC_VERSION = 4  # raised when this JSON form changes: older entries are not looked up


def partial_settings(rules: CategoryRules, threshold_ns: int | None, max_gaps: int | None) -> str:
    """What a rank's partials depend on besides its files and tuiprof's version: the schema,
    the category rules, the gaps' threshold and how many are listed (a cache key part)."""
    rule_text = [[category, pattern.pattern, pattern.flags] for category, pattern in rules.rules]
    return jsonout.dumps([PARTIAL_SCHEMA, CODEC_VERSION, rules.source, rule_text, threshold_ns, max_gaps], ensure_ascii=True)
