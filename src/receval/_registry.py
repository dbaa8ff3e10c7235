"""The metric registry and the metric-string grammar.

A metric is a frozen :class:`MetricSpec` (name, typed parameters with defaults, bounds,
direction, references). A request such as ``"ndcg(gain=exp)@10"`` parses into a
:class:`Metric`: the spec, its parameter values and the cutoff ``k``. The canonical printed form
of a :class:`Metric` (defaults omitted, parameters in declared order) is its identity: the same
string names the metric in Python, on the command line and in config files.

Grammar (parsed with :mod:`ast`, constants only)::

    metric  := name [ "(" param ("," param)* ")" ] [ "@" K ]
    param   := word "=" value
    value   := number | word | 'string' | "{" number ":" number, ... "}"

Examples
--------
>>> parse_metric("NDCG@10").canonical
'ndcg@10'
>>> parse_metric("ndcg(gain=exp) @ 10").canonical
'ndcg(gain=exp)@10'
>>> parse_metric("ap(denominator=min)@100").canonical
'map(denominator=min)@100'
>>> parse_metric("recall(rel=2, average=macro)@20").canonical
'recall(rel=2)@20'
>>> parse_metric("ndgc@10")
Traceback (most recent call last):
...
receval._errors.MetricError: unknown metric 'ndgc' in 'ndgc@10'; did you mean 'ndcg', 'dcg'?
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ._errors import MetricError

__all__ = [
    "Metric",
    "MetricSpec",
    "Param",
    "list_metrics",
    "parse_metric",
    "parse_metrics",
    "register",
]

ParamValue = float | int | str | tuple[tuple[float, float], ...] | None
ParamKind = Literal["threshold", "positive", "choice", "gain"]


@dataclass(frozen=True)
class Param:
    """A declared metric parameter: its name, default, domain and meaning."""

    name: str
    default: ParamValue
    kind: ParamKind
    doc: str
    choices: tuple[str, ...] = ()

    def validate(self, metric: str, value: object) -> ParamValue:
        """Return ``value`` in canonical form, or raise :class:`MetricError`."""
        where = f"parameter `{self.name}` of {metric}"
        if self.kind in ("threshold", "positive"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                msg = f"{where} must be a number > 0; got {value!r}."
                raise MetricError(msg)
            if not math.isfinite(value) or value <= 0:
                msg = f"{where} must be a finite number > 0; got {value!r}."
                raise MetricError(msg)
            return _as_number(value)
        if self.kind == "choice":
            if not isinstance(value, str) or value.lower() not in self.choices:
                msg = f"{where} must be one of {', '.join(self.choices)}; got {value!r}."
                raise MetricError(msg)
            return value.lower()
        # gain: a named gain or a map {relevance: gain}
        if isinstance(value, str) and value.lower() in self.choices:
            return value.lower()
        if isinstance(value, Mapping) and value:
            pairs = []
            for key, val in value.items():
                ok = (
                    all(
                        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                        for x in (key, val)
                    )
                    and val >= 0
                )
                if not ok:
                    msg = (
                        f"{where} maps relevance to gain with finite numbers, gains >= 0; "
                        f"got {key!r}: {val!r}."
                    )
                    raise MetricError(msg)
                pairs.append((_as_number(key), _as_number(val)))
            return tuple(sorted(pairs))
        msg = (
            f"{where} must be one of {', '.join(self.choices)} or a map "
            f"{{relevance: gain}}; got {value!r}."
        )
        raise MetricError(msg)


@dataclass(frozen=True)
class MetricSpec:
    """The declaration of a metric: everything but its arithmetic, which lives in a kernel."""

    name: str
    description: str
    formula: str
    params: tuple[Param, ...] = ()
    aliases: tuple[str, ...] = ()
    cutoff: bool = True
    higher_is_better: bool = True
    bounds: tuple[float, float] = (0.0, 1.0)
    family: Literal["ranking"] = "ranking"
    references: tuple[str, ...] = ()
    variants: str = ""
    properties: frozenset[str] = field(default_factory=frozenset)

    def param(self, name: str) -> Param:
        """The declared parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        msg = f"{self.name} has no parameter {name!r}"
        raise KeyError(msg)


