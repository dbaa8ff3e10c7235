"""The sampled protocol: each test item ranked against m sampled negatives, from a model or from
a candidates table, and the sampled metrics or their corrections (docs/sampled.md).

:func:`evaluate_sampled` is :func:`receval.evaluate` with ``sampling=``. A *query* is one truth
row whose relevance reaches the threshold and whose item the user can be recommended; its
negatives are drawn (:mod:`receval.kernels.sampled`) from the user's candidates that are
neither excluded nor in the user's truth, or read from a candidates table. The ranks of the
queries go to :func:`receval.families.sampled.sampled_means`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.io import Inputs
from receval.data.layout import IdType, check_frame, group_by_user
from receval.data.models import FactorModel, ScoreModel, is_model
from receval.data.tables import cast_model_ids, match_users, read_truth, read_unified
from receval.engines.model import (
    PAIR_KEY,
    ExcludedTruth,
    catalog_tie_key,
    pair_offsets,
    setup_model,
    warn_model_facts,
)
from receval.engines.scoring import Scorer, parse_memory
from receval.families.contract import NoRecs, Options, Ties
from receval.families.sampled import Queries, check_sampled_metrics, sampled_means
from receval.kernels import sampled as SK
from receval.metrics.result import Counts, Result
from receval.metrics.sampling import Sampling
from receval.metrics.specs import Metric

_BYTES_PER_NEGATIVE = 8 * 4
"""A block's memory per drawn negative: its column, score and the kernels' work arrays."""

__all__ = ["evaluate_sampled"]


def evaluate_sampled(
    truth: Any,
    recs: Any,
    plan: tuple[Metric, ...],
    sampling: Sampling,
    options: Options,
    *,
    exclude: Any,
    candidates: Any,
    block_memory: object,
    excluded_truth: str,
    progress: bool,
) -> Result:
    """:func:`receval.evaluate` with ``sampling=`` (options already checked)."""
    if not isinstance(sampling, Sampling):
        msg = (
            "sampling must be a receval.Sampling, e.g. receval.Sampling(negatives=100, "
            f"correction='rescale'); got {type(sampling).__name__}."
        )
        raise InputError(msg)
    inputs, kinds, ties, threshold = options.inputs, options.kinds, options.ties, options.threshold
    if options.rank_col is not None:
        msg = "rank_col is not supported with sampling=: the sampled ranks come from scores."
        raise InputError(msg)
    tagged = check_sampled_metrics(plan, sampling.tag)
    block_bytes = parse_memory(block_memory)
    t_frame, rel_col, has_relevance = read_truth(
        truth, inputs, kinds, options.relevance_col, check_repeats=not is_model(recs)
    )  # a model's truth is checked by setup_model, grouped
    if is_model(recs):
        excluded = ExcludedTruth.parse(excluded_truth, "excluded_truth")
        if sampling.catalog_size is not None:
            msg = (
                "Sampling.catalog_size is for a candidates table; a model knows each user's "
                "candidates (leave catalog_size out)."
            )
            raise InputError(msg)
        found = _from_model(
            t_frame, recs, sampling, inputs=inputs, kinds=kinds, rel_col=rel_col, ties=ties,
            threshold=threshold, exclude=exclude, candidates=candidates,
            excluded_truth=excluded, block_bytes=block_bytes,
        )  # fmt: skip
    else:
        if exclude is not None or candidates is not None:
            msg = (
                "exclude= and candidates= apply to a model source; with a candidates table "
                "the table's rows are each user's negatives."
            )
            raise InputError(msg)
        found = _from_table(
            t_frame, recs, sampling, inputs=inputs, kinds=kinds, score_col=options.score_col,
            rel_col=rel_col, ties=ties, threshold=threshold,
        )  # fmt: skip
    keys, queries, evaluated, no_recs_users, facts = found
    if sampling.correction is not None and queries.user.size and (queries.n < 2).any():
        msg = "a corrected sampled metric needs the catalog size n of each query; it is unknown."
        raise InputError(msg)
    n_eval = int(evaluated.sum())
    if n_eval == 0:
        msg = (
            f"truth has no user with a relevant item (relevance >= {threshold}); nothing to "
            "evaluate. Check relevance_col and relevance_threshold."
        )
        raise InputError(msg)
    n_no_recs = int((evaluated & no_recs_users).sum())
    no_recs = options.no_recs
    if n_no_recs and no_recs is NoRecs.RAISE:
        shown = keys.filter(pl.Series(evaluated & no_recs_users)).head(5).to_list()
        msg = (
            f"{n_no_recs} evaluated user(s) have no recommendations (no_recs='raise'), e.g. "
            f"{shown}."
        )
        raise InputError(msg)
    zero = evaluated & no_recs_users if no_recs is NoRecs.ZERO else np.zeros(keys.len(), np.bool_)
    means, per_user, details = sampled_means(tagged, queries, keys, inputs.user_col, zero)
    counts = Counts(
        evaluated=n_eval, no_recs=n_no_recs, no_relevant=int((~evaluated).sum()),
        recs_not_in_truth=0,
    )  # fmt: skip
    settings = {
        **options.settings(has_relevance), "sampling": sampling.to_dict(),
        "model" if is_model(recs) else "candidates_table": facts,
    }  # fmt: skip
    return Result(tagged, means, per_user, counts, settings, details)


def _positions(
    above: np.ndarray, tied: np.ndarray, before: np.ndarray, ties: Ties
) -> tuple[np.ndarray, np.ndarray]:
    """The range ``lo .. hi`` of each query's sampled position (0 = first) under ``ties``:
    ``expected`` every position of its tie group, ``first`` / ``trec`` after the tied
    negatives that come first in catalog (table row) order / by trec_eval's item order,
    ``optimistic`` first in its tie, ``pessimistic`` last."""
    if ties is Ties.EXPECTED:
        return above, above + tied
    if ties.fixed_order:
        return above + before, above + before
    if ties is Ties.OPTIMISTIC:
        return above, above.copy()
    return above + tied, above + tied


def _check_room(
    keys: pl.Series, users: np.ndarray, allowed: np.ndarray, sampling: Sampling, what: str
) -> None:
    """Refuse users with too few items to draw ``negatives`` from."""
    need = 1 if sampling.replace else sampling.negatives
    short = users[allowed[users] < need]
    if short.size:
        shown = ", ".join(
            f"{u!r} ({int(a)})"
            for u, a in zip(keys.gather(short[:5]).to_list(), allowed[short[:5]], strict=True)
        )
        msg = (
            f"Sampling.negatives={sampling.negatives} is more than {short.size} user(s) can "
            f"draw {'from' if not sampling.replace else 'at all'}: they have fewer unseen "
            f"{what} (candidates not excluded and not in truth) than needed ({need}); e.g. "
            f"{shown}. Lower negatives, or pass replace=True."
        )
        raise InputError(msg)


def _from_model(
    t_frame: pl.DataFrame,
    model: FactorModel | ScoreModel,
    sampling: Sampling,
    *,
    inputs: Inputs,
    kinds: dict[str, IdType],
    rel_col: str,
    ties: Ties,
    threshold: float,
    exclude: Any,
    candidates: Any,
    excluded_truth: ExcludedTruth,
    block_bytes: int,
) -> tuple[pl.Series, Queries, np.ndarray, np.ndarray, dict[str, Any]]:
    """The queries' sampled ranks from a model: negatives drawn, scored and counted."""
    user_col, item_col = inputs.user_col, inputs.item_col
    setup = setup_model(
        t_frame, model, inputs=inputs, kinds=kinds, exclude=exclude, candidates=candidates,
        excluded_truth=excluded_truth, user_col=user_col, item_col=item_col,
    )  # fmt: skip
    warn_model_facts(setup.facts)
    t_grp, catalog = setup.t_grp, setup.catalog
    keys = t_grp.keys
    n_users = t_grp.n_users
    n_cols = catalog.n_cols
    owner = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(t_grp.offsets))
    rel = t_grp.frame[rel_col].to_numpy()
    relevant = rel >= threshold
    evaluated = np.bincount(owner[relevant], minlength=n_users) > 0
    known = setup.model_row >= 0
    is_query = relevant & setup.t_cand & known[owner]
    in_cat = setup.t_col >= 0
    if setup.pc is None:  # forbidden columns: excluded and truth items
        ex_off, ex_col = setup.ex
        ex_owner = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(ex_off))
        off, cols = pair_offsets(
            np.concatenate([ex_owner, owner[in_cat]]),
            np.concatenate([ex_col, setup.t_col[in_cat]]), n_users,
        )  # fmt: skip
        allowed = n_cols - np.diff(off)
        complement = True
    else:  # allowed columns: the user's candidates (less excluded) less truth items
        pc_off, pc_col = setup.pc
        pc_owner = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(pc_off))
        key = pc_owner * PAIR_KEY + pc_col
        keep = ~np.isin(key, owner[in_cat] * PAIR_KEY + setup.t_col[in_cat])
        off, cols = pair_offsets(pc_owner[keep], pc_col[keep], n_users)
        allowed = np.diff(off)
        complement = False
    q_rows = np.flatnonzero(is_query)
    q_user = owner[q_rows]
    _check_room(keys, np.unique(q_user), allowed, sampling, "items")
    cdf = np.zeros(0)
    if sampling.distribution == "popularity":
        cdf = _popularity(exclude, inputs, kinds, t_frame, catalog, n_cols)
    key_order = np.zeros(0, dtype=np.int64)
    if ties is Ties.FIRST:
        key_order = np.arange(n_cols, dtype=np.int64)
    elif ties is Ties.TREC:
        key_order = np.ascontiguousarray(-catalog_tie_key(catalog), dtype=np.int64)
    m = sampling.negatives
    if sampling.replace and m * _BYTES_PER_NEGATIVE > block_bytes:
        # a block holds at least one test item's draws: with replacement m has no bound but
        # this one (without, _check_room bounds it by the catalog)
        msg = (
            f"Sampling.negatives={m:,} with replacement needs {m * _BYTES_PER_NEGATIVE:,} bytes "
            f"for each test item, more than block_memory ({block_bytes:,} bytes); lower "
            "negatives or raise block_memory."
        )
        raise InputError(msg)
    above = np.zeros(q_rows.size, dtype=np.int64)
    tied = np.zeros(q_rows.size, dtype=np.int64)
    before = np.zeros(q_rows.size, dtype=np.int64)
    if isinstance(model, FactorModel):
        users_f, items_f = model.user_factors, model.item_factors
        if model.uses_torch:  # the sampled products are few: computed here on the CPU
            users_f, items_f = users_f.cpu().numpy(), items_f.cpu().numpy()
        if catalog.cols is not None:
            items_f = items_f[catalog.cols]
        users_f, items_f = np.ascontiguousarray(users_f), np.ascontiguousarray(items_f)
        per_user_bytes = 1
    else:
        scorer = Scorer(model, catalog.ids, catalog.cols)
        per_user_bytes = n_cols * 8
    # blocks of users: the negatives (queries x m) and, for a ScoreModel, the scores
    q_per_user = np.bincount(q_user, minlength=n_users)
    score_bytes = per_user_bytes if isinstance(model, ScoreModel) else 0
    cost = q_per_user * (m * _BYTES_PER_NEGATIVE) + score_bytes
    q_users = np.flatnonzero(q_per_user)
    start = 0
    cum = np.cumsum(cost[q_users])
    q_start = np.searchsorted(q_user, q_users)  # queries are grouped by user
    while start < q_users.size:
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + block_bytes, side="right"))
        stop = max(stop, start + 1)
        users = q_users[start:stop]
        lo_q = int(q_start[start])
        hi_q = int(q_start[stop]) if stop < q_users.size else q_rows.size
        rows = q_rows[lo_q:hi_q]
        qu = q_user[lo_q:hi_q]
        negs, failed = SK.draw_negatives(
            rows.astype(np.int64), qu, allowed[qu], off, cols, complement, m, sampling.replace,
            np.uint64(sampling.seed), cdf,
        )  # fmt: skip
        if failed.any():
            shown = keys.gather(qu[failed][:5]).to_list()
            msg = (
                f"the popularity draw of Sampling(distribution='popularity') gave up for "
                f"{int(failed.sum())} test item(s) whose users' unseen items are rare, e.g. "
                f"users {shown}; use distribution='uniform' or fewer negatives."
            )
            raise InputError(msg)
        t_col = setup.t_col[rows]
        if isinstance(model, FactorModel):
            a, t, b = SK.rank_factors(users_f, items_f, setup.model_row[qu], t_col, negs,
                                      key_order)  # fmt: skip
        else:
            scores = scorer.block(setup.model_row[users], keys.gather(users))
            local = np.searchsorted(users, qu)
            a, t, b = SK.rank_scores(scores, local, t_col, negs, key_order)
        above[lo_q:hi_q], tied[lo_q:hi_q], before[lo_q:hi_q] = a, t, b
        start = stop
    lo, hi = _positions(above, tied, before, ties)
    queries = Queries(q_user, lo, hi, allowed[q_user] + 1, m, sampling.replace)
    facts = dict(setup.facts)
    facts["queries"] = int(q_rows.size)
    facts["truth_rows_not_ranked"] = int((relevant & ~setup.t_cand).sum())
    return keys, queries, evaluated, ~known, facts


