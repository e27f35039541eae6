"""Kernel-name normalisation and categorisation.

``normalize_name`` turns a demangled kernel name into a short, stable key so the same
kernel compiled with other template arguments, or listed with its argument list or a
clone suffix, groups together::

    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, ...)"
        -> "at::native::vectorized_elementwise_kernel"
    "my_kernel.kd" / "my_kernel [clone .kd]" -> "my_kernel"

Categories come from an ordered list of case-insensitive regular expressions matched
against the name without its parameter list (``rule_text``); the first match wins and a name nothing matches is "other". The
default rules are listed in ``DEFAULT_RULES`` and documented in docs/metrics.md; a user
file (TOML or JSON) can add rules in front of them or replace them.

Both functions work on the distinct names only (category columns store each name once),
so a table of millions of dispatches costs one pass over its few hundred names.

Cost is linear in the name length (one pass per step, no backtracking regex on the name
in ``normalize_name``), and bounded for absurdly long names (a fuzzed or corrupt trace can
hold a 10 MB "name"): a name longer than ``MAX_NAME_CHARS`` (64 Ki characters) is
normalised from its first ``MAX_NAME_CHARS`` characters and its key gets the marker
``"…[+N chars]"`` (N = characters cut off); category rules are matched against the same
first ``MAX_NAME_CHARS`` characters only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import open_regular

RULES_MAX_BYTES = 4 << 20  # a category rules file (TOML/JSON) is a few KiB

# Ordered (category, pattern): the first matching pattern wins. Patterns are matched
# against the name without its parameter list (``rule_text``): an argument type such as
# ``cudnn::reduced_divisor`` or ``cublasTransposeParams`` says nothing about the kernel.
# Order matters: copies and collectives first (their names contain "reduce"/"copy"),
# layout transforms before convolution (cuDNN's format kernels sit in its namespace),
# attention and convolution before GEMM (flash-attention and implicit-GEMM convolutions
# contain "gemm"), GEMM before elementwise (cuBLASLt epilogue names contain "relu", "bias").
# Substring traps are anchored out: "conv" not followed by "ert" (cuDNN's
# ``convert_dq_to_16bits`` is a dtype conversion), "gemm" not preceded by "fb" (FBGEMM's
# embedding kernels), "norm" not followed by "al_" (random normal), "fprop"/"dgrad"/"wgrad"
# and "nvjet" with no letter on either side.
DEFAULT_RULES: tuple[tuple[str, str], ...] = (
    ("copy/fill", r"^__amd_rocclr_|memcpy|memset|fillbuffer|copybuffer|^dma|\bcopy_?kernel|direct_copy"),
    ("communication", r"nccl|rccl|msccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce|custom_ar(?![a-z])"),
    (
        "layout",
        r"nchw_?to_?nhwc|nhwc_?to_?nchw|nchw_?2_?nhwc|nhwc_?2_?nchw|nchw_?2_?cnhw|cnhw_?2_?nchw|nhwc_?add_?padding"
        r"|convert_?tensor_?kernel|(?<![a-z])batched_transpose|(?<![a-z])transpose_[a-z0-9]*2",
    ),
    ("attention", r"attn|attention|flash|fmha|(?<![a-z])mha|sdpa|paged_?att"),
    (
        "convolution",
        r"conv(?!ert)|winograd|(?<![a-z])igemm_|implicit_?gemm|im2col|col2im|(?<![a-z])(?:fprop|dgrad|wgrad)(?![a-z])"
        r"|(?<![a-z])[sdh]cudnn_|cudnn::cnn::|gemm_xdlops_bwd_weight",
    ),
    (
        "GEMM",
        r"(?<![a-z])nvjet(?![a-z])|(?<!fb)gemm|gemv|matmul|mul_mat|(?<![a-z])mul_mm(?![a-z])|cijk_|cublas|hipblas|rocblas|tensile|xmma|wmma|mfma"
        r"|\bmm_|_mm\b|\bbmm\b|dot_?product|epilogue::impl::|(?<![a-z])splitkreduce",
    ),
    ("normalisation", r"norm(?!al_)|softmax|gammabeta|rowwisemoments"),
    ("pooling", r"(?<![a-z])(?:max|avg|average)_?pool|pooling"),
    ("reduction", r"reduce|reduction|argmax|argmin|cumsum|\bscan|topk|\bsort|radix"),
    (
        "elementwise",
        r"elementwise|element_wise|vectorized|pointwise|triton_poi|\bfill|unary|binary|activation|gelu|silu|swiglu|relu|sigmoid|tanh|\bcast|(?<![a-z])convert|dropout|rotary|rope|\bcopy|index|scatter|gather|where|clamp|add_kernel|mul_kernel",
    ),
)

MAX_NAME_CHARS = 64 * 1024  # longer names: normalised/classified from this many leading characters


@dataclass(frozen=True)
class CategoryRules:
    """Compiled category rules: ordered (category, regex) pairs; 'other' if none matches."""

    rules: tuple[tuple[str, re.Pattern], ...]
    source: str = "built-in"
    # name -> category: every process of a many-process run classifies the same names again
    _known: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def classify(self, name: str) -> str:
        known = self._known.get(name)
        if known is not None:
            return known
        head = rule_text(name)
        category = next((category for category, pattern in self.rules if pattern.search(head)), "other")
        if len(self._known) < MAX_KNOWN_NAMES and len(name) <= MAX_KNOWN_NAME_CHARS:  # bounded on hostile name counts and lengths
            self._known[name] = category
        return category


MAX_KNOWN_NAMES = 1 << 16  # names whose category CategoryRules remembers
MAX_KNOWN_NAME_CHARS = 4096


def rule_text(name: str) -> str:
    """What category rules are matched against: the first ``MAX_NAME_CHARS`` characters of
    ``name`` (bounded work on absurdly long names), without a ``[clone ...]`` suffix and
    without the parameter list of a demangled name (the balanced ``(...)`` group that ends
    it, e.g. ``"void k<float>(float*, cudnn::reduced_divisor)"`` -> ``"void k<float>"``).
    Template arguments stay: they name the functor or tile of generic kernels."""
    text = _strip_clone_suffixes(str(name)[:MAX_NAME_CHARS].rstrip())
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):  # the "(" that closes the final ")" group
        ch = text[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                head = text[:i].rstrip()
                return head if head else text
    return text  # unbalanced: match the whole name


def compile_rules(pairs, source: str = "built-in") -> CategoryRules:
    return CategoryRules(tuple((c, re.compile(p, re.IGNORECASE)) for c, p in pairs), source)


DEFAULT_CATEGORY_RULES = compile_rules(DEFAULT_RULES)


def load_category_rules(path: str | Path) -> CategoryRules:
    """Read a user rules file (``.toml`` or ``.json``).

    Format (TOML; JSON uses the same keys)::

        replace_defaults = false        # true: use only these rules
        [[rules]]
        category = "GEMM"
        pattern = "my_matmul|fused_linear"

    User rules are tried before the defaults. Raises ``ValueError`` with a one-line
    message naming the file when it cannot be read or is malformed.
    """
    path = Path(path)
    try:
        with open_regular(path) as fh:  # a regular file, checked on its descriptor (a FIFO never blocks)
            text = fh.read(RULES_MAX_BYTES + 1).decode("utf-8")
        if len(text) > RULES_MAX_BYTES:
            raise ValueError(f"{path}: category rules file larger than {RULES_MAX_BYTES >> 20} MiB")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: category rules are not UTF-8 text") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot read category rules: {err.strerror or err}") from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except Exception as err:  # json.JSONDecodeError, tomllib.TOMLDecodeError
        raise ValueError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ValueError(f"{path}: expected a 'rules' list of {{category, pattern}} entries")
    pairs = []
    for i, rule in enumerate(data["rules"]):
        if not isinstance(rule, dict) or not isinstance(rule.get("category"), str) or not isinstance(rule.get("pattern"), str):
            raise ValueError(f"{path}: rule {i + 1} needs string keys 'category' and 'pattern'")
        try:
            re.compile(rule["pattern"])
        except re.error as err:
            raise ValueError(f"{path}: rule {i + 1}: bad regular expression {rule['pattern']!r}: {err}") from None
        pairs.append((rule["category"], rule["pattern"]))
    if not data.get("replace_defaults", False):
        pairs.extend(DEFAULT_RULES)
    return compile_rules(pairs, str(path))


def _strip_balanced(text: str, open_ch: str, close_ch: str) -> str:
    """``text`` without the parts inside balanced ``open_ch``...``close_ch`` pairs (nested
    pairs count depth; a close at depth 0 is kept; an unclosed open drops the rest).
    One pass over the bracket positions only (``str.find``), so linear in ``len(text)``."""
    out = []
    depth = 0
    keep_from = 0  # start of the depth-0 stretch not yet copied
    o = text.find(open_ch)  # next open / close at or after the current position (-1: none)
    c = text.find(close_ch)
    while o >= 0 or c >= 0:
        if c < 0 or 0 <= o < c:
            if depth == 0:
                out.append(text[keep_from:o])
            depth += 1
            o = text.find(open_ch, o + 1)
        else:
            if depth:
                depth -= 1
                if depth == 0:
                    keep_from = c + 1
            c = text.find(close_ch, c + 1)
    if depth == 0:
        out.append(text[keep_from:])
    return "".join(out)


def _strip_clone_suffixes(text: str) -> str:
    """``text`` without trailing ``[clone ...]`` groups (each with the whitespace before it),
    as the regex ``(\\s*\\[clone [^\\]]*\\])+$`` would remove them, without its backtracking."""
    end = len(text)
    while end and text[end - 1] == "]":
        prev = text.rfind("]", 0, end - 1)  # the group cannot contain another "]"
        start = text.find("[clone ", prev + 1, end - 1)
        if start < 0:
            break
        end = start
        while end and text[end - 1].isspace():
            end -= 1
    return text[:end]


ANONYMOUS = "(anonymous namespace)"
_ANONYMOUS_MARK = "\ue000"  # a private-use character: one in a name itself reads back as ANONYMOUS


def normalize_name(name: str) -> str:
    """Kernel name without return type, template arguments, argument list or clone suffix.

    Names over ``MAX_NAME_CHARS`` characters: the first ``MAX_NAME_CHARS`` are normalised
    and ``"…[+N chars]"`` is appended (N = characters cut off)."""
    full = str(name)
    text = full.strip()
    marker = ""
    if len(text) > MAX_NAME_CHARS:
        marker = f"…[+{len(text) - MAX_NAME_CHARS} chars]"
        text = text[:MAX_NAME_CHARS]
    text = _strip_clone_suffixes(text)
    if text.endswith(".kd"):
        text = text[:-3]
    # "operator()" / "operator<" would confuse the bracket stripping: keep such names' head.
    text = text.replace("operator()", "operator_call")
    # "(anonymous namespace)" is a scope, not an argument list: kept whole (a stand-in
    # character while the brackets are stripped), so no empty "::::" scope is left
    text = text.replace(ANONYMOUS, _ANONYMOUS_MARK)
    text = _strip_balanced(text, "(", ")")
    text = _strip_balanced(text, "<", ">")
    text = " ".join(text.split())
    if text.startswith("void "):
        text = text[5:]
    # a return type left in front ("float foo") is a single leading word followed by a space
    if " " in text:
        head, _, rest = text.partition(" ")
        if rest and "::" not in head and head.isidentifier():
            text = rest
    text = text.strip().replace(_ANONYMOUS_MARK, ANONYMOUS)
    if marker:
        return (text or full[:MAX_NAME_CHARS]) + marker
    return text or full


def map_categorical(values: pd.Series, func) -> pd.Series:
    """Apply ``func`` to each distinct value of a category column; returns a category column."""
    if not isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype("category")
    cats = values.cat.categories
    mapped = np.array([func(c) for c in cats], dtype=object)
    codes = values.cat.codes.to_numpy()
    inverse, uniq = unique_strings(mapped)
    new_codes = np.where(codes >= 0, inverse[codes] if len(inverse) else -1, -1)
    return pd.Series(pd.Categorical.from_codes(new_codes.astype(np.int32), categories=pd.Index(uniq, dtype=object)), index=values.index)


def unique_strings(values) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, the sorted distinct values as an object array) of a sequence of
    strings: ``np.unique`` of ``values`` as a numpy str array, without the fixed-width
    array (count x longest characters: one 1 MiB name among 3,000 asked for 12 GB)."""
    texts = np.array([str(v) for v in values], dtype=object)
    if not len(texts):
        return np.zeros(0, dtype=np.int64), texts
    codes, uniq = pd.factorize(texts, sort=True)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def row_flags(column: pd.Series, test) -> np.ndarray:
    """``test`` of every row's string as a bool array, evaluated once per distinct value and
    spread to the rows through integer codes (no per-row or fixed-width string array)."""
    col = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    flags = np.array([bool(test(str(c))) for c in col.cat.categories] + [bool(test(""))], dtype=bool)
    return flags[col.cat.codes.to_numpy()]  # code -1 (missing): the last, test("")


def row_strings(column: pd.Series) -> list[str]:
    """Every row's string as a list sharing one str object per distinct value ("" for a
    missing one): iterating names without materialising a copy per row."""
    col = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    cats = [str(c) for c in col.cat.categories] + [""]
    return [cats[i] for i in col.cat.codes.to_numpy().tolist()]


def normalized_names(names: pd.Series) -> pd.Series:
    """``normalize_name`` of every row of a kernel-name column (category column out)."""
    return map_categorical(names, normalize_name)


def kernel_categories(names: pd.Series, rules: CategoryRules | None = None) -> pd.Series:
    """Category of every row of a kernel-name column (category column out)."""
    rules = rules or DEFAULT_CATEGORY_RULES
    return map_categorical(names, rules.classify)
