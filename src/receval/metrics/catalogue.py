"""The catalogue: the declaration of every metric, registered in the order it is listed
(which is :func:`~receval.metrics.specs.list_metrics`' order and ``receval metrics``').

Each declaration is a :class:`~receval.metrics.specs.MetricSpec`, made by the helper of its
family (:func:`_ranking`, :func:`_pointwise`, :func:`_beyond`, which fill the facts the family
shares) with the parameters it shares with others (:data:`_REL`, :data:`_GAIN`, :data:`_CUT`,
...). A new metric is declared here; its arithmetic lives in a kernel (docs/architecture.md,
"Adding a metric"). Importing this module registers every metric;
:mod:`receval.metrics.registry` imports it.
"""

from __future__ import annotations

import math

from receval.metrics.specs import Aggregation, Family, MetricSpec, OneItem, Param, register

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
    aggregation_by: tuple[str, tuple[tuple[str, Aggregation], ...]] | None = None,
    one_item: OneItem | None = None,
    higher_is_better: bool = True,
) -> MetricSpec:
    return register(
        MetricSpec(
            name=name,
            description=description,
            formula=formula,
            params=(_REL, *params),
            aliases=aliases,
            cutoff=cutoff,
            higher_is_better=higher_is_better,
            bounds=bounds,
            references=references,
            variants=variants,
            properties=properties,
            aggregation_by=aggregation_by,
            one_item=one_item,
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
    one_item="precision",
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
            "(many papers' 'HR = hits / test items')",
            choices=("macro", "micro"),
        ),
    ),
    aliases=("r",),
    references=("trec_eval recall_K",),
    variants="macro equals trec_eval recall_K and ranx recall@K",
    properties=frozenset({"bounded01", "order_invariant"}),
    aggregation_by=("average", (("macro", "user"), ("micro", "weighted"))),
    one_item="hit",
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
    aliases=("hr", "success", "hit"),
    references=("trec_eval success_K",),
    variants="equals trec_eval success_K and ranx hit_rate@K",
    one_item="hit",
)
MRR = _ranking(
    "mrr",
    "Reciprocal rank of the first relevant item in the first K recommendations (0 if none).",
    "1 / pos(first relevant item in L@K)",
    aliases=("recip_rank", "rr"),
    references=("trec_eval recip_rank", "Voorhees, TREC-8 QA track (1999)"),
    variants="equals trec_eval recip_rank (no @K) and ranx mrr@K",
    one_item="reciprocal",
)
ARHR = _ranking(
    "arhr",
    "Average reciprocal hit rank: the sum of reciprocal positions of all hits in the top K.",
    "sum over i in L@K with i in R of 1 / pos(i)",
    references=("Deshpande & Karypis, Item-based top-N recommendation algorithms (2004)",),
    variants="equals mrr@K when each user has one relevant item",
    bounds=(0.0, math.inf),
    properties=_UNBOUNDED,
    one_item="reciprocal",
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
    one_item="reciprocal",
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
    one_item="dcg",
)
NDCG_K = _ranking(
    "ndcg_k",
    "DCG@K divided by the DCG of K items of the user's largest gain, whether or not the user "
    "has K relevant items: a user with fewer than K relevant items cannot reach 1 (without "
    "@K, K is the list's length).",
    "dcg@K / (max gain * sum_{j<=K} 1 / log2(j + 1))",
    params=(_GAIN,),
    aliases=("rectools_ndcg",),
    references=("RecTools NDCG (divide_by_achievable=False, its default)",),
    variants=(
        "equals RecTools NDCG(k) with binary relevance; ndcg@K is RecTools' "
        "divide_by_achievable=True"
    ),
    properties=frozenset({"bounded01", "order_invariant"}),
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


# ------------------------------------------- cascade metrics and incomplete judgments
# docs/metrics.md "Cascade metrics and incomplete judgments" and docs/ir_metrics.md. An item is
# judged when the user has a truth row for it (any relevance); bpref's judged non-relevant items
# are the truth rows with 0 <= relevance < threshold (trec_eval: a negative relevance is not a
# judgment for bpref).

_PERSISTENCE = Param(
    "p",
    0.8,
    "fraction",
    "persistence: the probability that the user goes on from one position to the next "
    "(Moffat & Zobel suggest 0.5, 0.8 or 0.95; ir_measures' default is 0.8)",
)
ERR = _ranking(
    "err",
    "Expected reciprocal rank: the expected reciprocal of the position where a cascade user "
    "stops, stopping at an item of grade g with probability R(g) = (2^g - 1) / 2^max_grade.",
    "sum_{j<=K} R_j / j * prod_{i<j} (1 - R_i), R = (2^max(rel, 0) - 1) / 2^max_grade",
    params=(
        Param(
            "max_grade",
            4,
            "grade",
            "the largest relevance grade of the scale: R(max_grade) = 1 - 2^-max_grade "
            "(4: gdeval and ir_measures ERR@K, the TREC Web track's 0..4 scale; 1 for binary "
            "relevance); a truth relevance above it is an input error",
        ),
    ),
    aliases=("expected_reciprocal_rank",),
    references=(
        "Chapelle, Metzler, Zhang & Grinspan, Expected reciprocal rank for graded relevance "
        "(CIKM 2009)",
        "gdeval.pl (TREC Web track), ir_measures ERR@K",
    ),
    variants=(
        "max_grade=4 equals gdeval's and ir_measures' ERR@K (which print 5 decimals); another "
        "scale's top grade goes in max_grade"
    ),
    properties=frozenset({"bounded01", "order_invariant"}),
)
RBP = _ranking(
    "rbp",
    "Rank-biased precision: the expected rate of gain of a user who reads on from each position "
    "with probability p; binary by default, graded with gain=.",
    "(1 - p) * sum_{j<=K} g_j * p^(j - 1); g = [rel >= t] (binary) or gain(rel) when rel >= t",
    params=(
        _PERSISTENCE,
        Param(
            "gain",
            "binary",
            "gain",
            "the gain of a relevant item (relevance >= the threshold; other items gain 0): "
            "binary = 1 (Moffat & Zobel), linear = the relevance (ranx rbp, ir_measures RBP "
            "without rel), exp = 2^rel - 1, or a map {relevance: gain}",
            choices=("binary", "linear", "exp"),
        ),
    ),
    aliases=("rank_biased_precision",),
    bounds=(0.0, math.inf),
    references=(
        "Moffat & Zobel, Rank-biased precision for measurement of retrieval effectiveness "
        "(TOIS 2008)",
    ),
    variants=(
        "gain=binary equals ir_measures RBP(p, rel=t) (cwl_eval) and trectools get_rbp "
        "(binary_topical_relevance=True); gain=linear equals ranx rbp.p and, for relevance "
        "grades that are integers with t = 1, ir_measures RBP(p) (trectools, graded); values "
        "lie in [0, 1] with gain=binary"
    ),
    properties=frozenset({"nonnegative", "order_invariant"}),
)
RBP_RESIDUAL = _ranking(
    "rbp_residual",
    "The residual of rank-biased precision: how much binary RBP@K could still grow if every "
    "unjudged item in the top K were relevant and the ranking went on relevant past depth d "
    "(d = K, or the list's length without @K).",
    "(1 - p) * sum_{j<=K, item j unjudged} p^(j - 1) + p^d",
    params=(_PERSISTENCE,),
    aliases=("rbp_res",),
    references=(
        "Moffat & Zobel, Rank-biased precision for measurement of retrieval effectiveness "
        "(TOIS 2008)",
    ),
    variants=(
        "equals trectools get_rbp's residual at depth K; without @K trectools' depth is "
        "unbounded (no p^d term), receval's is the list's length"
    ),
    properties=frozenset({"bounded01", "order_invariant"}),
    higher_is_better=False,
)
BPREF = _ranking(
    "bpref",
    "Binary preference: for each relevant item retrieved, the share of judged non-relevant "
    "items that it precedes; unjudged items are ignored, so it is robust to incomplete "
    "judgments.",
    "(1 / R) sum_{relevant r in L@K} (1 - min(n_r, R) / min(R, N)), n_r = judged "
    "non-relevant items above r, N = the user's judged non-relevant items",
    references=(
        "Buckley & Voorhees, Retrieval evaluation with incomplete information (SIGIR 2004)",
        "trec_eval bpref",
    ),
    variants=(
        "equals trec_eval bpref (pytrec_eval, ir_measures Bpref); with @K, trec_eval -M K. "
        "ranx bpref drops relevance-0 judgments and is not matched"
    ),
)
JUDGED = _ranking(
    "judged",
    "Judgment rate: the share of the first K recommendations that have a truth row (judged "
    "relevant or not); shows how incomplete the judgments of a ranking are.",
    "|{i in L@K : i has a truth row}| / min(K, |L|)",
    aliases=("judged_rate",),
    references=("ir_measures Judged@K (after OpenNIR)",),
    variants="equals ir_measures Judged@K",
    properties=frozenset({"bounded01", "order_invariant"}),
)

# ------------------------------------------------------------- pointwise classification
# Computed over the recommendation rows: the label of a row is 1 when its item is relevant for
# the user (relevance >= rel, else evaluate's relevance_threshold; items not in truth are 0),
# its score is the recs score (for log loss, a probability). docs/pointwise.md.

_CUT = Param(
    "threshold",
    0.5,
    "number",
    "decision threshold: a row is predicted positive when its score >= threshold",
)


def _pointwise(
    family: Family,
    name: str,
    description: str,
    formula: str,
    *,
    params: tuple[Param, ...] = (),
    aliases: tuple[str, ...] = (),
    higher_is_better: bool = True,
    bounds: tuple[float, float] = (0.0, 1.0),
    references: tuple[str, ...] = (),
    variants: str = "",
    properties: frozenset[str] = frozenset({"bounded01"}),
    aggregation: Aggregation = "global",
    aggregation_by: tuple[str, tuple[tuple[str, Aggregation], ...]] | None = None,
    thresholded: bool = False,
    ranks_rows: bool = False,
    uses_rating_range: bool = False,
    one_item: OneItem | None = None,
) -> MetricSpec:
    return register(
        MetricSpec(
            name=name,
            description=description,
            formula=formula,
            params=(_REL, *params) if family == "classification" else params,
            aliases=aliases,
            cutoff=False,
            higher_is_better=higher_is_better,
            bounds=bounds,
            family=family,
            references=references,
            variants=variants,
            properties=properties,
            aggregation=aggregation,
            aggregation_by=aggregation_by,
            thresholded=thresholded,
            ranks_rows=ranks_rows,
            uses_rating_range=uses_rating_range,
            one_item=one_item,
        )
    )


AUC = _pointwise(
    "classification",
    "auc",
    "Area under the ROC curve over all rows: the probability that a random positive row "
    "outscores a random negative one, ties counting one half.",
    "(sum of the positives' average ranks - M(M+1)/2) / (M N), M positives, N negatives",
    aliases=("roc_auc", "roc_auc_score"),
    references=("scikit-learn roc_auc_score", "Hanley & McNeil (1982)"),
    variants="equals scikit-learn roc_auc_score (exact, average ranks over ties)",
    properties=frozenset({"bounded01", "score_transform_invariant"}),
    ranks_rows=True,
    one_item="auc",
)
GAUC = _pointwise(
    "classification",
    "gauc",
    "Group AUC: each user's AUC over their own rows, averaged with weights; users with one "
    "class only are skipped and counted.",
    "sum_u w_u AUC_u / sum_u w_u; w_u = rows (impressions), positives (clicks) or 1",
    params=(
        Param(
            "weight",
            "impressions",
            "choice",
            "weight of a user's AUC: impressions = their rows, clicks = their positives, "
            "uniform = 1",
            choices=("impressions", "clicks", "uniform"),
        ),
    ),
    references=("Zhou et al., Deep Interest Network (KDD 2018)",),
    properties=frozenset({"bounded01", "score_transform_invariant"}),
    aggregation="weighted",
    aggregation_by=(
        "weight",
        (("impressions", "weighted"), ("clicks", "weighted"), ("uniform", "user")),
    ),
)
AVERAGE_PRECISION = _pointwise(
    "classification",
    "average_precision",
    "Area under the precision-recall curve as a step function over all rows.",
    "sum_n (R_n - R_{n-1}) P_n over the distinct score thresholds, highest first",
    aliases=("average_precision_score",),
    references=("scikit-learn average_precision_score",),
    variants="equals scikit-learn average_precision_score (no interpolation)",
    properties=frozenset({"bounded01", "score_transform_invariant"}),
    ranks_rows=True,
)
LOGLOSS = _pointwise(
    "classification",
    "logloss",
    "Mean binary cross-entropy of the rows' probabilities (scores in [0, 1]).",
    "-mean(y log p + (1 - y) log(1 - p)), p clipped to [eps, 1 - eps], eps = float64 eps",
    aliases=("log_loss", "binary_crossentropy"),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=("scikit-learn log_loss",),
    variants="equals scikit-learn log_loss",
    properties=frozenset({"nonnegative"}),
)
ACCURACY = _pointwise(
    "classification",
    "accuracy",
    "Share of rows whose prediction (score >= threshold) equals their label.",
    "(TP + TN) / (TP + FP + FN + TN)",
    params=(_CUT,),
    aliases=("accuracy_score",),
    references=("scikit-learn accuracy_score",),
    thresholded=True,
)
PPV = _pointwise(
    "classification",
    "ppv",
    "Precision at a decision threshold: share of predicted positives that are positive "
    "(NaN with a warning when nothing is predicted positive).",
    "TP / (TP + FP)",
    params=(_CUT,),
    aliases=("precision_score", "positive_predictive_value"),
    references=("scikit-learn precision_score",),
    thresholded=True,
)
TPR = _pointwise(
    "classification",
    "tpr",
    "Recall (sensitivity) at a decision threshold: share of positives predicted positive.",
    "TP / (TP + FN)",
    params=(_CUT,),
    aliases=("recall_score", "sensitivity", "true_positive_rate"),
    references=("scikit-learn recall_score",),
    thresholded=True,
)
FPR = _pointwise(
    "classification",
    "fpr",
    "False-positive rate at a decision threshold: share of negatives predicted positive.",
    "FP / (FP + TN)",
    params=(_CUT,),
    aliases=("false_positive_rate", "fall_out"),
    higher_is_better=False,
    thresholded=True,
)
TNR = _pointwise(
    "classification",
    "tnr",
    "Specificity at a decision threshold: share of negatives predicted negative.",
    "TN / (FP + TN) = 1 - FPR",
    params=(_CUT,),
    aliases=("specificity", "true_negative_rate"),
    thresholded=True,
)
FBETA_SCORE = _pointwise(
    "classification",
    "fbeta_score",
    "F-beta of precision and recall at a decision threshold.",
    "(1 + beta^2) P R / (beta^2 P + R)",
    params=(Param("beta", 1, "positive", "weight of recall relative to precision"), _CUT),
    aliases=("f_score",),
    references=("scikit-learn fbeta_score",),
    variants="beta=1 equals scikit-learn f1_score",
    thresholded=True,
)

# -------------------------------------------------------------------- rating prediction
# Computed over the truth rows (the true rating) joined with the recs score (the predicted
# rating). docs/pointwise.md "Rating prediction".

_AVERAGE = Param(
    "average",
    "rows",
    "choice",
    "rows = over all rows; user = per user, then the mean over users",
    choices=("rows", "user"),
)
_BY_AVERAGE: tuple[str, tuple[tuple[str, Aggregation], ...]] = (
    "average",
    (("rows", "global"), ("user", "user")),
)
_ERROR = frozenset({"nonnegative", "perfect_is_zero"})
MAE = _pointwise(
    "rating",
    "mae",
    "Mean absolute error of the predicted ratings.",
    "mean |y - y_hat|",
    params=(_AVERAGE,),
    aliases=("mean_absolute_error",),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=("scikit-learn mean_absolute_error",),
    properties=_ERROR,
    aggregation_by=_BY_AVERAGE,
)
MSE = _pointwise(
    "rating",
    "mse",
    "Mean squared error of the predicted ratings.",
    "mean (y - y_hat)^2",
    params=(_AVERAGE,),
    aliases=("mean_squared_error",),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=("scikit-learn mean_squared_error",),
    properties=_ERROR,
    aggregation_by=_BY_AVERAGE,
)
RMSE = _pointwise(
    "rating",
    "rmse",
    "Root of the mean squared error of the predicted ratings (average=user: the mean over "
    "users of each user's RMSE).",
    "sqrt(mean (y - y_hat)^2)",
    params=(_AVERAGE,),
    aliases=("root_mean_squared_error",),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=("scikit-learn root_mean_squared_error",),
    properties=_ERROR,
    aggregation_by=_BY_AVERAGE,
)
NMAE = _pointwise(
    "rating",
    "nmae",
    "MAE divided by the width of the rating scale (given by evaluate's rating_range, else "
    "read from truth).",
    "MAE / (r_max - r_min)",
    params=(_AVERAGE,),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=("Goldberg et al., Eigentaste (2001)",),
    properties=_ERROR,
    aggregation_by=_BY_AVERAGE,
    uses_rating_range=True,
)
R2 = _pointwise(
    "rating",
    "r2",
    "Coefficient of determination of the predicted ratings.",
    "1 - SS_res / SS_tot",
    params=(_AVERAGE,),
    aliases=("r2_score",),
    bounds=(-math.inf, 1.0),
    references=("scikit-learn r2_score",),
    variants="equals scikit-learn r2_score",
    properties=frozenset({"perfect_is_one", "at_most_one"}),
    aggregation_by=_BY_AVERAGE,
)

# ----------------------------------------------------------------------- beyond accuracy
# About the lists themselves: every user in recs counts, in truth or not. L@K is the user's
# recs in descending score. docs/beyond.md.


def _beyond(
    name: str,
    description: str,
    formula: str,
    *,
    params: tuple[Param, ...] = (),
    aliases: tuple[str, ...] = (),
    higher_is_better: bool = True,
    bounds: tuple[float, float] = (0.0, 1.0),
    references: tuple[str, ...] = (),
    variants: str = "",
    properties: frozenset[str] = frozenset({"bounded01", "order_invariant"}),
    aggregation: Aggregation = "user",
    needs_train: bool = False,
    needs_item_features: bool = False,
    needs_history: bool = False,
    needs_items: bool = False,
    ties_past_cutoff: bool = False,
    uses_catalog_size: bool = False,
) -> MetricSpec:
    return register(
        MetricSpec(
            name=name,
            description=description,
            formula=formula,
            params=params,
            aliases=aliases,
            higher_is_better=higher_is_better,
            bounds=bounds,
            family="beyond",
            references=references,
            variants=variants,
            properties=properties,
            aggregation=aggregation,
            needs_train=needs_train or needs_history,
            needs_item_features=needs_item_features,
            needs_history=needs_history,
            needs_items=needs_items,
            ties_past_cutoff=ties_past_cutoff,
            uses_catalog_size=uses_catalog_size,
        )
    )


COVERAGE = _beyond(
    "coverage",
    "Catalog coverage: the share of the catalog that appears in at least one top-K list.",
    "|union_u L@K| / |catalog|",
    aliases=("catalog_coverage", "item_coverage", "itemcoverage"),
    references=("Ge et al., Beyond accuracy (RecSys 2010)", "RecBole ItemCoverage"),
    variants="equals RecBole itemcoverage@K when the catalog is the same",
    aggregation="global",
)
ILS = _beyond(
    "ils",
    "Intra-list similarity: each user's mean pairwise item similarity in L@K (users with "
    "fewer than 2 items left out), averaged over users.",
    "2 / (K'(K'-1)) sum_{i<j in L@K} sim(i, j)",
    aliases=("intra_list_similarity",),
    higher_is_better=False,
    bounds=(-math.inf, math.inf),
    references=("Ziegler et al., Improving recommendation lists (WWW 2005)",),
    properties=frozenset({"similarity_bounded", "order_invariant"}),
    needs_item_features=True,
)
DIVERSITY = _beyond(
    "diversity",
    "Intra-list diversity: 1 - ils@K.",
    "1 - ils@K",
    aliases=("intra_list_diversity",),
    bounds=(-math.inf, math.inf),
    references=("Ziegler et al., Improving recommendation lists (WWW 2005)",),
    properties=frozenset({"similarity_bounded", "order_invariant"}),
    needs_item_features=True,
)
NOVELTY = _beyond(
    "novelty",
    "Mean self-information of the recommended items, from their popularity in train (items "
    "absent from train count as popularity 1: self-information log2(n_users)).",
    "mean over i in L@K of -log2(pop(i) / n_users), pop = train users of i",
    aliases=("self_information",),
    bounds=(0.0, math.inf),
    references=("Zhou et al., PNAS (2010)",),
    properties=frozenset({"nonnegative", "order_invariant"}),
    needs_train=True,
)
ARP = _beyond(
    "arp",
    "Average recommendation popularity: the mean train popularity of the items in L@K.",
    "mean over i in L@K of pop(i)",
    aliases=("average_popularity", "averagepopularity"),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=(
        "Abdollahpouri et al., Managing popularity bias (FLAIRS 2019)",
        "RecBole AveragePopularity",
    ),
    variants="equals RecBole averagepopularity@K with popularity = distinct train users",
    properties=frozenset({"nonnegative", "order_invariant"}),
    needs_train=True,
)
GINI = _beyond(
    "gini",
    "Gini index of item exposure: appearances in the top-K lists over every catalog item, "
    "zeros included (0 = equal exposure).",
    "sum_i (2i - n - 1) x_(i) / (n sum x), x ascending, n = |catalog|",
    aliases=("gini_index", "giniindex"),
    higher_is_better=False,
    references=("RecBole GiniIndex",),
    variants="equals RecBole giniindex@K when the catalog is the same",
    aggregation="global",
)
ENTROPY = _beyond(
    "entropy",
    "Shannon entropy (bits) of item exposure in the top-K lists: distributional coverage.",
    "-sum_i p_i log2 p_i, p_i = appearances of i / all appearances",
    aliases=("shannon_entropy", "shannonentropy"),
    bounds=(0.0, math.inf),
    references=("Shani & Gunawardana, Evaluating recommendation systems (2011)",),
    variants="RecBole shannonentropy@K is the mean of -p ln p over recommended items instead",
    properties=frozenset({"nonnegative", "order_invariant"}),
    aggregation="global",
)
LONG_TAIL = _beyond(
    "long_tail",
    "Share of recommended items in the long tail: outside the head, the most popular train "
    "items that together make up the `head` share of train interactions (an item is in the "
    "head when the items strictly more popular than it make up less than that share; items "
    "absent from train are in the tail).",
    "mean over i in L@K of [i not in head]",
    params=(
        Param(
            "head",
            0.2,
            "fraction",
            "share of train interactions that the head (most popular items first) makes up",
        ),
    ),
    aliases=("long_tail_share",),
    references=("Abdollahpouri et al., Managing popularity bias (FLAIRS 2019)",),
    needs_train=True,
)


# ------------------------------------- calibration, serendipity, exposure fairness (lists)
# Per-user values of each list L@K (docs/calibration.md, docs/serendipity.md,
# docs/fairness.md). Item categories and groups come from a column of the item table: `by`,
# else the categorical columns of item_features; an item's categories share its weight.

_BY = Param(
    "by",
    None,
    "word",
    "column of the item table holding each item's category or group (a list column: several, "
    "sharing the item's weight); default: the categorical columns of item_features",
)
_PATIENCE = Param(
    "patience",
    0.5,
    "fraction",
    "attention of position j is patience^(j - 1) (the rank-biased precision browsing model)",
)
_ATTENTION = Param(
    "attention",
    "geometric",
    "choice",
    "attention of position j: geometric = patience^(j - 1), log = 1 / log2(j + 1)",
    choices=("geometric", "log"),
)
_NONNEG = frozenset({"nonnegative", "order_invariant"})

MISCALIBRATION = _beyond(
    "miscalibration",
    "Steck's miscalibration: the KL divergence between the category distribution of the "
    "user's train items and that of L@K, smoothed by alpha (users without train items with "
    "a category have no value; 0 = calibrated).",
    "sum_g p(g|u) ln(p(g|u) / ((1 - alpha) q(g|u) + alpha p(g|u))), p over the user's train "
    "items, q over L@K, p(g|i) = 1 / |categories(i)|",
    params=(
        Param(
            "alpha", 0.01, "fraction", "smoothing of the list's distribution toward the history's"
        ),
        _BY,
    ),
    aliases=("calibration_kl", "ckl"),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=(
        "Steck, Calibrated recommendations (RecSys 2018)",
        "LibRec MiscalibrationEvaluator",
    ),
    variants=(
        "uniform weights over the history and over L@K (Steck's unweighted form); natural log"
    ),
    properties=_NONNEG,
    needs_history=True,
    needs_items=True,
)
UNEXPECTEDNESS = _beyond(
    "unexpectedness",
    "Mean over L@K of 1 - the item's mean similarity to the user's train items (similarity "
    "from item_features; users without train items with features have no value).",
    "mean_{i in L@K} (1 - mean_{j in H_u} sim(i, j))",
    aliases=("msr_unexpectedness",),
    bounds=(0.0, 2.0),
    references=(
        "Zhang et al., Auralist (WSDM 2012)",
        "Microsoft Recommenders serendipity (col_relevance=None: every item relevant)",
    ),
    variants=(
        "equals Microsoft Recommenders user_serendipity / serendipity with every item "
        "relevant (its default) and item_sim_measure=item_feature_vector when item_features "
        "is that vector column"
    ),
    properties=_NONNEG,
    needs_history=True,
    needs_item_features=True,
)
SERENDIPITY = _beyond(
    "serendipity",
    "Microsoft Recommenders' serendipity: mean over L@K of the item's relevance (1 when in "
    "truth with relevance >= rel, else 0) times its unexpectedness given the user's train "
    "items (similarity from item_features).",
    "mean_{i in L@K} rel(u, i) (1 - mean_{j in H_u} sim(i, j))",
    params=(_REL,),
    aliases=("msr_serendipity",),
    bounds=(0.0, 2.0),
    references=(
        "Zhang et al., Auralist (WSDM 2012)",
        "Microsoft Recommenders serendipity (python_evaluation)",
    ),
    variants=(
        "equals Microsoft Recommenders serendipity with col_relevance = the 0/1 relevance; "
        "pop_serendipity is RecTools' popularity-based definition"
    ),
    properties=_NONNEG,
    needs_history=True,
    needs_item_features=True,
)
POP_SERENDIPITY = _beyond(
    "pop_serendipity",
    "RecTools' serendipity: mean over L@K of the item's relevance times how much higher it "
    "ranks in the list than in popularity (dense popularity rank over train items; items "
    "absent from train have probability 0).",
    "mean_{j <= K'} rel(u, i_j) max(0, (n + 1 - j) / n - pu(i_j)), pu(i) = (n + 1 - "
    "poprank(i)) / n (0 outside train), n = |catalog|",
    params=(_REL,),
    aliases=("rectools_serendipity",),
    references=(
        "RecTools Serendipity",
        "Lab41, Recommender systems: it's not all about the accuracy (2016)",
    ),
    variants=(
        "equals RecTools Serendipity(k) with its catalog = receval's catalog and train "
        "without repeated (user, item) rows (RecTools counts rows, receval distinct users)"
    ),
    needs_train=True,
    uses_catalog_size=True,
)
AWRF = _beyond(
    "awrf",
    "Attention-weighted rank fairness of each list: the Jensen-Shannon divergence (bits) "
    "between the attention-weighted group distribution of L@K and a target distribution "
    "(0 = the list's attention matches the target).",
    "JSD_2(e, p*), e_g = sum_j a_j p(g|i_j) / sum_j a_j, a_j = patience^(j-1) or "
    "1 / log2(j + 1); p* = the groups' shares of the catalog, or uniform",
    params=(
        _BY,
        _ATTENTION,
        _PATIENCE,
        Param(
            "target",
            "catalog",
            "choice",
            "target distribution: catalog = each group's share of the catalog items, "
            "uniform = 1 / (number of groups)",
            choices=("catalog", "uniform"),
        ),
    ),
    aliases=("attention_weighted_rank_fairness",),
    higher_is_better=False,
    references=(
        "Sapiezynski et al., Quantifying the impact of user attention on fair group "
        "representation in ranked lists (WWW 2019 Companion)",
        "Raj & Ekstrand, Measuring fairness in ranked results (SIGIR 2022)",
    ),
    variants="the divergence itself (lower is fairer), as Raj & Ekstrand report AWRF",
    needs_items=True,
    ties_past_cutoff=True,
)
_EE_PARAMS = (_REL, _PATIENCE)
_EE_REFS = ("Diaz et al., Evaluating stochastic rankings with expected exposure (CIKM 2020)",)
_EE_VARIANTS = (
    "the stochastic ranking is the tie-aware expectation of the list (ties='expected': "
    "uniform over the orders of tied items); the ideal ranks relevant items first, tied, "
    "over the catalog"
)
EE_LOSS = _beyond(
    "ee_loss",
    "Expected exposure loss (EE-L): the squared distance between the items' expected "
    "exposure in L@K and their exposure under the ideal stochastic ranking.",
    "||eps - eps*||^2 = ee_disparity - 2 ee_relevance + ||eps*||^2",
    params=_EE_PARAMS,
    aliases=("expected_exposure", "ee_l"),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=_EE_REFS,
    variants=_EE_VARIANTS,
    properties=_NONNEG,
    ties_past_cutoff=True,
    uses_catalog_size=True,
)
EE_DISPARITY = _beyond(
    "ee_disparity",
    "Expected exposure disparity (EE-D): the squared norm of the items' expected exposure "
    "in L@K (lower = exposure spread more equally).",
    "||eps||^2 = sum_i eps_i^2",
    params=_EE_PARAMS,
    aliases=("ee_d",),
    higher_is_better=False,
    bounds=(0.0, math.inf),
    references=_EE_REFS,
    variants=_EE_VARIANTS,
    properties=_NONNEG,
    ties_past_cutoff=True,
    uses_catalog_size=True,
)
EE_RELEVANCE = _beyond(
    "ee_relevance",
    "Expected exposure relevance (EE-R): the inner product of the items' expected exposure "
    "in L@K with their ideal exposure.",
    "eps . eps* = sum_i eps_i eps*_i",
    params=_EE_PARAMS,
    aliases=("ee_r",),
    bounds=(0.0, math.inf),
    references=_EE_REFS,
    variants=_EE_VARIANTS,
    properties=_NONNEG,
    ties_past_cutoff=True,
    uses_catalog_size=True,
)
GROUP_SHARE = _beyond(
    "group_share",
    "Share of L@K in one item group (an item in several groups counts 1 / its number of "
    "groups): the group counterpart of long_tail.",
    "mean_{i in L@K} [g in groups(i)] / |groups(i)|",
    params=(
        _BY,
        Param("group", None, "word", "the group (a value of the `by` column) whose share is taken"),
    ),
    aliases=("group_exposure_share",),
    references=("Abdollahpouri et al., Managing popularity bias (FLAIRS 2019)",),
    variants="long_tail@K is group_share with the head/tail split of train as the group",
    needs_items=True,
)


# ----------------------------------------------- exposure fairness over every list (global)
# One value over all the lists: each group's exposure is the attention its items get, summed
# over every user's list (docs/fairness.md, "Exposure of groups over every list"). E_g sums
# a_j p(g|i_j) over the positions j of every list, a_j as in awrf, p(g|i) = 1 / |groups(i)|;
# n_g = sum_i p(g|i) over the catalog items; U = the number of lists (recs users).

_GROUP = Param(
    "group", None, "word", "the group (a value of the `by` column) whose exposure is taken"
)
_REFERENCE = Param(
    "reference",
    None,
    "word",
    "the group compared with `group`; default: the items of every other group together",
)
_GROUP_EXPOSURE_PARAMS = (_BY, _ATTENTION, _PATIENCE)
_SINGH = "Singh & Joachims, Fairness of exposure in rankings (KDD 2018)"

EXPOSURE_SHARE = _beyond(
    "exposure_share",
    "Share of all the attention in the lists that goes to the items of one group (items "
    "without a group left out of the total, counted in details).",
    "E_g / sum_h E_h",
    params=(_BY, _GROUP, _ATTENTION, _PATIENCE),
    references=(
        _SINGH,
        "Sapiezynski et al., Quantifying the impact of user attention on fair group "
        "representation in ranked lists (WWW 2019 Companion)",
    ),
    variants=(
        "group_share is the unweighted, per-list counterpart (each list's share, averaged "
        "over users)"
    ),
    aggregation="global",
    needs_items=True,
    ties_past_cutoff=True,
)
EXPOSURE_DISPARITY = _beyond(
    "exposure_disparity",
    "Demographic-parity ratio of exposure: the attention per item of `group` over the "
    "attention per item of `reference` (1 = parity; above 1, `group`'s items get more).",
    "(E_g / n_g) / (E_r / n_r), r = reference (default: every other group together)",
    params=(_BY, _GROUP, _REFERENCE, _ATTENTION, _PATIENCE),
    aliases=("exposure_ratio", "demographic_parity_ratio"),
    bounds=(0.0, math.inf),
    references=(_SINGH,),
    variants=(
        "exposure_gap is the difference of the two sides of Singh & Joachims' constraint "
        "(per list); the ratio is the form of their disparate treatment and impact ratios "
        "with merit 1"
    ),
    properties=_NONNEG,
    aggregation="global",
    needs_items=True,
    ties_past_cutoff=True,
)
EXPOSURE_GAP = _beyond(
    "exposure_gap",
    "Demographic-parity difference of exposure: the mean attention per item and list of "
    "`group` minus that of `reference` (0 = parity).",
    "E_g / (n_g U) - E_r / (n_r U), r = reference (default: every other group together)",
    params=(_BY, _GROUP, _REFERENCE, _ATTENTION, _PATIENCE),
    aliases=("exposure_difference", "demographic_parity_difference"),
    bounds=(-1.0, 1.0),
    references=(
        _SINGH,
        "Morik et al., Controlling fairness and bias in dynamic learning-to-rank (SIGIR 2020)",
    ),
    variants=(
        "Morik et al.'s exposure disparity D_E with merit 1 for every item; exposure_disparity "
        "is the ratio"
    ),
    properties=frozenset({"order_invariant"}),
    aggregation="global",
    needs_items=True,
    ties_past_cutoff=True,
)
EXPOSURE_GINI = _beyond(
    "exposure_gini",
    "Gini index of the groups' exposure over every group of the `by` column, zeros included "
    "(0 = equal exposure): the group counterpart of gini.",
    "sum_g (2g - G - 1) x_(g) / (G sum x), x = E ascending, G = number of groups",
    params=_GROUP_EXPOSURE_PARAMS,
    aliases=("group_gini",),
    higher_is_better=False,
    references=("RecBole GiniIndex (the index over items; here over groups)",),
    variants="gini@K is the same index over items, exposure counted without attention",
    aggregation="global",
    needs_items=True,
    ties_past_cutoff=True,
)
EXPOSURE_ENTROPY = _beyond(
    "exposure_entropy",
    "Shannon entropy (bits) of the groups' shares of exposure: the group counterpart of entropy.",
    "-sum_g s_g log2 s_g, s_g = E_g / sum_h E_h",
    params=_GROUP_EXPOSURE_PARAMS,
    aliases=("group_entropy",),
    bounds=(0.0, math.inf),
    references=("Shani & Gunawardana, Evaluating recommendation systems (2011)",),
    variants="entropy@K is the same over items, exposure counted without attention",
    properties=_NONNEG,
    aggregation="global",
    needs_items=True,
    ties_past_cutoff=True,
)
GROUP_COVERAGE = _beyond(
    "group_coverage",
    "Share of the groups of the `by` column with an item in at least one top-K list: the "
    "group counterpart of coverage.",
    "|{g : some i in union_u L@K has g in groups(i)}| / G",
    params=(_BY,),
    aliases=("provider_coverage",),
    references=("Ge et al., Beyond accuracy (RecSys 2010), catalog coverage over groups",),
    variants="coverage@K is the same over items",
    aggregation="global",
    needs_items=True,
)
