r"""K-class label LDP: vector approximation against RR, LP-2ST and ALIBI (papers/002).

Experiments of Figures 2–4 (``kclass_fig*``): K Gaussian classes in R² with means
equally spaced on the unit circle, N training samples, a kNN base learner, and
accuracy vs K for five ε-label-LDP methods plus the Bayes accuracy.  A
real-data counterpart (``kclass_digits``) runs the same methods on
scikit-learn's bundled digits.

Every method's learner is the same kNN: the prediction at x is the argmax of the
mean over the k nearest training points of a per-sample label vector —
one-hot of the privatized label (RR, LP-2ST), ALIBI's soft label (29), or the
RAPPOR bit vector (vector approximation, (12)–(13) then (16)).

Accuracy on the synthetic family is Rao-Blackwellized: the mean over test
points x of η_ŷ(x)(x), the exact probability that the prediction is right.
Each trial's five methods share the training features, labels and test points
(common random numbers); their privatization streams are independent.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import delayed
from scipy.spatial import cKDTree

from labeldp_sim.harness.components import Interval, Options
from labeldp_sim.harness.config import (EPS_MAX, EPS_MIN, MAX_N, Need, check_memory, check_plan_size, config_node,
                           eps_allowed, validate_common)
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number
from labeldp_sim.harness.kinds import JobSpec, code_packages
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.harness.runner import Plan
from labeldp_sim.harness.store import Column, Schema
from labeldp_sim.harness.sweeps import Rule, sweep_values
from labeldp_sim.papers.kclass.families import GaussianCircle
from labeldp_sim.papers.kclass.methods import max_epsilon, method_classes, method_scores

# the class spread σ: σ² and 1/(2σ²) stay normal float64 numbers in between
SIGMA_MIN, SIGMA_MAX = 1e-150, 1e150

__all__ = ["KClassSpec", "DigitsSpec", "validate_kclass", "validate_digits", "KClassPlan", "DigitsPlan"]

def synthetic_trial(name, K, sigma, N, k, eps, n_test, split, methods, seed, trial):
    start = time.perf_counter()
    family = GaussianCircle(K, sigma)
    rng = keyed_rng(seed, name, "data", K, trial)
    X, y = family.sample(N, rng)
    X_test, _ = family.sample(n_test, rng)
    eta = family.posterior(X_test)
    _, neighbours = cKDTree(X).query(X_test, k=k)
    rows = []
    for method in methods:
        predictions = method_scores(method, X, y, K, eps, neighbours,
                                    keyed_rng(seed, name, method, K, trial), k, split)
        rows.append({"K": K, "trial": trial, "method": method,
                     "accuracy": float(eta[np.arange(n_test), predictions].mean())})
    for row in rows:
        row["seconds"] = (time.perf_counter() - start) / len(rows)
    return rows


@dataclass(kw_only=True)
class KClassSpec(JobSpec):
    """A ``kclass_fig*`` experiment, validated by :func:`validate_kclass` (with the fields of every
    :class:`JobSpec`).

    Attributes
    ----------
    K_values : list of int
        Class counts ``kclass.K``, each ≥ 2.
    sigma : float or "2/K"
        Class spread.
    N, k, eps, n_test, trials, split : the ``kclass.*`` values
    methods : list of str
        Names of K-class methods (:func:`~.methods.method_classes`).
    config_key : str
        Key of every (K, trial, method) record: the values above that set a
        trial's numbers, not ``K_values``, ``trials`` or ``methods`` (each
        record has its own seed key and method).
    """

    K_values: list[int]
    sigma: float | str
    N: int
    k: int
    eps: float
    n_test: int
    trials: int
    split: float
    methods: list[str]


# what a value of kclass.K and of digits.eps may be (the methods: those registered, see _methods)
K_RULE = Interval(int, 2)
EPS_RULE = Rule(lambda e: is_number(e) and EPS_MIN <= e <= EPS_MAX, eps_allowed())


def _methods(key: str, names) -> list:
    """``kclass.methods`` / ``digits.methods``: distinct names of registered methods."""
    return [str(m) for m in sweep_values(key, names, Options(*method_classes()), f"{key}=[rr,alibi]")]


def _packages(names) -> tuple:
    """The packages whose code the methods ``names`` run (:func:`~labeldp_sim.harness.kinds.code_packages`)."""
    table = method_classes()
    return code_packages("kclass", [table[name] for name in names])


def _staged(names) -> bool:
    """Whether a method of ``names`` spends a first stage on ``split`` of the samples (LP-2ST)."""
    table = method_classes()
    return any(table[name].staged for name in names)


def _check_eps_fits(key: str, eps: list, methods: list) -> None:
    """Every ε within what the methods' mechanisms can represent in float64 (RR: e^ε + K − 1
    must not round to e^ε), so that no trial fails on a worker with the mechanism's key."""
    limit = max_epsilon(methods)
    for e in eps:
        check(e <= limit, key, e, f"numbers in [{EPS_MIN:g}, {limit:.4g}] for methods {', '.join(methods)} "
              "(beyond it their mechanisms' probabilities round to 0 or 1 in float64)")


