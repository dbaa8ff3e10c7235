"""The metric-string grammar (docs/CONTRACT.md "Metric grammar").

``name[(param=value, ...)][@K]``: case and spaces do not matter, aliases resolve to the
canonical name, defaults are omitted and parameters print in declared order. The canonical
form is the metric's identity, so parsing it again gives it back.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

import receval
from receval import MetricError, MetricSpec, parse_metric
from receval.metrics.registry import parse_metrics

SPECS = {s.name: s for s in receval.list_metrics()}

CANONICAL = [
    # plain names, case, spaces, cutoffs
    ("ndcg@10", "ndcg@10"),
    ("NDCG@10", "ndcg@10"),
    ("  Ndcg @ 10 ", "ndcg@10"),
    ("ndcg@010", "ndcg@10"),
    ("mrr@ 5 ", "mrr@5"),
    ("mrr", "mrr"),
    ("r_precision", "r_precision"),
    # aliases
    ("ap@100", "map@100"),
    ("AP(denominator=min)@100", "map(denominator=min)@100"),
    ("hr@5", "hit_rate@5"),
    ("HR@5", "hit_rate@5"),
    ("success@5", "hit_rate@5"),
    ("hit-rate@5", "hit_rate@5"),
    ("recip_rank", "mrr"),
    ("recip-rank", "mrr"),
    ("rr@3", "mrr@3"),
    ("rprec", "r_precision"),
    ("r-precision", "r_precision"),
    ("R-Precision", "r_precision"),
    ("p@5", "precision@5"),
    ("P@5", "precision@5"),
    ("r@20", "recall@20"),
    # default parameters are omitted
    ("ndcg(gain=linear)@10", "ndcg@10"),
    ("map(denominator=relevant)", "map"),
    ("recall(average=macro)@20", "recall@20"),
    ("fbeta(beta=1)@5", "fbeta@5"),
    ("fbeta(beta=1.0)@5", "fbeta@5"),
    # non-default parameters, normalised values, declared order
    ("ndcg(gain=exp)@10", "ndcg(gain=exp)@10"),
    ("ndcg( gain = EXP ) @ 10", "ndcg(gain=exp)@10"),
    ("ndcg(gain='exp')@3", "ndcg(gain=exp)@3"),
    ("recall(rel=2, average=macro)@20", "recall(rel=2)@20"),
    ("recall(average=micro, rel=2)@20", "recall(rel=2, average=micro)@20"),
    ("ndcg(gain=exp, rel=2)@5", "ndcg(rel=2, gain=exp)@5"),
    ("fbeta(beta=2.0)@5", "fbeta(beta=2)@5"),
    ("fbeta(beta=0.5)", "fbeta(beta=0.5)"),
    ("fbeta(beta=1e-3)", "fbeta(beta=0.001)"),
    ("precision(rel=1.0)", "precision(rel=1)"),
    ("dcg(rel=0.5)@3", "dcg(rel=0.5)@3"),
    # gain maps: keys sorted, integral floats printed as integers
    ("ndcg(gain={0: 0, 1: 1, 2: 3})@5", "ndcg(gain={0: 0, 1: 1, 2: 3})@5"),
    ("ndcg(gain={2:3,0:0,1:1})@5", "ndcg(gain={0: 0, 1: 1, 2: 3})@5"),
    ("ndcg(gain={1: 1.0, 2: 2.5})", "ndcg(gain={1: 1, 2: 2.5})"),
    ("cg(gain={-1: 0, 1.5: 2})", "cg(gain={-1: 0, 1.5: 2})"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_form(text: str, canonical: str) -> None:
    metric = parse_metric(text)
    assert metric.canonical == canonical
    assert str(metric) == canonical
    # the canonical form is a fixed point
    assert parse_metric(canonical).canonical == canonical


def test_parameter_names_are_case_insensitive() -> None:
    assert parse_metric("NDCG(GAIN=EXP)@10").canonical == "ndcg(gain=exp)@10"


def test_parsed_fields() -> None:
    m = parse_metric("NDCG(gain={2: 3, 0: 0, 1: 1}) @ 5")
    assert m.name == "ndcg"
    assert m.spec is SPECS["ndcg"]
    assert m.k == 5
    assert m.get("gain") == ((0, 0), (1, 1), (2, 3))
    assert m.get("rel") is None  # default: evaluate's relevance_threshold
    m = parse_metric("ap(denominator=MIN)")
    assert (m.name, m.k, m.get("denominator")) == ("map", None, "min")
    m = parse_metric("recall(rel=2.5, average=micro)@7")
    assert (m.get("rel"), m.get("average"), m.k) == (2.5, "micro", 7)
    assert parse_metric(m) is m


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("ap", "map"),
        ("hr", "hit_rate"),
        ("success", "hit_rate"),
        ("recip_rank", "mrr"),
        ("rr", "mrr"),
        ("rprec", "r_precision"),
        ("p", "precision"),
        ("r", "recall"),
    ],
)
def test_aliases_are_declared(alias: str, name: str) -> None:
    assert alias in SPECS[name].aliases
    assert parse_metric(alias).name == name


def test_registry_names_are_unique_and_lower_case() -> None:
    names = [s.name for s in receval.list_metrics()]
    aliases = [a for s in receval.list_metrics() for a in s.aliases]
    assert len(set(names + aliases)) == len(names) + len(aliases)
    for key in names + aliases:
        assert key == key.lower().strip()
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key), key


# ------------------------------------------------------------------- round trip, registry


def _sample_values(spec: MetricSpec) -> dict[str, list[str]]:
    """Printed non-default values to try for each parameter, by the parameter's kind."""
    out: dict[str, list[str]] = {}
    for p in spec.params:
        if p.kind == "threshold":
            out[p.name] = ["2", "0.5"]
        elif p.kind in ("positive", "grade"):
            out[p.name] = [v for v in ("2", "0.5", "3") if v != str(p.default)][:2]
        elif p.kind == "number":
            out[p.name] = [v for v in ("0.25", "-1", "3") if v != str(p.default)][:2]
        elif p.kind == "fraction":
            out[p.name] = [v for v in ("0.5", "0.25", "0.75") if v != str(p.default)][:2]
        elif p.kind == "choice":
            out[p.name] = [c for c in p.choices if c != p.default]
        elif p.kind == "gain":
            out[p.name] = [c for c in p.choices if c != p.default] + ["{0: 0, 1: 1, 2: 3}"]
        elif p.kind == "word":  # a column name or a value, as given (quoted when not a word)
            out[p.name] = ["Genre", "'a b'"]
        else:  # pragma: no cover - a new kind must get sample values here
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
    return out