@dataclass(frozen=True)
class Metric:
    """A metric request: a spec, the values of its parameters and its cutoff ``k``."""

    spec: MetricSpec
    values: tuple[tuple[str, ParamValue], ...]
    k: int | None

    @property
    def name(self) -> str:
        """The spec's canonical name, e.g. ``"ndcg"``."""
        return self.spec.name

    def get(self, name: str) -> ParamValue:
        """The value of parameter ``name`` (its default when not given)."""
        for key, value in self.values:
            if key == name:
                return value
        return self.spec.param(name).default

    @property
    def canonical(self) -> str:
        """The canonical printed form, which is also the metric's identity."""
        given = dict(self.values)
        parts = [
            f"{p.name}={_format(given[p.name])}"
            for p in self.spec.params
            if p.name in given and given[p.name] != p.default
        ]
        text = self.spec.name + (f"({', '.join(parts)})" if parts else "")
        return text + (f"@{self.k}" if self.k is not None else "")

    def __str__(self) -> str:
        return self.canonical


_REGISTRY: dict[str, MetricSpec] = {}
_ALIASES: dict[str, str] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` (and its aliases) to the registry; names must be new."""
    for key in (spec.name, *spec.aliases):
        if key in _ALIASES:
            msg = f"metric name {key!r} is already registered (by {_ALIASES[key]!r})"
            raise ValueError(msg)
    _REGISTRY[spec.name] = spec
    for key in (spec.name, *spec.aliases):
        _ALIASES[key] = spec.name
    return spec


def list_metrics() -> tuple[MetricSpec, ...]:
    """Every registered metric, in registration order."""
    return tuple(_REGISTRY.values())


def parse_metric(text: str | Metric) -> Metric:
    """Parse one metric string, e.g. ``"ndcg(gain=exp)@10"``, into a :class:`Metric`."""
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        msg = f"a metric must be given as a string such as 'ndcg@10'; got {text!r}."
        raise MetricError(msg)
    source = text.strip()
    head, at, tail = source.partition("@")
    head = head.strip()
    paren = head.find("(")
    name_part = head if paren < 0 else head[:paren]
    head = _normalise_name(name_part) + ("" if paren < 0 else head[paren:])
    try:
        tree = ast.parse(head, mode="eval").body
    except SyntaxError:
        msg = (
            f"cannot parse metric {text!r}; expected name[(param=value, ...)][@K], e.g. 'ndcg@10'."
        )
        raise MetricError(msg) from None

    if isinstance(tree, ast.Name):
        name, keywords = tree.id, []
    elif isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and not tree.args:
        name, keywords = tree.func.id, tree.keywords
    else:
        msg = (
            f"cannot parse metric {text!r}; parameters are given by keyword, "
            "e.g. 'ndcg(gain=exp)@10'."
        )
        raise MetricError(msg)
    if name not in _ALIASES:
        raise MetricError(_unknown(name, text))
    spec = _REGISTRY[_ALIASES[name]]

    values: dict[str, ParamValue] = {}
    declared = {p.name: p for p in spec.params}
    for kw in keywords:
        arg = None if kw.arg is None else kw.arg.lower()
        if arg is None or arg not in declared:
            known = ", ".join(declared) or "none"
            msg = f"{spec.name} has no parameter {kw.arg!r} (in {text!r}); its parameters: {known}."
            raise MetricError(msg)
        values[arg] = declared[arg].validate(spec.name, _literal(kw.value, text))

    k: int | None = None
    if at:
        k = _parse_k(spec, tail.strip(), text)
    ordered = tuple((p.name, values[p.name]) for p in spec.params if p.name in values)
    return Metric(spec, ordered, k)


def parse_metrics(metrics: str | Metric | Iterable[str | Metric]) -> tuple[Metric, ...]:
    """Parse a request of one or many metrics; duplicates (same canonical form) are dropped."""
    if isinstance(metrics, str | Metric):
        items: Iterable[str | Metric] = [metrics]
    elif isinstance(metrics, Iterable):
        items = metrics
    else:
        msg = (
            "metrics must be a metric string such as 'ndcg@10' or a list of them; "
            f"got {metrics!r} ({type(metrics).__name__})."
        )
        raise MetricError(msg)
    parsed: dict[str, Metric] = {}
    for item in items:
        metric = parse_metric(item)
        parsed.setdefault(metric.canonical, metric)
    if not parsed:
        msg = "metrics must name at least one metric, e.g. ['ndcg@10']; got none."
        raise MetricError(msg)
    return tuple(parsed.values())


def _parse_k(spec: MetricSpec, tail: str, text: str) -> int:
    if not spec.cutoff:
        msg = f"{spec.name} takes no cutoff @K; got {text!r}."
        raise MetricError(msg)
    try:
        k = int(tail, 10)
    except ValueError:
        msg = f"`k` of {spec.name} must be an integer >= 1; got {tail!r} in {text!r}."
        raise MetricError(msg) from None
    if k < 1:
        msg = f"`k` of {spec.name} must be an integer >= 1; got {k}."
        raise MetricError(msg)
    return k


def _literal(node: ast.expr, text: str) -> object:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Dict):
        return {
            _literal(key, text) if key is not None else None: _literal(val, text)
            for key, val in zip(node.keys, node.values, strict=True)
        }
    try:
        return ast.literal_eval(node)
    except ValueError:
        msg = f"parameter values in {text!r} must be constants (numbers, words, {{rel: gain}})."
        raise MetricError(msg) from None


def _normalise_name(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _unknown(name: str, text: str) -> str:
    close = difflib.get_close_matches(_normalise_name(name), list(_ALIASES), n=3, cutoff=0.5)
    names = list(dict.fromkeys(_ALIASES[c] for c in close))
    hint = f"; did you mean {', '.join(repr(n) for n in names)}?" if names else ""
    known = "" if names else f"; known metrics: {', '.join(_REGISTRY)}."
    return f"unknown metric {name!r} in {text!r}{hint}{known}"


def _as_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _format(value: ParamValue) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(f"{_format(k)}: {_format(v)}" for k, v in value) + "}"
    if isinstance(value, str):
        return value if value.isidentifier() else repr(value)
    return repr(value)


# --------------------------------------------------------------------------- declarations

_REL = Param(
    "rel",
    None,
    "threshold",
    "relevance threshold of this metric: an item is relevant when its relevance >= rel "
    "(default: evaluate's relevance_threshold)",
)
_GAIN = Param(
    "gain",
    "linear",
    "gain",
    "gain of an item of relevance r: linear = r (trec_eval, ranx ndcg, scikit-learn), "
    "exp = 2^r - 1 (ranx ndcg_burges, Burges et al.), or a map {r: gain}; relevance below 0 "
    "gains 0",
    choices=("linear", "exp"),
)
_BOUNDED = frozenset({"bounded01", "perfect_is_one", "order_invariant"})
_UNBOUNDED = frozenset({"nonnegative", "order_invariant"})


def _ranking(
    name: str,
    description: str,
    formula: str,
    *,
    params: tuple[Param, ...] = (),
    aliases: tuple[str, ...] = (),
    cutoff: bool = True,
    bounds: tuple[float, float] = (0.0, 1.0),
    references: tuple[str, ...] = (),
    variants: str = "",
    properties: frozenset[str] = _BOUNDED,
) -> MetricSpec:
    return register(
        MetricSpec(
            name=name,
            description=description,
            formula=formula,
            params=(_REL, *params),
            aliases=aliases,
            cutoff=cutoff,
            bounds=bounds,
            references=references,
            variants=variants,
            properties=properties,
        )
    )


PRECISION = _ranking(
    "precision",
    "Share of the first K recommendations that are relevant.",
    "hits@K / K (K, not the list length; without @K: hits / |L|)",
    aliases=("p",),
    references=("trec_eval P_K",),
    variants="equals trec_eval P_K and ranx precision@K",
    properties=frozenset({"bounded01", "order_invariant"}),
)
RECALL = _ranking(
    "recall",
    "Share of the user's relevant items found in the first K recommendations.",
    "hits@K / |R|; average=micro: sum_u hits@K / sum_u |R|",
    params=(
        Param(
            "average",
            "macro",
            "choice",
            "macro = mean over users of hits/|R|; micro = sum of hits over sum of |R| "
            "(the seeds' 'HR = hits / tests')",
            choices=("macro", "micro"),
        ),
    ),
    aliases=("r",),
    references=("trec_eval recall_K",),
    variants="macro equals trec_eval recall_K and ranx recall@K",
    properties=frozenset({"bounded01", "order_invariant"}),
)
F1 = _ranking(
    "f1",
    "Harmonic mean of the user's precision@K and recall@K (0 when both are 0).",
    "2 * hits@K / (|R| + K)",
    references=("ranx f1",),
    variants="equals ranx f1@K",
    properties=frozenset({"bounded01", "order_invariant"}),
)
FBETA = _ranking(
    "fbeta",
    "Weighted harmonic mean of the user's precision@K and recall@K.",
    "(1 + beta^2) * hits@K / (beta^2 * |R| + K)",
    params=(Param("beta", 1, "positive", "weight of recall relative to precision"),),
    properties=frozenset({"bounded01", "order_invariant"}),
)
HIT_RATE = _ranking(
    "hit_rate",
    "1 when at least one relevant item is in the first K recommendations, else 0.",
    "[hits@K >= 1]",
    aliases=("hr", "success"),
    references=("trec_eval success_K",),
    variants="equals trec_eval success_K and ranx hit_rate@K",
)
MRR = _ranking(
    "mrr",
    "Reciprocal rank of the first relevant item in the first K recommendations (0 if none).",
    "1 / pos(first relevant item in L@K)",
    aliases=("recip_rank", "rr"),
    references=("trec_eval recip_rank", "Voorhees, TREC-8 QA track (1999)"),
    variants="equals trec_eval recip_rank (no @K) and ranx mrr@K",
)
ARHR = _ranking(
    "arhr",
    "Average reciprocal hit rank: the sum of reciprocal positions of all hits in the top K.",
    "sum over i in L@K with i in R of 1 / pos(i)",
    references=("Deshpande & Karypis, Item-based top-N recommendation algorithms (2004)",),
    variants="equals mrr@K when each user has one relevant item",
    bounds=(0.0, math.inf),
    properties=_UNBOUNDED,
)
MAP = _ranking(
    "map",
    "Average precision: precision at the position of each relevant item in the top K, "
    "summed and divided by the number of relevant items (mean over users = MAP).",
    "sum over i in L@K with i in R of P@pos(i) / D, D = |R| or min(K, |R|)",
    params=(
        Param(
            "denominator",
            "relevant",
            "choice",
            "relevant = |R| (trec_eval map_cut, ranx map); min = min(K, |R|) (RecBole, "
            "MS Recommenders map_at_k, Spark RankingMetrics)",
            choices=("relevant", "min"),
        ),
    ),
    aliases=("ap",),
    references=("trec_eval map_cut_K", "ranx map@K"),
    variants="denominator=relevant equals trec_eval map / map_cut_K and ranx map@K",
)
CG = _ranking(
    "cg",
    "Cumulative gain: the sum of the gains of the first K recommendations.",
    "sum_{j<=K} gain(rel at j)",
    params=(_GAIN,),
    bounds=(0.0, math.inf),
    properties=_UNBOUNDED,
)
DCG = _ranking(
    "dcg",
    "Discounted cumulative gain of the first K recommendations.",
    "sum_{j<=K} gain(rel at j) / log2(j + 1)",
    params=(_GAIN,),
    references=("Järvelin & Kekäläinen (2002)",),
    variants="gain=linear equals ranx dcg; gain=exp equals ranx dcg_burges",
    bounds=(0.0, math.inf),
    properties=_UNBOUNDED,
)
NDCG = _ranking(
    "ndcg",
    "DCG@K divided by the DCG@K of the ideal list (all of the user's truth items sorted by "
    "relevance).",
    "dcg@K / idcg@K",
    params=(_GAIN,),
    references=("Järvelin & Kekäläinen (2002)", "Burges et al. (2005) for exp gain"),
    variants=(
        "gain=linear equals trec_eval ndcg_cut_K, ranx ndcg@K and scikit-learn ndcg_score; "
        "gain=exp equals ranx ndcg_burges@K"
    ),
)
R_PRECISION = _ranking(
    "r_precision",
    "Precision at rank |R|, the number of the user's relevant items.",
    "hits@|R| / |R|",
    aliases=("rprec",),
    cutoff=False,
    references=("trec_eval Rprec",),
    variants="equals trec_eval Rprec and ranx r-precision",
)