def validate_kclass(cfg) -> KClassSpec:
    """Check a ``kind: kclass`` configuration and return its :class:`KClassSpec`.

    Every error names its ``kclass.*`` key; nothing is computed or created.
    """
    basics = validate_common(cfg, "kclass")
    keys = ("K", "sigma", "N", "k", "eps", "n_test", "trials", "split", "methods")
    kc = config_node(cfg, "kclass", keys, required=keys)
    K_values = sweep_values("kclass.K", kc["K"], K_RULE, "kclass.K=[2,5,10]")
    sigma = kc["sigma"]
    # σ² and 1/(2σ²) must stay normal float64 numbers (the posterior and the Bayes accuracy use both)
    sigma_allowed = f"a number in [{SIGMA_MIN:g}, {SIGMA_MAX:g}] or the string '2/K'"
    if isinstance(sigma, str):
        check(sigma.replace(" ", "") == "2/K", "kclass.sigma", sigma, sigma_allowed)
        sigma = "2/K"
    else:
        check(is_number(sigma) and SIGMA_MIN <= sigma <= SIGMA_MAX, "kclass.sigma", sigma, sigma_allowed)
        sigma = float(sigma)
    N, k = kc["N"], kc["k"]
    check(is_int(N) and 2 <= N <= MAX_N, "kclass.N", N, "integers 2 <= N <= 2**53")
    check(is_int(k) and 1 <= k <= N, "kclass.k", k, f"integers 1 <= k <= N = {N}")
    eps = kc["eps"]
    check(is_number(eps) and EPS_MIN <= eps <= EPS_MAX, "kclass.eps", eps, eps_allowed())
    for key in ("n_test", "trials"):
        check(is_int(kc[key]) and kc[key] >= 1, f"kclass.{key}", kc[key], "integer >= 1")
    split = kc["split"]
    check(is_number(split) and 0 < split < 1, "kclass.split", split, "finite numbers in (0, 1)")
    names = _methods("kclass.methods", kc["methods"])
    _check_eps_fits("kclass.eps", [eps], names)
    if _staged(names):
        # LP-2ST's stage 1 (split·N samples in stream order) trains the prior with a
        # k-NN; stage 2 (the rest) must not be empty (see method_scores)
        n1 = max(k, int(round(split * N)))
        if not (split * N >= k and n1 < N):
            raise ConfigError("kclass.split", split,
                              f"split*N >= k and round(split*N) < N (N = {N}, k = {k}: "
                              f"split in [{k / N:.6g}, {(N - 0.5) / N:.6g})): LP-2ST trains its "
                              "stage-1 prior by kNN on split*N samples and privatizes the rest")
    check_memory(kclass_trial_needs(int(N), int(k), int(kc["n_test"]), max(int(K) for K in K_values),
                                    float(split), names), basics.runner, f"at K = {max(K_values)}")
    check_plan_size(len(K_values) * int(kc["trials"]) * len(names), "kclass.trials", kc["trials"], basics.runner)
    return KClassSpec.of(basics, cfg, _packages(names), K_values=[int(K) for K in K_values], sigma=sigma, N=int(N),
                         k=int(k), eps=float(eps), n_test=int(kc["n_test"]), trials=int(kc["trials"]),
                         split=float(split), methods=names)