def _requests(spec: MetricSpec) -> Iterator[tuple[str, str]]:
    """(noisy spelling, expected canonical form) pairs for ``spec``.

    The expected form is built here, independently of the library's printer: the name, the
    non-default parameters in declared order, then ``@K``.
    """
    samples = _sample_values(spec)
    names = [p.name for p in spec.params]
    ks = [None, 1, 10] if spec.cutoff else [None]
    choices = [[None, *samples[n]] for n in names]
    for combo in itertools.product(*choices):
        given = [(n, v) for n, v in zip(names, combo, strict=True) if v is not None]
        for k in ks:
            at = "" if k is None else f"@{k}"
            params = ", ".join(f"{n}={v}" for n, v in given)
            canonical = spec.name + (f"({params})" if params else "") + at
            # noisy: upper case alias or name, reversed order, defaults spelled out, spaces
            defaults = [
                (p.name, str(p.default))
                for p in spec.params
                if p.default is not None and p.name not in dict(given)
            ]
            noisy_params = ", ".join(f"{n} = {v}" for n, v in [*reversed(given), *defaults])
            head = (spec.aliases[0] if spec.aliases else spec.name).upper()
            noisy = f" {head} ({noisy_params})" + ("" if k is None else f" @ {k} ")
            yield noisy, canonical


ROUND_TRIP = [
    pytest.param(noisy, canonical, id=canonical)
    for spec in receval.list_metrics()
    for noisy, canonical in _requests(spec)
]


def test_round_trip_covers_every_metric() -> None:
    covered = {parse_metric(c).name for _, c in (p.values[:2] for p in ROUND_TRIP)}
    assert covered == set(SPECS)
    assert len(ROUND_TRIP) >= 3 * len(SPECS)


@pytest.mark.parametrize(("noisy", "canonical"), ROUND_TRIP)
def test_round_trip(noisy: str, canonical: str) -> None:
    assert parse_metric(canonical).canonical == canonical
    assert parse_metric(noisy).canonical == canonical
    a, b = parse_metric(canonical), parse_metric(noisy)
    assert a.k == b.k
    for p in a.spec.params:
        assert a.get(p.name) == b.get(p.name)


# ------------------------------------------------------------- lists of metrics, Result keys


def test_parse_metrics_drops_duplicates_keeping_order() -> None:
    got = parse_metrics(
        ["ndcg@10", "mrr", "NDCG @ 10", "ap@5", "map@5", "ndcg(gain=linear)@10", "rr", "p@3"]
    )
    assert [m.canonical for m in got] == ["ndcg@10", "mrr", "map@5", "precision@3"]
    assert [m.canonical for m in parse_metrics("hr@2")] == ["hit_rate@2"]


def test_evaluate_drops_duplicates_keeping_order() -> None:
    truth = {1: {1: 1, 2: 2}}
    recs = {1: {1: 0.5, 3: 0.9}}
    res = receval.evaluate(truth, recs, ["mrr", "ndcg@10", "recip_rank", "NDCG@10", "p@1"])
    assert res.metrics == ("mrr", "ndcg@10", "precision@1")
    assert list(res) == ["mrr", "ndcg@10", "precision@1"]
    assert res.per_user.columns == ["user", "mrr", "ndcg@10", "precision@1"]
    # item 1 (relevant) is second: mrr = 1/2, precision@1 = 0
    assert res["mrr"] == 0.5
    assert res["precision@1"] == 0.0


