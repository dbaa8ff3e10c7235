"""receval: fast, exact offline evaluation of recommender systems and rankers.

>>> import receval
>>> truth = {"u1": {"a": 3, "b": 1}, "u2": {"c": 1}}
>>> recs = {"u1": {"b": 0.9, "a": 0.5, "z": 0.1}, "u2": {"c": 0.7, "y": 0.2}}
>>> res = receval.evaluate(truth, recs, ["ndcg@2", "recall@1"])
>>> round(res["ndcg@2"], 4), res["recall@1"]
(0.8984, 0.75)
>>> res.counts
Counts(evaluated=2, no_recs=0, no_relevant=0, recs_not_in_truth=0)

Array functions in the style of scikit-learn (truth first, options keyword-only):

>>> receval.auc([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
0.75
>>> receval.rmse([4, 3, 5], [3.5, 3, 4])
0.6454972243679028
"""

from __future__ import annotations

from receval import plot
from receval._errors import (
    EngineError,
    InputError,
    LeakageWarning,
    MetricError,
    OutputError,
    RecevalError,
    UndefinedMetricWarning,
)
from receval._version import __version__
from receval.arrays.classification import (
    ConfusionMatrix,
    GaucWeight,
    accuracy,
    auc,
    average_precision,
    confusion_matrix,
    fbeta,
    gauc,
    group_auc,
    log_loss,
    pr_curve,
    precision,
    recall,
    roc_curve,
)
from receval.arrays.rating import mae, mse, nmae, r2, rmse
from receval.comparison.compare import Comparison, compare
from receval.data.audit import SplitAudit, audit_split
from receval.data.io import read_trec_qrels, read_trec_run
from receval.data.models import FactorModel, ScoreModel
from receval.data.split import Split, split
from receval.engines.model import topk
from receval.engines.stream import Evaluator
from receval.evaluation import NoRecsPolicy, TiesPolicy, evaluate
from receval.kernels import pools as _pools
from receval.metrics.registry import Metric, MetricSpec, Param, list_metrics, parse_metric
from receval.metrics.result import Counts, Result
from receval.metrics.sampling import Sampling

_pools.serialise_kernels()  # one kernel launch at a time where Numba's layer needs it


__all__ = [
    "Comparison",
    "ConfusionMatrix",
    "Counts",
    "EngineError",
    "Evaluator",
    "FactorModel",
    "GaucWeight",
    "InputError",
    "LeakageWarning",
    "Metric",
    "MetricError",
    "MetricSpec",
    "NoRecsPolicy",
    "OutputError",
    "Param",
    "RecevalError",
    "Result",
    "Sampling",
    "ScoreModel",
    "Split",
    "SplitAudit",
    "TiesPolicy",
    "UndefinedMetricWarning",
    "__version__",
    "accuracy",
    "auc",
    "audit_split",
    "average_precision",
    "compare",
    "confusion_matrix",
    "evaluate",
    "fbeta",
    "gauc",
    "group_auc",
    "list_metrics",
    "log_loss",
    "mae",
    "mse",
    "nmae",
    "parse_metric",
    "plot",
    "pr_curve",
    "precision",
    "r2",
    "read_trec_qrels",
    "read_trec_run",
    "recall",
    "rmse",
    "roc_curve",
    "split",
    "topk",
]