def kclass_trial_needs(N: int, k: int, n_test: int, K: int, split: float, names) -> list:
    """The arrays one K-class trial (:func:`synthetic_trial`) holds at its peak, as lower bounds.

    Throughout: the N training points (features and label, 24 B each), the
    test points with their K posteriors and their k neighbours (int64).  Then,
    one method at a time, the larger of: the vote (N × K label vectors and the
    neighbours' n_test × k × K, float64) and LP-2ST's prior (its (N − n1)
    stage-2 samples' k stage-1 neighbours and their N1 × K one-hots, float64).
    """
    N_, k_, n_, K_ = float(N), float(k), float(n_test), float(K)
    Nk, nk, Kk, kk = ({"kclass.N": (N, N_)}, {"kclass.n_test": (n_test, n_)}, {"kclass.K": (K, K_)},
                      {"kclass.k": (k, k_)})
    needs = [Need(24.0 * N_, f"N = {N:,} training samples", Nk),
             Need(8.0 * n_ * (2 + K_ + k_), f"n_test = {n_test:,} test points with K = {K:,} posteriors and "
                  f"k = {k:,} neighbours", {**nk, **Kk, **kk})]
    vote = [Need(8.0 * N_ * K_, f"N × K = {N:,} × {K:,} label vectors (float64)", {**Nk, **Kk}),
            Need(8.0 * n_ * k_ * K_, f"n_test × k × K = {n_test:,} × {k:,} × {K:,} neighbour label vectors "
                 "(float64)", {**nk, **kk, **Kk})]
    phases = [vote]
    if _staged(names):
        n1 = max(k_, round(split * N_))
        n2 = max(0.0, N_ - n1)
        phases.append([Need(8.0 * n2 * k_ * (K_ + 1) + 8.0 * n1 * K_, f"LP-2ST's {n2:,.0f} stage-2 samples × "
                            f"k = {k:,} stage-1 neighbours × K = {K:,} (float64)", {**Nk, **kk, **Kk})])
    return needs + max(phases, key=lambda phase: sum(n.bytes for n in phase))


# scikit-learn's bundled digits (load_digits) has this many images; validation uses the
# number instead of loading the data set (tests/test_config.py checks it)
DIGITS_SAMPLES = 1797


@dataclass(kw_only=True)
class DigitsSpec(JobSpec):
    """The ``kclass_digits`` experiment, validated by :func:`validate_digits` (with the fields of
    every :class:`JobSpec`).

    Attributes
    ----------
    eps : list of float
        Privacy budgets ``digits.eps``.
    splits : int
        Random train/test splits per ε.
    test_fraction : float
        Share of the images in the test set.
    k : int
        kNN neighbours.
    split : float
        LP-2ST's stage-1 share of the training set.
    methods : list of str
    config_key : str
        Key of every (ε, split, method) record: ``k``, ``test_fraction``,
        ``split`` and ``seed``, not the ε list, the number of splits or the
        methods (each record has its own seed key and method).
    """

    eps: list[float]
    splits: int
    test_fraction: float
    k: int
    split: float
    methods: list[str]


def validate_digits(cfg) -> DigitsSpec:
    """Check a ``kind: digits`` configuration and return its :class:`DigitsSpec`.

    Every error names its ``digits.*`` key.  The sizes follow
    :func:`_digits_trial`: ``round(test_fraction · 1797)`` test images, the rest
    for training, and LP-2ST's first stage takes ``split`` of the training set.
    Nothing is computed or created, and the data set is not loaded.
    """
    basics = validate_common(cfg, "digits")
    keys = ("eps", "splits", "test_fraction", "k", "split", "methods")
    dg = config_node(cfg, "digits", keys, required=keys)
    eps = sweep_values("digits.eps", dg["eps"], EPS_RULE, "digits.eps=[0.5,1,2]")
    splits = dg["splits"]
    check(is_int(splits) and splits >= 1, "digits.splits", splits, "integer >= 1")
    fraction = dg["test_fraction"]
    n_test = int(round(fraction * DIGITS_SAMPLES)) if is_number(fraction) else 0
    check(is_number(fraction) and 0 < fraction < 1 and 1 <= n_test < DIGITS_SAMPLES,
          "digits.test_fraction", fraction,
          f"finite numbers in (0, 1) leaving at least one test and one training image "
          f"({DIGITS_SAMPLES} images)")
    train = DIGITS_SAMPLES - n_test
    split = dg["split"]
    check(is_number(split) and 0 < split < 1, "digits.split", split, "finite numbers in (0, 1)")
    names = _methods("digits.methods", dg["methods"])
    _check_eps_fits("digits.eps", eps, names)
    k = dg["k"]
    lp_2st = _staged(names)
    # the k-NN runs on the training set, and LP-2ST's prior on its first stage alone
    most = int(np.floor(split * train)) if lp_2st else train
    check(is_int(k) and 1 <= k <= most, "digits.k", k,
          f"integers 1 <= k <= {most} (" + (f"LP-2ST's stage 1: split*train = {split:g}*{train}"
                                            if lp_2st else f"the {train} training images") + ")")
    if lp_2st and not int(round(split * train)) < train:
        raise ConfigError("digits.split", split, f"values with round(split*{train}) < {train} "
                          "(LP-2ST privatizes the rest of the training set in stage 2)")
    check_plan_size(len(eps) * int(splits) * len(names), "digits.splits", splits, basics.runner)
    return DigitsSpec.of(basics, cfg, _packages(names), eps=[float(e) for e in eps], splits=int(splits),
                         test_fraction=float(fraction), k=int(k), split=float(split), methods=names)