def test_result_accepts_any_spelling() -> None:
    truth = {1: {1: 1, 2: 2}, 2: {3: 1}}
    recs = {1: {1: 0.5, 3: 0.9, 2: 0.1}, 2: {3: 1.0}}
    res = receval.evaluate(
        truth, recs, ["ndcg@10", "map(denominator=min)@2", "hit_rate@1", "r_precision"]
    )
    for key in ("ndcg@10", "NDCG @ 10", "ndcg(gain=linear)@10", " Ndcg(gain='LINEAR')@010"):
        assert res[key] == res.means["ndcg@10"]
    for key in ("ap(denominator=min)@2", "MAP(denominator=MIN) @ 2"):
        assert res[key] == res.means["map(denominator=min)@2"]
    for key in ("hr@1", "success@1", "HIT-RATE@1"):
        assert res[key] == res.means["hit_rate@1"]
    for key in ("rprec", "R-Precision"):
        assert res[key] == res.means["r_precision"]
    # hand: user 1 list 3, 1, 2 (rel 0, 1, 2), user 2 list 3 (rel 1)
    # hit_rate@1: user 1 misses, user 2 hits -> 0.5; r_precision: user 1 |R|=2, 1 hit in
    # the top 2 -> 1/2; user 2 -> 1; mean 0.75
    assert res["hr@1"] == 0.5
    assert res["rprec"] == 0.75


def test_result_key_errors() -> None:
    res = receval.evaluate({1: {1: 1}}, {1: {1: 1.0}}, ["ndcg@10"])
    for key in ("ndcg@5", "ndcg(gain=exp)@10", "ndcg", "mrr", "ndgc@10", "ndcg@0"):
        with pytest.raises(KeyError):
            res[key]


# ---------------------------------------------------------------------------- did you mean

DID_YOU_MEAN = [
    ("ndgc", "ndcg"),
    ("NDGC@10", "ndcg"),
    ("precison@5", "precision"),
    ("recal", "recall"),
    ("mmr", "mrr"),
    ("hitrate", "hit_rate"),
    ("hit-rat@3", "hit_rate"),
    ("rprecision", "r_precision"),
    ("fbta", "fbeta"),
    ("f2@3", "f1"),
    ("mapp@10", "map"),
    ("dgc", "dcg"),
    ("sucess@3", "hit_rate"),  # close to the alias 'success': the canonical name is suggested
    ("reciprank", "mrr"),  # close to the alias 'recip_rank'
]


@pytest.mark.parametrize(("text", "suggestion"), DID_YOU_MEAN)
def test_did_you_mean(text: str, suggestion: str) -> None:
    with pytest.raises(MetricError) as info:
        parse_metric(text)
    message = str(info.value)
    name = text.split("@", maxsplit=1)[0].lower().replace("-", "_")
    assert message.startswith(f"unknown metric '{name}' in '{text}'"), message
    said = re.search(r"did you mean (.*)\?$", message)
    assert said, message
    suggested = re.findall(r"'([^']+)'", said.group(1))
    assert suggestion in suggested
    assert 1 <= len(suggested) <= 3
    # suggestions are canonical names, never aliases
    assert set(suggested) <= set(SPECS)


@pytest.mark.parametrize("text", ["bleu", "zzzzzz@10", "qwxyz"])
def test_unknown_far_name_lists_known_metrics(text: str) -> None:
    with pytest.raises(MetricError, match="known metrics: ") as info:
        parse_metric(text)
    listed = str(info.value).split("known metrics: ")[1].rstrip(".").split(", ")
    assert listed == list(SPECS)
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "cannot parse metric"),
        ("ndcg(gain=exp", "cannot parse metric"),
        ("ndcg(exp)@3", "parameters are given by keyword"),
        ("ndcg.x@3", "cannot parse metric"),
        ("ndcg(gain=__import__('os'))", "must be constants"),
        ("ndcg(gain=[1, 2])", "parameter `gain` of ndcg"),
        ("ndcg(gain={})", "parameter `gain` of ndcg"),
        ("ndcg(gain={1: 'a'})", "maps relevance to gain"),
        ("ndcg(rel='2')", "parameter `rel` of ndcg must be a number > 0; got '2'"),
        ("precision@5@6", "`k` of precision must be an integer >= 1"),
        ("mrr(beta=2)", "mrr has no parameter 'beta'"),
        ("r_precision(rel=2)@3", "r_precision takes no cutoff"),
    ],
)
def test_malformed_metric_strings(text: str, pattern: str) -> None:
    with pytest.raises(MetricError, match=re.escape(pattern)):
        parse_metric(text)


def test_non_string_metric() -> None:
    with pytest.raises(MetricError, match=re.escape("must be given as a string")):
        parse_metric(10)  # type: ignore[arg-type]
