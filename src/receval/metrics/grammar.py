"""The metric-string grammar: a request such as ``"ndcg(gain=exp)@10"`` parsed into a
:class:`~receval.metrics.specs.Metric` (the spec, its parameter values and the cutoff ``k``).

The canonical printed form of a :class:`~receval.metrics.specs.Metric` (defaults omitted,
parameters in declared order) is its identity: the same string names the metric in Python, on
the command line and in config files. Names are looked up in the registry
(:mod:`receval.metrics.specs`), which :mod:`receval.metrics.catalogue` fills; importing
:mod:`receval` (or :mod:`receval.metrics.registry`) registers every metric. trec_eval's names
with the cutoff after an underscore (``ndcg_cut_10``, ``P_10``) are read here too.

Grammar (parsed with :mod:`ast`, constants only)::

    metric  := name [ "(" param ("," param)* ")" ] [ "@" K ] [ "~" estimate ]
    param   := word "=" value
    value   := number | word | 'string' | "{" number ":" number, ... "}"
    estimate := estimator "(" m ("," param)* ")"      (sampled metrics: docs/sampled.md)

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
>>> parse_metric("NDCG@10 ~ rescale(100)").canonical
'ndcg@10~rescale(100)'
>>> parse_metric("ndgc@10")
Traceback (most recent call last):
...
receval._errors.MetricError: unknown metric 'ndgc' in 'ndgc@10'; did you mean 'ndcg', ...?
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable

from receval._errors import MetricError
from receval.metrics.specs import (
    ESTIMATORS,
    Metric,
    MetricSpec,
    ParamValue,
    SampleTag,
    aliases,
    list_metrics,
    lookup,
)

__all__ = ["MAX_K", "parse_metric", "parse_metrics"]

# trec_eval's measure names carry the cutoff after an underscore: ndcg_cut_10, P_10, ...
_TREC_PREFIXES = {
    "p": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "success": "hit_rate",
}
_TREC_NAME = re.compile(rf"({'|'.join(_TREC_PREFIXES)})_(\d+)")


def parse_metric(text: str | Metric) -> Metric:
    """Parse one metric string, e.g. ``"ndcg(gain=exp)@10"``, into a :class:`Metric`."""
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        msg = f"a metric must be given as a string such as 'ndcg@10'; got {text!r}."
        raise MetricError(msg)
    source, tilde, estimate = text.strip().partition("~")
    sampling = _parse_estimate(estimate.strip(), text) if tilde else None
    head, at, tail = source.strip().partition("@")
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
    registered = aliases()
    trec_k: int | None = None
    trec = _TREC_NAME.fullmatch(name)
    if name not in registered and trec is not None:  # trec_eval's ndcg_cut_10, P_10, map_cut_100
        name, trec_k = _TREC_PREFIXES[trec.group(1)], int(trec.group(2))
        if trec_k < 1:
            msg = f"`k` of {name} must be an integer >= 1; got {trec_k} in {text!r}."
            raise MetricError(msg)
    if name not in registered:
        raise MetricError(_unknown(name, text))
    spec = lookup(name)

    values: dict[str, ParamValue] = {}
    declared = {p.name: p for p in spec.params}
    for kw in keywords:
        arg = None if kw.arg is None else kw.arg.lower()
        if arg is None or arg not in declared:
            known = ", ".join(declared) or "none"
            msg = f"{spec.name} has no parameter {kw.arg!r} (in {text!r}); its parameters: {known}."
            raise MetricError(msg)
        if arg in values:
            msg = f"{spec.name} is given parameter {arg!r} twice in {text!r}; give it once."
            raise MetricError(msg)
        values[arg] = declared[arg].validate(spec.name, _literal(kw.value, text))

    k: int | None = trec_k
    if at:
        if trec_k is not None:
            msg = f"{text!r} gives the cutoff twice (in the name and after @); give it once."
            raise MetricError(msg)
        k = _parse_k(spec, tail.strip(), text)
    ordered = tuple((p.name, values[p.name]) for p in spec.params if p.name in values)
    return Metric(spec, ordered, k, sampling)


def _parse_estimate(text: str, source: str) -> SampleTag:
    """The ``~`` part of a sampled metric's name: ``estimator(m[, replace=true]
    [, distribution=popularity][, gamma=g])``."""
    expected = (
        f"the part after ~ in {source!r} must read estimator(m, ...), estimator one of "
        f"{', '.join(ESTIMATORS)} and m the number of sampled negatives, e.g. "
        "'ndcg@10~rescale(100)'"
    )
    try:
        tree = ast.parse(text.lower(), mode="eval").body
    except SyntaxError:
        raise MetricError(expected + ".") from None
    if not (
        isinstance(tree, ast.Call)
        and isinstance(tree.func, ast.Name)
        and tree.func.id in ESTIMATORS
        and len(tree.args) == 1
        and isinstance(tree.args[0], ast.Constant)
        and type(tree.args[0].value) is int
        and tree.args[0].value >= 1
    ):
        raise MetricError(expected + f"; got {text!r}.")
    given: dict[str, object] = {}
    for kw in tree.keywords:
        value = _literal(kw.value, source)
        if kw.arg == "replace" and value in (True, False, "true", "false"):
            given["replace"] = value in (True, "true")
        elif kw.arg == "distribution" and value in ("uniform", "popularity"):
            given["distribution"] = value
        elif (
            kw.arg == "gamma"
            and tree.func.id == "bias_variance"
            and type(value) in (int, float)
            and 0 < float(value) < 1  # type: ignore[arg-type]
        ):
            given["gamma"] = float(value)  # type: ignore[arg-type]
        else:
            msg = (
                f"{expected}; its options are replace=true|false, distribution=uniform|"
                f"popularity and, for bias_variance, gamma (0 < gamma < 1); got "
                f"{kw.arg}={value!r}."
            )
            raise MetricError(msg)
    return SampleTag(tree.func.id, tree.args[0].value, **given)  # type: ignore[arg-type]


def parse_metrics(metrics: str | Metric | Iterable[str | Metric]) -> tuple[Metric, ...]:
    """Parse a request of one or many metrics; duplicates (same canonical form) are dropped.

    ``"ndcg@5,10,20"`` is shorthand for ``["ndcg@5", "ndcg@10", "ndcg@20"]``.

    >>> [m.canonical for m in parse_metrics(["ndcg@5,10", "P_10", "map_cut_100", "hit@10"])]
    ['ndcg@5', 'ndcg@10', 'precision@10', 'map@100', 'hit_rate@10']
    """
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
        for one in _expand_cutoffs(item):
            metric = parse_metric(one)
            parsed.setdefault(metric.canonical, metric)
    if not parsed:
        msg = "metrics must name at least one metric, e.g. ['ndcg@10']; got none."
        raise MetricError(msg)
    return tuple(parsed.values())


def _expand_cutoffs(item: str | Metric) -> list[str | Metric]:
    """``"ndcg@5,10,20"`` -> ``["ndcg@5", "ndcg@10", "ndcg@20"]``; anything else as it is."""
    if not isinstance(item, str):
        return [item]
    metric, tilde, estimate = item.partition("~")  # the estimate's own commas stay
    head, at, tail = metric.partition("@")
    if not at or "," not in tail:
        return [item]
    return [f"{head}@{k.strip()}{tilde}{estimate}" for k in tail.split(",")]


MAX_K = 2**63 - 1  # cutoffs are 64-bit integers in the kernels


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
    if k > MAX_K:
        msg = f"`k` of {spec.name} must be an integer from 1 to 2^63 - 1; got {k}."
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
    registered = aliases()
    close = difflib.get_close_matches(_normalise_name(name), list(registered), n=3, cutoff=0.5)
    names = list(dict.fromkeys(registered[c] for c in close))
    hint = f"; did you mean {', '.join(repr(n) for n in names)}?" if names else ""
    known = "" if names else f"; known metrics: {', '.join(s.name for s in list_metrics())}."
    return f"unknown metric {name!r} in {text!r}{hint}{known}"
