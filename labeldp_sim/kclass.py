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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import integrate
from scipy.special import erf, logsumexp
from scipy.spatial import cKDTree

from .errors import check
from .grid import stable_words
from .mechanisms import ALIBI, RAPPOR, RandomizedResponse, RRWithPrior

__all__ = ["GaussianCircle", "METHODS", "method_scores", "run_kclass", "run_digits"]

METHODS = ("rr", "lp_2st", "alibi", "vector_approximation", "non_private")
LABELS = {"rr": "RR", "lp_2st": "LP-2ST (RRWithPrior)", "alibi": "ALIBI",
          "vector_approximation": "vector approximation (RAPPOR)", "non_private": "non-private"}


class GaussianCircle:
    r"""K isotropic Gaussian classes N(μ_j, σ²I) in R², μ_j = (cos 2πj/K, sin 2πj/K), uniform prior.

    Parameters
    ----------
    K : int ≥ 2
    sigma : float > 0 or the string "2/K"
    """

    def __init__(self, K, sigma):
        check(int(K) == K and K >= 2, "K", K, "integer >= 2")
        if isinstance(sigma, str):
            check(sigma.replace(" ", "") == "2/K", "sigma", sigma, "a number > 0 or '2/K'")
            sigma = 2.0 / K
        check(np.isfinite(sigma) and sigma > 0, "sigma", sigma, "a number > 0 or '2/K'")
        self.K, self.sigma = int(K), float(sigma)
        angles = 2 * np.pi * np.arange(self.K) / self.K
        self.means = np.stack([np.cos(angles), np.sin(angles)], axis=1)

    def sample(self, n, rng):
        y = rng.integers(self.K, size=n)
        return self.means[y] + self.sigma * rng.standard_normal((n, 2)), y

    def posterior(self, X):
        """η_j(x) = P(Y = j | x), shape (n, K)."""
        sq = ((X[:, None, :] - self.means[None, :, :]) ** 2).sum(axis=2)
        logits = -sq / (2 * self.sigma ** 2)
        return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))

    def bayes_accuracy(self) -> float:
        r"""P(c*(X) = Y): the Bayes rule picks the nearest mean, so this is the mass of a
        N((1, 0), σ²I) in the sector |θ| < π/K, integrated in polar coordinates (error < 1e-8)."""
        s, half = self.sigma, np.pi / self.K

        def radial(theta):
            # ∫_0^∞ r φ(r cosθ − 1) φ(r sinθ) dr in closed form
            c = np.cos(theta)
            a = c / s
            tail = np.exp(-1 / (2 * s ** 2)) / (2 * np.pi)
            gauss = np.exp(-(np.sin(theta) ** 2) / (2 * s ** 2)) * a / np.sqrt(2 * np.pi)
            return tail + gauss * (0.5 * (1 + erf(a / np.sqrt(2))))

        value, _ = integrate.quad(radial, -half, half, epsabs=1e-10, epsrel=1e-10, limit=200)
        return float(value)


def _one_hot(labels, K):
    out = np.zeros((len(labels), K))
    out[np.arange(len(labels)), labels] = 1.0
    return out


def _knn_vote(vectors, neighbours, rng):
    """argmax of the mean label vector over each query's neighbours, ties at random."""
    scores = vectors[neighbours].mean(axis=1)
    scores = scores + 1e-9 * rng.random(scores.shape)
    return np.argmax(scores, axis=1)


def method_scores(method, X, y, K, eps, neighbours, rng, k, split=0.5):
    """Predicted class at the queries whose training neighbours are ``neighbours`` (n_q, k).

    ``lp_2st``: the first ``split`` share of the samples (in stream order) gets RR
    labels; a kNN on them gives each remaining sample a prior (its k nearest
    stage-1 RR labels, debiased through RR's transition matrix); RRWithPrior
    privatizes the rest.  The final kNN uses every sample's privatized label.
    """
    if method == "non_private":
        return _knn_vote(_one_hot(y, K), neighbours, rng)
    if method == "rr":
        return _knn_vote(_one_hot(RandomizedResponse(eps).privatize(y, rng, K=K), K), neighbours, rng)
    if method == "alibi":
        mech = ALIBI(eps)
        return _knn_vote(mech.soft_labels(mech.privatize(y, rng, K=K)), neighbours, rng)
    if method == "vector_approximation":
        return _knn_vote(RAPPOR(eps).privatize(y, rng, K=K).astype(float), neighbours, rng)
    if method == "lp_2st":
        n1 = max(k, int(round(split * len(y))))
        rr = RandomizedResponse(eps)
        z1 = rr.privatize(y[:n1], rng, K=K)
        _, idx = cKDTree(X[:n1]).query(X[n1:], k=min(k, n1))
        freq = _one_hot(z1, K)[idx.reshape(len(idx), -1)].mean(axis=1)
        e = np.exp(eps)
        keep, other = e / (e + K - 1), 1 / (e + K - 1)
        prior = np.clip((freq - other) / (keep - other), 0, None) + 1e-12
        prior /= prior.sum(axis=1, keepdims=True)
        z2 = RRWithPrior(eps).privatize(y[n1:], rng, prior=prior)
        return _knn_vote(_one_hot(np.concatenate([z1, z2]), K), neighbours, rng)
    raise ValueError(method)


