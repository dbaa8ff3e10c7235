"""receval: fast, exact offline evaluation of recommender systems and rankers.

>>> import receval
>>> truth = {"u1": {"a": 3, "b": 1}, "u2": {"c": 1}}
>>> recs = {"u1": {"b": 0.9, "a": 0.5, "z": 0.1}, "u2": {"c": 0.7, "y": 0.2}}
>>> res = receval.evaluate(truth, recs, ["ndcg@2", "recall@1"])
>>> round(res["ndcg@2"], 4), res["recall@1"]
(0.8984, 0.75)
>>> res.counts
Counts(evaluated=2, no_recs=0, no_relevant=0, recs_not_in_truth=0)
"""

from __future__ import annotations

from . import plot
from ._classification import *  # noqa: F403 (array functions: auc, roc_curve, ...)
from ._classification import __all__ as _classification_all
from ._compare import *  # noqa: F403 (compare and its result)
from ._compare import __all__ as _compare_all
from ._errors import InputError, MetricError, RecevalError
from ._evaluate import NoRecsPolicy, TiesPolicy, evaluate
from ._io import read_trec_qrels, read_trec_run
from ._rating import *  # noqa: F403 (array functions: mae, rmse, ...)
from ._rating import __all__ as _rating_all
from ._registry import Metric, MetricSpec, Param, list_metrics, parse_metric
from ._result import Counts, Result

__version__ = "0.1.0"

__all__ = [
    "Counts",
    "InputError",
    "Metric",
    "MetricError",
    "MetricSpec",
    "NoRecsPolicy",
    "Param",
    "RecevalError",
    "Result",
    "TiesPolicy",
    "__version__",
    "evaluate",
    "list_metrics",
    "parse_metric",
    "plot",
    "read_trec_qrels",
    "read_trec_run",
]
__all__ += _classification_all  # noqa: PLE0605 (explicit names replace these once the modules exist)
__all__ += _rating_all  # noqa: PLE0605 (explicit names replace these once the modules exist)
__all__ += _compare_all  # noqa: PLE0605 (explicit names replace these once the modules exist)