def _popularity(
    exclude: Any,
    inputs: Inputs,
    kinds: dict[str, IdType],
    t_frame: pl.DataFrame,
    catalog: Any,
    n_cols: int,
) -> np.ndarray:
    """The cumulative popularity weights of the scored columns: 1 + the distinct ``exclude``
    users who have the item."""
    if exclude is None:
        msg = (
            "Sampling(distribution='popularity') counts item popularity in exclude= (the "
            "training interactions); pass exclude=, or use distribution='uniform'."
        )
        raise InputError(msg)
    pairs = read_unified(exclude, "exclude", inputs, kinds, t_frame[inputs.user_col],
                          catalog.ids)  # fmt: skip
    weights = np.ones(n_cols)
    if pairs is not None:
        pairs = pairs.unique()
        at = match_users(pairs[inputs.item_col], catalog.ids)
        col = np.where(at >= 0, catalog.col_of[np.maximum(at, 0)], -1)
        weights += np.bincount(col[col >= 0], minlength=n_cols)
    return np.cumsum(weights)


def _from_table(
    t_frame: pl.DataFrame,
    recs: Any,
    sampling: Sampling,
    *,
    inputs: Inputs,
    kinds: dict[str, IdType],
    score_col: str,
    rel_col: str,
    ties: Ties,
    threshold: float,
) -> tuple[pl.Series, Queries, np.ndarray, np.ndarray, dict[str, Any]]:
    """The queries' sampled ranks from a candidates table: each user's rows not in truth are
    the negatives of each of the user's test items (in the table with a score)."""
    n_full = sampling.catalog_size
    if sampling.correction is not None and n_full is None:
        msg = (
            f"Sampling.correction={sampling.correction!r} needs the full catalog size: with a "
            "candidates table, pass Sampling(..., catalog_size=n), n the number of items each "
            "test item would be ranked among in the full catalog (itself included)."
        )
        raise InputError(msg)
    if n_full is not None and n_full < sampling.negatives + 1:
        msg = (
            f"Sampling.catalog_size must be at least negatives + 1 ({sampling.negatives + 1}): "
            f"the sampled negatives come from the catalog; got {n_full}."
        )
        raise InputError(msg)
    user_col, item_col = inputs.user_col, inputs.item_col
    r_raw = inputs.read(recs, "recs", score_col)
    if score_col not in r_raw.columns:
        msg = (
            f"recs is missing column {score_col!r} (columns found: {r_raw.columns}); a "
            "candidates table gives a score to each test item and negative (score_col=)."
        )
        raise InputError(msg)
    r_frame = check_frame(
        r_raw, "recs", id_cols=[user_col, item_col], value_col=score_col, value_name="score",
        fix="",
    )  # fmt: skip
    r_frame = cast_model_ids(r_frame, "recs", kinds, [user_col, item_col])
    for col in (user_col, item_col):
        lt, rt = t_frame[col].dtype, r_frame[col].dtype
        if lt != rt:
            if lt.is_integer() and rt.is_integer():
                t_frame = t_frame.with_columns(pl.col(col).cast(pl.Int64))
                r_frame = r_frame.with_columns(pl.col(col).cast(pl.Int64))
            else:
                msg = (
                    f"{col} ids of truth and recs have different types ({lt} and {rt}); "
                    "expected one type (id_type='str' reads both as text)."
                )
                raise InputError(msg)
    r_frame = r_frame.select(user_col, item_col, pl.col(score_col).cast(pl.Float64))
    r_frame = r_frame.with_row_index("__receval_row")
    t_grp = group_by_user(t_frame, user_col)
    keys = t_grp.keys
    n_users = t_grp.n_users
    t = t_grp.frame.select(user_col, item_col, rel_col).with_columns(
        pl.Series("__receval_user", np.repeat(np.arange(n_users), np.diff(t_grp.offsets)))
    )
    rel_ok = t[rel_col].to_numpy() >= threshold
    evaluated = np.bincount(t["__receval_user"].to_numpy()[rel_ok], minlength=n_users) > 0
    t = t.with_row_index("__receval_q")
    negs = r_frame.join(t.select(user_col, item_col), on=[user_col, item_col], how="anti")
    test = t.filter(pl.Series(rel_ok)).join(r_frame, on=[user_col, item_col], how="inner")
    if ties is Ties.TREC:  # trec_eval: equal scores by item id descending, as text
        ranked = pl.concat([negs.select(item_col), test.select(item_col)]).unique()
        text_rank = pl.col(item_col).cast(pl.String).rank("dense").cast(pl.Int64)
        ranked = ranked.with_columns((-text_rank).alias("__receval_key"))
        negs = negs.join(ranked, on=item_col, how="left")
        test = test.join(ranked, on=item_col, how="left")
    else:  # first: table row order
        negs = negs.with_columns(pl.col("__receval_row").cast(pl.Int64).alias("__receval_key"))
        test = test.with_columns(pl.col("__receval_row").cast(pl.Int64).alias("__receval_key"))
    per_user = negs.group_by(user_col).len("__receval_m")
    test = test.join(per_user, on=user_col, how="left").with_columns(
        pl.col("__receval_m").fill_null(0)
    )
    m = sampling.negatives
    wrong = test.filter(pl.col("__receval_m") != m).unique(user_col, maintain_order=True)
    if wrong.height:
        shown = ", ".join(
            f"{u!r} ({c})" for u, c in wrong.select(user_col, "__receval_m").head(5).iter_rows()
        )
        msg = (
            f"Sampling.negatives={m}, but {wrong.height} user(s) of the candidates table have "
            f"another number of negatives (rows not in truth), e.g. {shown}; expected {m} per "
            "user with a test item."
        )
        raise InputError(msg)
    joined = test.select(
        "__receval_q",
        user_col,
        pl.col(score_col).alias("__s"),
        pl.col("__receval_key").alias("__k"),
    ).join(negs.select(user_col, score_col, "__receval_key"), on=user_col, how="inner")
    counted = (
        joined.group_by("__receval_q")
        .agg(
            (pl.col(score_col) > pl.col("__s")).sum().alias("above"),
            (pl.col(score_col) == pl.col("__s")).sum().alias("tied"),
            ((pl.col(score_col) == pl.col("__s")) & (pl.col("__receval_key") < pl.col("__k")))
            .sum()
            .alias("before"),
        )
        .sort("__receval_q")
    )
    q_index = counted["__receval_q"].cast(pl.Int64).to_numpy()
    q_user = t["__receval_user"].to_numpy()[q_index].astype(np.int64)
    above, tied, before = (
        counted[c].cast(pl.Int64).to_numpy() for c in ("above", "tied", "before")
    )
    lo, hi = _positions(above, tied, before, ties)
    queries = Queries(q_user, lo, hi, np.full(q_user.size, n_full or 0, dtype=np.int64), m,
                      sampling.replace)  # fmt: skip
    has_recs = np.zeros(n_users, dtype=np.bool_)
    listed = match_users(r_frame[user_col].unique(), keys)
    has_recs[listed[listed >= 0]] = True
    not_ranked = int(rel_ok.sum()) - int(q_index.size)
    facts = {"queries": int(q_index.size), "truth_rows_not_ranked": not_ranked}
    if not_ranked:
        warnings.warn(
            f"{not_ranked} relevant truth row(s) have no row in the candidates table: they "
            "are not ranked (counted in result.settings['candidates_table']).",
            UserWarning,
            stacklevel=4,
        )
    return keys, queries, evaluated, ~has_recs, facts