def _stream(seed, *key):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=stable_words(repr(key))))


def _synthetic_trial(name, K, sigma, N, k, eps, n_test, split, methods, seed, trial):
    start = time.perf_counter()
    family = GaussianCircle(K, sigma)
    rng = _stream(seed, name, "data", K, trial)
    X, y = family.sample(N, rng)
    X_test, _ = family.sample(n_test, rng)
    eta = family.posterior(X_test)
    _, neighbours = cKDTree(X).query(X_test, k=k)
    rows = []
    for method in methods:
        predictions = method_scores(method, X, y, K, eps, neighbours,
                                    _stream(seed, name, method, K, trial), k, split)
        rows.append({"K": K, "trial": trial, "method": method,
                     "accuracy": float(eta[np.arange(n_test), predictions].mean())})
    for row in rows:
        row["seconds"] = (time.perf_counter() - start) / len(rows)
    return rows


@dataclass
class KClassSpec:
    """A ``kclass_fig*`` experiment (validated)."""

    name: str
    K_values: list
    sigma: object
    N: int
    k: int
    eps: float
    n_test: int
    trials: int
    split: float
    methods: list
    seed: int
    n_jobs: int


def validate_kclass(cfg) -> KClassSpec:
    kc = cfg.kclass
    K_values = list(kc.K)
    check(len(K_values) > 0, "kclass.K", K_values, "a non-empty list of integers >= 2")
    for K in K_values:
        check(isinstance(K, int) and K >= 2, "kclass.K", K, "integers >= 2")
    GaussianCircle(2, kc.sigma)  # validates sigma
    check(isinstance(kc.N, int) and kc.N >= 2, "kclass.N", kc.N, "integer >= 2")
    check(isinstance(kc.k, int) and 1 <= kc.k <= kc.N, "kclass.k", kc.k, f"1 <= k <= N = {kc.N}")
    check(np.isfinite(kc.eps) and kc.eps > 0, "kclass.eps", kc.eps, "> 0")
    check(isinstance(kc.trials, int) and kc.trials >= 1, "kclass.trials", kc.trials, "integer >= 1")
    check(isinstance(kc.n_test, int) and kc.n_test >= 1, "kclass.n_test", kc.n_test, "integer >= 1")
    check(0 < kc.split < 1, "kclass.split", kc.split, "(0, 1)")
    for m in kc.methods:
        check(m in METHODS, "kclass.methods", m, METHODS)
    return KClassSpec(cfg.experiment_name, K_values, kc.sigma, int(kc.N), int(kc.k), float(kc.eps),
                      int(kc.n_test), int(kc.trials), float(kc.split), list(kc.methods), int(cfg.seed),
                      int(cfg.runner.n_jobs))


def _summarize(trials: pd.DataFrame, keys) -> pd.DataFrame:
    summary = trials.groupby(keys, sort=False).accuracy.agg(["mean", "std", "size"]).reset_index()
    summary["se"] = summary["std"] / np.sqrt(summary["size"])
    summary["ci_low"] = summary["mean"] - 1.96 * summary.se
    summary["ci_high"] = summary["mean"] + 1.96 * summary.se
    return summary.rename(columns={"size": "trials"}).drop(columns="std")


