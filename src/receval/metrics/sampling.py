"""``receval.Sampling``: the sampled evaluation protocol and its correction (docs/sampled.md).

Each test (user, item) is ranked against ``negatives`` items drawn from the user's unseen
items instead of the whole catalog; ``correction`` turns the sampled ranks into an estimate
of the full-catalog metric. The result's metric names carry the protocol after a ``~``
(:class:`~receval.metrics.specs.SampleTag`), so that a sampled number is never mistaken
for a full one: ``ndcg@10~sampled(100)`` (uncorrected), ``ndcg@10~rescale(100)``, ...
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

from receval._errors import InputError, check_seed
from receval.metrics.specs import DEFAULT_GAMMA, SampleTag

__all__ = ["Correction", "Distribution", "Sampling"]

Correction = Literal["rescale", "minimal_bias", "bias_variance", "mle"]
Distribution = Literal["uniform", "popularity"]


@dataclass(frozen=True)
class Sampling:
    """Sampled evaluation: ``negatives`` items drawn per test item, and an optional correction.

    Parameters
    ----------
    negatives:
        m, the number of negatives drawn for each test (user, item), an integer >= 1. Each
        is drawn from the user's candidates (the catalog, or ``candidates=``) that are neither
        excluded (``exclude=``) nor in the user's truth. A user with fewer such items than m
        (without replacement; none at all with replacement) is an error naming them.
    seed:
        Seeds the draws (an integer from 0 to 2^64 - 1, as every receval seed): the same
        seed draws the same negatives for the same truth and model, whatever
        ``block_memory`` or the number of threads.
    replace:
        Draw with replacement (default: without, so that the m negatives are distinct).
    distribution:
        ``"uniform"`` (default; the setting the corrections assume) or ``"popularity"``
        (each unseen item drawn with probability proportional to 1 + the number of
        ``exclude`` users who have it; uncorrected only: the corrections refuse it).
    correction:
        None (report the sampled metric, ``~sampled(m)``) or the estimator of the
        full-catalog metric: ``"rescale"``, ``"minimal_bias"``, ``"bias_variance"``
        (Krichene & Rendle, KDD 2020) or ``"mle"`` (Jin et al., AAAI 2021). docs/sampled.md
        gives their formulas.
    gamma:
        The weight of the variance in ``bias_variance`` (0 < gamma < 1; default 0.01).
    catalog_size:
        With a candidates table in place of a model: n, the number of items each test item
        would be ranked among in the full catalog (itself included); required by the
        corrections. A model knows it (each user's candidates), so it is refused there.

    Examples
    --------
    >>> import receval
    >>> receval.Sampling(100, correction="rescale").tag.text
    'rescale(100)'
    >>> receval.Sampling(0)
    Traceback (most recent call last):
    ...
    receval._errors.InputError: Sampling.negatives must be an integer >= 1; got 0.
    """

    negatives: int
    seed: int = 0
    replace: bool = False
    distribution: Distribution = "uniform"
    correction: Correction | None = None
    gamma: float = DEFAULT_GAMMA
    catalog_size: int | None = None

    def __post_init__(self) -> None:
        def integer(name: str, value: object, minimum: int) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                msg = f"Sampling.{name} must be an integer >= {minimum}; got {value!r}."
                raise InputError(msg)

        integer("negatives", self.negatives, 1)
        # a NumPy seed stored as an int (to_dict, JSON)
        object.__setattr__(self, "seed", check_seed(self.seed, "Sampling.seed"))
        if not isinstance(self.replace, bool):
            msg = f"Sampling.replace must be True or False; got {self.replace!r}."
            raise InputError(msg)
        if self.distribution not in get_args(Distribution):
            msg = (
                f"Sampling.distribution must be one of uniform, popularity; got "
                f"{self.distribution!r}."
            )
            raise InputError(msg)
        if self.correction is not None and self.correction not in get_args(Correction):
            msg = (
                f"Sampling.correction must be None or one of {', '.join(get_args(Correction))}; "
                f"got {self.correction!r}."
            )
            raise InputError(msg)
        gamma = self.gamma
        if (
            isinstance(gamma, bool)
            or not isinstance(gamma, int | float)
            or not math.isfinite(gamma)
            or not 0 < gamma < 1
        ):
            msg = f"Sampling.gamma must be a number strictly between 0 and 1; got {gamma!r}."
            raise InputError(msg)
        if self.catalog_size is not None:
            integer("catalog_size", self.catalog_size, 2)
        if self.distribution == "popularity" and self.correction is not None:
            msg = (
                f"Sampling.correction={self.correction!r} assumes negatives drawn uniformly; "
                "with distribution='popularity' the sampled ranks do not follow its law. Use "
                "correction=None (the sampled metric, uncorrected) or distribution='uniform'."
            )
            raise InputError(msg)

    @property
    def tag(self) -> SampleTag:
        """The ``~`` part of the metric names this protocol gives."""
        return SampleTag(
            self.correction or "sampled", self.negatives, self.replace, self.distribution,
            float(self.gamma),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The protocol as a plain dict (``result.settings["sampling"]``)."""
        return {
            "negatives": self.negatives, "seed": self.seed, "replace": self.replace,
            "distribution": self.distribution, "correction": self.correction,
            "gamma": self.gamma, "catalog_size": self.catalog_size,
        }  # fmt: skip

    @classmethod
    def parse(cls, text: str) -> Sampling:
        """A protocol from text, as the CLI and config files give it: ``"100"``,
        ``"rescale(100)"``, ``"mle(100, seed=3)"``, ``"sampled(50, replace=true)"``
        (estimator ``sampled`` means no correction; keywords as the parameters).

        >>> Sampling.parse("bias_variance(100, seed=2, gamma=0.1)").tag.text
        'bias_variance(100, gamma=0.1)'
        """
        expected = (
            "a sampling must read estimator(m, option=value, ...) or m, estimator one of "
            "sampled, rescale, minimal_bias, bias_variance, mle; options seed, replace, "
            f"distribution, gamma, catalog_size; e.g. 'rescale(100, seed=0)'; got {text!r}."
        )
        try:
            tree = ast.parse(str(text).strip().lower(), mode="eval").body
        except SyntaxError:
            raise InputError(expected) from None
        if isinstance(tree, ast.Constant) and type(tree.value) is int:
            return cls(tree.value)
        if not (
            isinstance(tree, ast.Call)
            and isinstance(tree.func, ast.Name)
            and len(tree.args) == 1
            and isinstance(tree.args[0], ast.Constant)
        ):
            raise InputError(expected)
        estimator = tree.func.id
        if estimator not in ("sampled", *get_args(Correction)):
            raise InputError(expected)
        options: dict[str, Any] = {}
        for kw in tree.keywords:
            if kw.arg not in ("seed", "replace", "distribution", "gamma", "catalog_size"):
                raise InputError(expected)
            if isinstance(kw.value, ast.Name):
                value: Any = {"true": True, "false": False}.get(kw.value.id, kw.value.id)
            else:
                try:
                    value = ast.literal_eval(kw.value)
                except ValueError:
                    raise InputError(expected) from None
            options[kw.arg] = value
        options["correction"] = None if estimator == "sampled" else estimator
        return cls(tree.args[0].value, **options)  # type: ignore[arg-type]
