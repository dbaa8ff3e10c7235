"""The one rule for every public ``seed=``: a Python or NumPy integer in [0, 2^64), never a
bool, a float, a negative number or 2^64 and beyond (which used to wrap: ``seed=2**64`` drew
what ``seed=0`` draws). Each public entry point is checked here."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from receval import InputError
from receval._errors import check_seed
from receval.datasets import make_interactions, make_items, make_train
from receval.engines.shard import evaluate_sharded

INTERACTIONS = pl.DataFrame(
    {
        "user": [u for u in range(6) for _ in range(4)],
        "item": [(u * 3 + j) % 9 for u in range(6) for j in range(4)],
        "timestamp": list(range(24)),
    }
)
TRUTH = {"u1": {"a": 1, "b": 1}, "u2": {"c": 1}, "u3": {"a": 1}}
RECS = {"u1": {"a": 0.9, "c": 0.5}, "u2": {"c": 0.7, "a": 0.2}, "u3": {"b": 0.3, "a": 0.1}}
RUNS = {"x": RECS, "y": {"u1": {"c": 0.9}, "u2": {"a": 0.7}, "u3": {"a": 0.3}}}

BAD = [
    (True, "True (bool)"),
    (np.True_, "True (bool)"),
    (1.0, "1.0 (float)"),
    (np.float64(2.0), "2.0 (float"),
    ("3", "'3' (str)"),
    (None, "None (NoneType)"),
    (-1, "-1 (int)"),
    (np.int64(-5), "-5 (int64)"),
    (2**64, "18446744073709551616 (int)"),
    (2**64 + 7, "18446744073709551623 (int)"),
    (10**5000, "an integer of 16610 bits"),
]
GOOD = [0, 1, 2**63 - 1, 2**63, 2**64 - 1, np.int64(3), np.uint64(2**64 - 1), np.int8(4)]


def _split(seed: Any) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.split(INTERACTIONS, "random_user", n=1, seed=seed)


def _compare(seed: Any) -> object:
    return receval.compare(TRUTH, RUNS, ["mrr"], seed=seed, n_resamples=50, n_permutations=50)


ENTRY_POINTS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "split": ("seed", _split),
    "Sampling": ("Sampling.seed", lambda s: receval.Sampling(10, seed=s)),
    "compare": ("seed", _compare),
    "make_interactions": ("seed", lambda s: make_interactions(3, n_recs=2, seed=s)),
    "make_train": ("seed", lambda s: make_train(3, n_items=5, seed=s)),
    "make_items": ("seed", lambda s: make_items(5, dim=2, seed=s)),
    "evaluate_sharded": ("seed", lambda s: evaluate_sharded(TRUTH, RECS, ["mrr"], seed=s)),
}


@pytest.mark.parametrize(("value", "found"), BAD, ids=[f for _, f in BAD])
def test_check_seed_refuses(value: object, found: str) -> None:
    with pytest.raises(InputError) as info:
        check_seed(value)
    text = str(info.value)
    assert text.startswith("seed must be an integer from 0 to 2^64 - 1")
    assert found in text


@pytest.mark.parametrize("value", GOOD)
def test_check_seed_accepts(value: object) -> None:
    got = check_seed(value)
    assert type(got) is int
    assert got == int(value)  # type: ignore[call-overload]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize(("value", "found"), [BAD[0], BAD[2], BAD[6], BAD[8]])
def test_every_public_seed_refuses(entry: str, value: object, found: str) -> None:
    name, call = ENTRY_POINTS[entry]
    with pytest.raises(InputError, match=rf"^{name} must be an integer from 0 to 2\^64 - 1") as e:
        call(value)
    assert found in str(e.value)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_public_seed_takes_the_whole_range(entry: str) -> None:
    _, call = ENTRY_POINTS[entry]
    call(2**64 - 1)
    call(np.uint64(2**64 - 1))
    call(np.int32(5))


def test_split_seeds_near_two_to_the_64_do_not_wrap() -> None:
    # the seed was mixed modulo 2^64 unchecked: 2^64 split as 0 did
    base = _split(0)
    top = _split(2**64 - 1)
    assert isinstance(base, receval.Split) and isinstance(top, receval.Split)
    assert top.settings["seed"] == 2**64 - 1
    assert not top.part.equals(base.part)
    same = _split(np.uint64(2**64 - 1))
    assert isinstance(same, receval.Split)
    assert same.part.equals(top.part)
    assert type(same.settings["seed"]) is int  # a NumPy seed is stored as an int (JSON)


def test_sampling_seeds_above_two_to_the_63_draw() -> None:
    rng = np.random.default_rng(3)
    model = receval.FactorModel(rng.normal(size=(20, 3)), rng.normal(size=(60, 3)))
    truth = pl.DataFrame({"user": np.arange(20), "item": rng.integers(0, 60, 20)})
    means = {
        seed: receval.evaluate(
            truth, model, ["ndcg@10"], sampling=receval.Sampling(10, seed=seed)
        ).means
        for seed in (0, 2**63, 2**64 - 1)
    }
    assert means[2**63] != means[0]
    assert means[2**64 - 1] != means[2**63]
    again = receval.evaluate(
        truth, model, ["ndcg@10"], sampling=receval.Sampling(10, seed=np.uint64(2**64 - 1))
    )
    assert again.means == means[2**64 - 1]
    assert type(receval.Sampling(10, seed=np.int16(3)).seed) is int


def test_sampling_parse_checks_the_seed() -> None:
    with pytest.raises(InputError, match=r"^Sampling.seed must be an integer from 0 to 2\^64"):
        receval.Sampling.parse(f"rescale(100, seed={2**64})")