KCLASS_TRIALS = Schema("kclass_trials", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("method", "TEXT"), Column("K", "INTEGER"), Column("trial", "INTEGER"),
    Column("sigma", "TEXT"), Column("N", "INTEGER"), Column("k", "INTEGER", sql="k_neighbours"),
    Column("eps", "REAL"), Column("accuracy", "REAL"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key", "method"))

DIGITS_TRIALS = Schema("digits_trials", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("method", "TEXT"), Column("eps", "REAL"), Column("split", "INTEGER"),
    Column("accuracy", "REAL"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key", "method"))


class _MethodTrialPlan(Plan):
    """Trials that each yield one record per method, keyed (seed_key, method).

    A trial whose methods are all stored is skipped; one that lacks some
    computes only those (each method has its own stream, so the numbers are the
    ones a full trial would give).
    """


    @abstractmethod
    def trials(self) -> dict:
        """seed_key -> the arguments that identify the trial."""

    @abstractmethod
    def call(self, trial, methods):
        """A ``delayed`` call computing ``methods`` of one trial."""

    def wanted(self) -> list:
        return [(key, m) for key in self.trials() for m in self.spec.methods]

    def tasks(self, todo: list) -> list:
        missing: dict = {}
        for key, method in todo:
            missing.setdefault(key, []).append(method)
        trials = self.trials()
        return [self.call(trials[key], methods) for key, methods in missing.items()]


def _kclass_records(name, K, sigma, N, k, eps, n_test, split, methods, seed, trial) -> pd.DataFrame:
    frame = pd.DataFrame(synthetic_trial(name, K, sigma, N, k, eps, n_test, split, methods, seed,
                                          trial))
    frame["seed_key"] = f"K{K}-{trial}"
    for key, value in (("sigma", str(sigma)), ("N", N), ("k", k), ("eps", eps)):
        frame[key] = value
    return frame


class KClassPlan(_MethodTrialPlan):
    """A ``kclass_fig*`` experiment: every K × trial × method."""

    schema = KCLASS_TRIALS

    def trials(self) -> dict:
        return {f"K{K}-{t}": (K, t) for K in self.spec.K_values for t in range(self.spec.trials)}

    def call(self, trial, methods):
        s = self.spec
        K, t = trial
        return delayed(_kclass_records)(s.name, K, s.sigma, s.N, s.k, s.eps, s.n_test, s.split,
                                        methods, s.seed, t)


def _digits_trial(X, y, eps, methods, k, test_fraction, seed, split_index, split):
    rng = keyed_rng(seed, "digits", "split", split_index)
    order = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    _, neighbours = cKDTree(X[train]).query(X[test], k=k)
    rows = []
    for method in methods:
        start = time.perf_counter()
        predictions = method_scores(method, X[train], y[train], 10, eps, neighbours,
                                    keyed_rng(seed, "digits", method, eps, split_index), k, split)
        rows.append({"eps": eps, "split": split_index, "method": method,
                     "accuracy": float(np.mean(predictions == y[test])),
                     "seconds": time.perf_counter() - start})
    return rows


def digits_records(eps, methods, k, test_fraction, seed, split_index, split) -> pd.DataFrame:
    from sklearn.datasets import load_digits

    data = load_digits()
    frame = pd.DataFrame(_digits_trial(data.data / 16.0, data.target, eps, methods, k,
                                       test_fraction, seed, split_index, split))
    frame["seed_key"] = f"eps{eps!r}-{split_index}"
    return frame


class DigitsPlan(_MethodTrialPlan):
    """``kclass_digits``: every ε × random split × method."""

    schema = DIGITS_TRIALS

    def trials(self) -> dict:
        return {f"eps{float(e)!r}-{s}": (float(e), s) for e in self.spec.eps
                for s in range(self.spec.splits)}

    def call(self, trial, methods):
        s = self.spec
        eps, split_index = trial
        return delayed(digits_records)(eps, methods, s.k, s.test_fraction, s.seed, split_index,
                                        s.split)