def run_kclass(spec: KClassSpec, out: Path) -> pd.DataFrame:
    """Run one ``kclass_fig*`` experiment; write trials.csv, summary.csv, accuracy.png, accuracy.md."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    tasks = [delayed(_synthetic_trial)(spec.name, K, spec.sigma, spec.N, spec.k, spec.eps, spec.n_test,
                                       spec.split, spec.methods, spec.seed, t)
             for K in spec.K_values for t in range(spec.trials)]
    rows = [r for chunk in Parallel(n_jobs=spec.n_jobs, batch_size=4)(tasks) for r in chunk]
    trials = pd.DataFrame(rows)
    trials.insert(0, "experiment", spec.name)
    for key, value in (("sigma", spec.sigma), ("N", spec.N), ("k", spec.k), ("eps", spec.eps)):
        trials[key] = value
    trials.to_csv(out / "trials.csv", index=False)
    summary = _summarize(trials, ["K", "method"])
    bayes = {K: GaussianCircle(K, spec.sigma).bayes_accuracy() for K in spec.K_values}
    summary["bayes_accuracy"] = summary.K.map(bayes)
    summary.to_csv(out / "summary.csv", index=False)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for method, part in summary.groupby("method", sort=False):
        ax.errorbar(part.K, part["mean"], yerr=1.96 * part.se, marker="o", capsize=3,
                    label=LABELS[method])
    ax.plot(list(bayes), list(bayes.values()), "--", color="purple", label="Bayes")
    ax.set_xlabel("K (classes)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{spec.name}: σ = {spec.sigma}, ε = {spec.eps:g}, k = {spec.k}, N = {spec.N}, "
                 f"{spec.trials} trials", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=110)
    plt.close(fig)

    table = summary.pivot(index="K", columns="method", values="mean")
    half = summary.pivot(index="K", columns="method", values="se") * 1.96
    lines = [f"# {spec.name}: accuracy (mean ± 95% CI half-width, {spec.trials} trials)", "",
             "| K | Bayes | " + " | ".join(LABELS[m] for m in spec.methods) + " |",
             "|---|---|" + "---|" * len(spec.methods)]
    for K in spec.K_values:
        cells = " | ".join(f"{table.loc[K, m]:.3f} ± {half.loc[K, m]:.3f}" for m in spec.methods)
        lines.append(f"| {K} | {bayes[K]:.3f} | {cells} |")
    (out / "accuracy.md").write_text("\n".join(lines) + "\n")
    return summary


def _digits_trial(X, y, eps, methods, k, test_fraction, seed, split_index, split):
    rng = _stream(seed, "digits", "split", split_index)
    order = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    _, neighbours = cKDTree(X[train]).query(X[test], k=k)
    rows = []
    for method in methods:
        predictions = method_scores(method, X[train], y[train], 10, eps, neighbours,
                                    _stream(seed, "digits", method, eps, split_index), k, split)
        rows.append({"eps": eps, "split": split_index, "method": method,
                     "accuracy": float(np.mean(predictions == y[test]))})
    return rows


def run_digits(cfg, out: Path) -> pd.DataFrame:
    """scikit-learn's digits (bundled, no download): test accuracy vs ε per method."""
    from sklearn.datasets import load_digits

    dg = cfg.digits
    for e in dg.eps:
        check(np.isfinite(e) and e > 0, "digits.eps", e, "> 0")
    check(isinstance(dg.splits, int) and dg.splits >= 1, "digits.splits", dg.splits, "integer >= 1")
    check(isinstance(dg.k, int) and dg.k >= 1, "digits.k", dg.k, "integer >= 1")
    check(0 < dg.test_fraction < 1, "digits.test_fraction", dg.test_fraction, "(0, 1)")
    for m in dg.methods:
        check(m in METHODS, "digits.methods", m, METHODS)
    data = load_digits()
    X, y = data.data / 16.0, data.target
    out.mkdir(parents=True, exist_ok=True)
    tasks = [delayed(_digits_trial)(X, y, float(e), list(dg.methods), int(dg.k), float(dg.test_fraction),
                                    int(cfg.seed), s, float(dg.split))
             for e in dg.eps for s in range(dg.splits)]
    rows = [r for chunk in Parallel(n_jobs=int(cfg.runner.n_jobs))(tasks) for r in chunk]
    trials = pd.DataFrame(rows)
    trials.to_csv(out / "accuracy.csv", index=False)
    summary = _summarize(trials, ["eps", "method"])
    summary.to_csv(out / "summary.csv", index=False)
    table = summary.pivot(index="method", columns="eps", values="mean").reindex(list(dg.methods))
    half = summary.pivot(index="method", columns="eps", values="se").reindex(list(dg.methods)) * 1.96
    lines = [f"# kclass_digits: test accuracy on scikit-learn digits (K = 10, kNN k = {dg.k}, "
             f"{dg.splits} random {1 - dg.test_fraction:.0%}/{dg.test_fraction:.0%} splits; "
             "mean ± 95% CI half-width)", "",
             "| method | " + " | ".join(f"ε = {e:g}" for e in dg.eps) + " |",
             "|---|" + "---|" * len(dg.eps)]
    for m in dg.methods:
        lines.append(f"| {LABELS[m]} | " + " | ".join(
            f"{table.loc[m, e]:.3f} ± {half.loc[m, e]:.3f}" for e in dg.eps) + " |")
    (out / "accuracy.md").write_text("\n".join(lines) + "\n")
    return summary
