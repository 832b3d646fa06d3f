r"""Privacy audit of every mechanism: an exact privacy-loss check and a black-box lower bound (SPEC §6).

``labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]`` runs,
for each mechanism of the rate cells (Table I of papers/000) and of the K-class
experiments (papers/002), at its claimed ε (1 by default):

**Exact check.**  The privacy loss of a mechanism M under a neighbour relation ~ is

    L(M) = sup_{D ~ D'} sup_{S} log P(M(D) ∈ S) / P(M(D') ∈ S),

and M is ε-DP iff L(M) ≤ ε.  Where the law of the output is known in closed form
the audit computes L from the mechanism's *own law methods* — the ones its
``report``/``release`` draws from (``bit_probabilities``, ``keep_probability``,
``transition_matrix``, ``selection_probabilities``/``weight``, ``location``/``scale``,
``location_and_scale``, ``count_scale``/``sum_scale``) — over a set of worst-case
neighbours, so a change to those methods moves the number:

- independent bits (RAPPOR (11), joint RAPPOR): the worst output takes, bit by bit,
  the larger of log(p_j/p'_j) and log((1−p_j)/(1−p'_j)), so
  L = max_{y,y'} Σ_j max(log p_j/p'_j, log (1−p_j)/(1−p'_j))  (the bound (15) is e^(ε/2)·e^(ε/2));
- finite outputs (RR, RRWithPrior): L = max_{i,i',j} log M[i,j]/M[i',j] over the
  transition matrix (an output possible under one input only gives L = ∞);
- exponential mechanism (17)/(31): the selection probabilities over an enumerated
  range of count vectors, L = max |log P(c|n) − log P(c|n')|; its closed-form
  supremum 2·weight is approached as the score gap grows, never reached;
- Laplace mechanisms (23)/(28)/(33)/(34), the joint Laplace vector, ALIBI: the
  density ratio of Lap(μ, b) and Lap(μ', b) is at most exp(‖μ−μ'‖₁/b) (attained on
  a quadrant), so L = max ‖Δμ‖₁/b over the neighbours; neighbours whose scales
  differ, or where one releases a constant and the other noise, give L = ∞.

**Black-box audit (DP-Sniper / StatDP style).**  M outputs are drawn under D and
under D' (fixed seeds).  The first half of each sample *chooses* an event E:
outputs are scored by an estimated log likelihood ratio (the histogram of
the codes for finite outputs; a per-coordinate quantile histogram, summed as a
naive-Bayes score, for real vectors) and E = {score ≥ t} with t maximising the
bound below on the first half.  The second half *tests* it:

    ε_lower = log( p̂_low(E | D) / p̂_up(E | D') ),

with one-sided Clopper–Pearson bounds at level α/4 each, in both directions
(D against D', D' against D, each with its own event).  The four bounds hold
together with probability ≥ 1 − α (α = 1e-6), and for a mechanism that is ε-DP
log P(E|D)/P(E|D') ≤ ε for every E, so P(ε_lower > ε) ≤ α.  The black box sees
only outputs: it catches what the law methods do not say (a report that skips its
noise, a report whose length follows the labels, a prior built from the user's
own label), but it can only give a *lower* bound on L.

**Planted mutants** (test fixtures of the audit, never used by the product): each
breaks one mechanism in one way; the audit must call it "caught".

**Careless inputs** (:class:`Careless`, registered with :func:`register_careless`):
each is a call a careless caller could make — a label 0.5 or −1, a cube index
past n_cells, NaN, samples of shape (m, 2) for d = 1, an ε whose probabilities
float64 cannot represent.  The mechanism must refuse it at its boundary with one
:class:`~labeldp_sim.core.errors.ConfigError` line naming the argument: the row
says "refused", and "ACCEPTED" (the call ran) or "WRONG ERROR" (another
exception: a traceback for the user, or a line naming another argument) fail the
audit.

**Stated limitation: low-order bits (Mironov 2012).**  For every mechanism with
real-valued outputs (the Laplace-based ones) the black box is run once more on
the same draws, on the event family "sign, binade and last mantissa bit of the
first output coordinate" (:func:`low_bit_codes`).  Floating-point Laplace noise
leaks through those bits far beyond e^ε.  The mechanisms are simulation
mechanisms that draw from the papers' continuous laws, which the rates are
about; the leak is a known, stated limitation (README, "Privacy: threat model
and what the audit covers"), reported with its ε_lower in rows of kind
"stated limitation" that never fail the audit.

Outputs: ``<out>/audit.csv`` and ``<out>/audit.md``, written atomically.
"""

from __future__ import annotations

import csv
import os
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.stats import beta

from ..core.errors import MISSING, ConfigError, first_line
from ..core.store import atomic_write
from .protocols import Mechanism, Privacy
from .rappor import RAPPOR

__all__ = ["ALPHA", "TOL", "DEFAULT_DRAWS", "QUICK_DRAWS", "EPSILON", "Recipe", "Case", "Careless", "Result",
           "Direction", "bits_loss", "matrix_loss", "clopper_pearson_lower", "register_cases",
           "register_careless", "calls", "builds", "clopper_pearson_upper", "black_box", "low_bit_codes", "cases",
           "careless_cases", "run_case", "run_careless", "run_audit", "write_outputs", "parse_args", "main",
           "MECHANISM", "CARELESS", "LIMITATION"]

ALPHA = 1e-6           # black-box: P(ε_lower > true loss) ≤ ALPHA per mechanism
TOL = 1e-9             # exact check: loss > ε + TOL fails (float rounding of log e^ε)
DEFAULT_DRAWS = 2_000_000
QUICK_DRAWS = 200_000
MIN_DRAWS, MAX_DRAWS = 1_000, 100_000_000
EPSILON = 1.0          # the claimed ε of every audited mechanism
T = 1.0                # clipping level; neighbours use labels ±10T, beyond it
BIG = 10 * T
CHUNK = 200_000        # outputs per report/release call (memory only; fixed, so draws are reproducible)
N_BINS = 50            # quantile bins per real coordinate in the black box's score
MAX_THRESHOLDS = 2000  # candidate thresholds of the score

# the kinds of rows besides "mutant of <mechanism>"
MECHANISM, CARELESS, LIMITATION = "mechanism", "careless input", "stated limitation"
LOW_BIT_EVENT = ("black box on the same draws, events on the sign, binade and last mantissa bit of the "
                 "first output coordinate (Mironov 2012)")

OPTIONS = "--draws N, --seed S, --out DIR, --quick, --no-mutants, -h/--help"
USAGE = "usage: labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]"


# --------------------------------------------------------------------------- exact losses


def _log_ratio(a, b):
    """log(a/b) elementwise with the conventions of a privacy loss: 0/0 → −∞ (no output), a/0 → ∞."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(a) - np.log(b)
    return np.where(a == 0, -np.inf, np.where(b == 0, np.inf, out))


def bits_loss(P: np.ndarray) -> float:
    r"""Exact loss of independent bits: row i of ``P`` is P(Z_j = 1 | input i).

    For a product law the worst output z picks, bit by bit, the larger ratio:
    L = max_{i,i'} Σ_j max(log P_ij/P_i'j, log (1−P_ij)/(1−P_i'j)).  For RAPPOR
    (11) the two bits y, y' each give ε/2 and the rest 0, so L = ε (15).
    """
    P = np.asarray(P, dtype=float)
    up = _log_ratio(P[:, None, :], P[None, :, :])
    down = _log_ratio(1 - P[:, None, :], 1 - P[None, :, :])
    return float(np.max(np.maximum(up, down).sum(axis=2)))


def matrix_loss(M: np.ndarray) -> float:
    r"""Exact loss of a finite channel: L = max_{i,i',j} log M[i,j]/M[i',j] (M[i,j] = P(Z=j | Y=i))."""
    M = np.asarray(M, dtype=float)
    return float(np.max(_log_ratio(M[:, None, :], M[None, :, :])))








def _rappor_exact(mech: RAPPOR):
    return max(bits_loss(mech.bit_probabilities(np.arange(K), K)) for K in (2, 3, 4, 8)), (
        "per-bit worst ratio of bit_probabilities (11), all label pairs, K ∈ {2,3,4,8} (15)")




































# --------------------------------------------------------------------------- black-box draws
# Each draw(mech, side, n, rng) returns n outputs under D (side 0) or D' (side 1): int64 codes for
# finite outputs, an (n, k) float array for real ones.  Central mechanisms are run on data sets
# of n independent copies of a small cube configuration: cubes are released independently, so one
# release gives n draws of the configuration's output.


def bits_code(Z: np.ndarray) -> np.ndarray:
    """One int64 per row of bits, with a leading 1 so that rows of different lengths differ."""
    Z = np.asarray(Z, dtype=np.int64)
    L = Z.shape[1]
    if L > 62:
        raise ValueError(f"{L} bits do not fit one int64 code")
    return Z @ (np.int64(1) << np.arange(L, dtype=np.int64)) + (np.int64(1) << np.int64(L))


K_BB = 4  # classes in the black-box pairs of the K-class mechanisms


def _draw_rappor(mech, side, n, rng):
    y = np.full(n, (0, K_BB - 1)[side])
    return bits_code(mech.report(y, rng, K=K_BB))




























# --------------------------------------------------------------------------- black-box statistics


def clopper_pearson_lower(k, n, a):
    """One-sided lower Clopper–Pearson bound: P(p < bound) ≤ a; 0 when k = 0."""
    k = np.asarray(k, dtype=float)
    return np.where(k > 0, beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)


def clopper_pearson_upper(k, n, a):
    """One-sided upper Clopper–Pearson bound: P(p > bound) ≤ a; 1 when k = n."""
    k = np.asarray(k, dtype=float)
    return np.where(k < n, beta.isf(a, k + 1, np.maximum(n - k, 1)), 1.0)


def _log_bound(k_p, k_q, n, a):
    """log(CP_lower(k_p)/CP_upper(k_q)), −∞ when the lower bound is 0."""
    low, up = clopper_pearson_lower(k_p, n, a), clopper_pearson_upper(k_q, n, a)
    with np.errstate(divide="ignore"):
        return np.log(low) - np.log(up)


def _scores(train0, train1):
    """An estimated log likelihood ratio log P(x|D)/P(x|D') fitted on the first halves.

    Finite outputs: the smoothed histogram of the codes.  Real vectors: per coordinate,
    the smoothed histogram on N_BINS quantile bins of the pooled draws, summed over the
    coordinates (naive Bayes; exact in form for independent Laplace noise per coordinate).
    Returns a function from outputs to scores.
    """
    if train0.ndim == 1:
        codes = np.unique(np.concatenate([train0, train1]))
        c0 = np.bincount(np.searchsorted(codes, train0), minlength=len(codes))
        c1 = np.bincount(np.searchsorted(codes, train1), minlength=len(codes))
        table = np.log((c0 + 0.5) / (c1 + 0.5))

        def score(x):
            idx = np.clip(np.searchsorted(codes, x), 0, len(codes) - 1)
            return np.where(codes[idx] == x, table[idx], 0.0)  # an unseen output scores 0

        return score
    edges, tables = [], []
    for c in range(train0.shape[1]):
        pooled = np.concatenate([train0[:, c], train1[:, c]])
        e = np.unique(np.quantile(pooled, np.linspace(0, 1, N_BINS + 1)[1:-1]))
        c0 = np.bincount(np.searchsorted(e, train0[:, c], side="right"), minlength=len(e) + 1)
        c1 = np.bincount(np.searchsorted(e, train1[:, c], side="right"), minlength=len(e) + 1)
        edges.append(e)
        tables.append(np.log((c0 + 0.5) / (c1 + 0.5)))

    def score(x):
        return sum(table[np.searchsorted(e, x[:, c], side="right")]
                   for c, (e, table) in enumerate(zip(edges, tables)))

    return score


def _count_at_least(sorted_values, thresholds):
    return len(sorted_values) - np.searchsorted(sorted_values, thresholds, side="left")


@dataclass
class Direction:
    """One direction of the black box: the event {±score ≥ threshold} and its test counts."""

    eps_lower: float
    threshold: float
    k_p: int
    k_q: int
    n: int
    label: str


def _one_direction(s_p_train, s_q_train, s_p_test, s_q_test, a, label):
    """Choose t on the training halves (best bound there), then bound on the test halves."""
    sp, sq = np.sort(s_p_train), np.sort(s_q_train)
    candidates = np.unique(np.concatenate([sp, sq]))
    if len(candidates) > MAX_THRESHOLDS:
        candidates = np.unique(np.quantile(candidates, np.linspace(0, 1, MAX_THRESHOLDS)))
    objective = _log_bound(_count_at_least(sp, candidates), _count_at_least(sq, candidates), len(sp), a)
    t = candidates[int(np.argmax(objective))]
    k_p, k_q = int(np.sum(s_p_test >= t)), int(np.sum(s_q_test >= t))
    eps = float(_log_bound(k_p, k_q, len(s_p_test), a))
    return Direction(eps, float(t), k_p, k_q, len(s_p_test), label)


def black_box(x0: np.ndarray, x1: np.ndarray, alpha: float = ALPHA) -> Direction:
    r"""ε_lower from outputs ``x0`` ~ M(D) and ``x1`` ~ M(D') (equal numbers of draws).

    The first halves choose, for each direction, an event E = {±score ≥ t}; the second
    halves give k_P, k_Q hits out of m and

        ε_lower = log( CP_lower(k_P; m, α/4) / CP_upper(k_Q; m, α/4) ),

    the larger over the two directions (P, Q) = (D, D') and (D', D).  The events depend
    on the first halves only, so the four one-sided bounds hold together with
    probability ≥ 1 − α and P(ε_lower > sup_E log P(E|D)/P(E|D')) ≤ α.
    """
    n = min(len(x0), len(x1)) // 2
    train0, test0, train1, test1 = x0[:n], x0[n:2 * n], x1[:n], x1[n:2 * n]
    score = _scores(train0, train1)
    s0_tr, s1_tr, s0_te, s1_te = score(train0), score(train1), score(test0), score(test1)
    a = alpha / 4
    forward = _one_direction(s0_tr, s1_tr, s0_te, s1_te, a, "D vs D'")
    backward = _one_direction(-s1_tr, -s0_tr, -s1_te, -s0_te, a, "D' vs D")
    return max(forward, backward, key=lambda r: r.eps_lower)


def low_bit_codes(x: np.ndarray) -> np.ndarray:
    """Sign, binade (exponent) and last mantissa bit of each output's first coordinate, as int64 codes.

    An event on these codes is a post-processing of the output, so for a mechanism
    whose floats really had its law it could not give ε_lower > ε; floating-point
    Laplace noise makes the last bit depend on the location (Mironov 2012).
    """
    first = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(len(x), -1)[:, 0])
    bits = first.view(np.uint64)
    return ((bits >> np.uint64(52)) << np.uint64(1) | (bits & np.uint64(1))).astype(np.int64)


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Recipe:
    """How one family of mechanisms is audited.

    Attributes
    ----------
    neighbours : str
        The neighbour relation, in words.
    pair : str
        The black box's pair (D, D'), in words.
    exact : callable
        ``exact(mech) -> (loss, method)`` from the mechanism's law methods.
    draw : callable
        ``draw(mech, side, n, rng) -> outputs`` under D (side 0) or D' (side 1).
    """

    neighbours: str
    pair: str
    exact: Callable
    draw: Callable


LABEL_NB = "label neighbours: one user's label changed, features kept"
FULL_NB = "one record replaced: features and label"





# --------------------------------------------------------------------------- planted mutants
# TEST FIXTURES OF THE AUDIT.  Each class breaks one mechanism in one way; the audit must call
# every one of them "caught".  Nothing in the product uses them.












class _MutantFullEpsRAPPOR(RAPPOR):
    """Fixture: e^ε per bit instead of e^(ε/2) (loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        e = np.exp(self.epsilon)
        self.p, self.q = e / (e + 1), 1 / (e + 1)


class _MutantInferredKRAPPOR(RAPPOR):
    """Fixture: K inferred from the labels, so the report's length depends on them."""

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return super().report(y, rng, K=max(2, int(np.max(y)) + 1), cells=cells, n_cells=n_cells)
















@dataclass(frozen=True)
class Careless:
    """A careless input: ``call(mechanism)`` must raise one :class:`ConfigError` line naming ``key``.

    Attributes
    ----------
    name : str
        The row's name, ``"<audited mechanism>: <what>"``, e.g. ``"rr: label 0.5"``.
    mechanism : object
        A mechanism, or its class when the call builds one (an ε the class refuses).
    call : callable
        ``call(mechanism)``; what a careless caller would run.
    key : str
        The argument the refusal must name.
    careless : str
        What is careless, in words.
    """

    name: str
    mechanism: object
    call: Callable
    key: str
    careless: str


@dataclass
class Case:
    """One audited mechanism: a real one (``mutant_of`` None) or a planted mutant."""

    name: str
    mechanism: Mechanism
    recipe: Recipe
    mutant_of: str | None = None
    broken: str = ""

    @property
    def expected(self) -> str:
        return "private" if self.mutant_of is None else "caught"


_PROVIDERS: list = []
_CARELESS: list = []


def register_cases(provider: Callable) -> Callable:
    """Register ``provider(eps) -> (cases, mutants)``: a paper package's audited mechanisms.

    Each paper package registers the recipes of its own mechanisms when it is
    imported (``labeldp_sim/<paper>/audit.py``), so this module knows no paper.
    """
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)
    return provider


def register_careless(provider: Callable) -> Callable:
    """Register ``provider(eps) -> list of Careless``: a paper package's careless inputs."""
    if provider not in _CARELESS:
        _CARELESS.append(provider)
    return provider


def careless_cases(eps: float = EPSILON) -> list[Careless]:
    """Every registered careless input, in registration order."""
    return [case for provider in _CARELESS for case in provider(eps)]


def calls(method: str, *args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that runs ``mechanism.<method>(*args, **kwargs)``."""
    return lambda mechanism: getattr(mechanism, method)(*args, **kwargs)


def builds(*args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that builds the mechanism class with these arguments."""
    return lambda cls: cls(*args, **kwargs)


RAPPOR_RECIPE = Recipe(LABEL_NB, "y = 0 vs y' = 3, K = 4", _rappor_exact, _draw_rappor)


@register_cases
def _rappor_cases(eps):
    return ([Case("rappor", RAPPOR(eps), RAPPOR_RECIPE)],
            [Case("rappor: e^ε per bit", _MutantFullEpsRAPPOR(eps), RAPPOR_RECIPE, "rappor", "p = e^ε/(e^ε+1)"),
             Case("rappor: K inferred from labels", _MutantInferredKRAPPOR(eps), RAPPOR_RECIPE, "rappor",
                  "K = max(y)+1")])


@register_careless
def _rappor_careless(eps):
    rng = np.random.default_rng(0)
    return [Careless("rappor: label 0.5", RAPPOR(eps), calls("report", np.array([0.5, 1.0]), rng, K=K_BB), "y",
                     "y = 0.5: no class, so no bit of its own"),
            Careless("rappor: label K", RAPPOR(eps), calls("report", np.array([K_BB]), rng, K=K_BB), "y",
                     f"y = {K_BB} with K = {K_BB}"),
            Careless("rappor: ε = 80", RAPPOR, builds(80.0), "epsilon",
                     "ε = 80: p = e^(ε/2)/(e^(ε/2)+1) rounds to 1 in float64")]


def cases(eps: float = EPSILON, mutants: bool = True) -> list[Case]:
    """The registry: every real mechanism, then (with ``mutants``) every planted mutant.

    Parameters
    ----------
    eps : float
        The claimed ε each mechanism is built with.
    mutants : bool
        Include the planted mutants (test fixtures of the audit).

    Returns
    -------
    list of Case
        In the order the paper packages registered them (shared RAPPOR first).
    """
    real, planted = [], []
    for provider in _PROVIDERS:
        got, broken = provider(eps)
        real += got
        planted += broken
    return real + (planted if mutants else [])


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    """One row of audit.csv."""

    mechanism: str
    kind: str
    privacy: str
    neighbours: str
    pair: str
    claimed_eps: float
    exact_loss: float
    exact_method: str
    eps_lower: float
    direction: str
    p_hat: float
    q_hat: float
    draws: int
    caught_by: str
    verdict: str
    expected: str
    broken: str = ""
    message: str = ""
    seconds: float = field(default=0.0)

    @property
    def ok(self) -> bool:
        return self.verdict == self.expected


def _rng(seed, name, side):
    # keyed on the case's name: adding a case does not move the others' draws
    return np.random.default_rng([seed, zlib.crc32(name.encode()), side])


def _draw_all(case: Case, side: int, draws: int, seed: int):
    rng = _rng(seed, case.name, side)
    parts = [case.recipe.draw(case.mechanism, side, min(CHUNK, draws - start), rng)
             for start in range(0, draws, CHUNK)]
    if parts[0].ndim == 1:
        return np.concatenate(parts)
    width = max(p.shape[1] for p in parts)
    if any(p.shape[1] != width for p in parts):  # cannot happen for a fixed-length output
        raise ValueError(f"{case.name}: outputs of different widths")
    return np.concatenate(parts)


def _privacy_text(mechanism) -> str:
    privacy = getattr(mechanism, "privacy", None)
    return f"{privacy.protects}, {privacy.model}" if isinstance(privacy, Privacy) else ""


def run_case(case: Case, draws: int, seed: int = 0, alpha: float = ALPHA, eps: float = EPSILON) -> Result:
    """Exact check and black-box audit of one case.

    Parameters
    ----------
    case : Case
    draws : int
        Outputs drawn under each of D and D' (half choose the event, half test it).
    seed : int
        Root seed; each case's streams are keyed on (seed, case name, side).
    alpha : float
        The black box's level: P(ε_lower > true loss) ≤ alpha.
    eps : float
        The claimed ε.

    Returns
    -------
    Result
        The verdict is "private"/"FAILED" for a mechanism, "caught"/"MISSED" for a mutant;
        a check fails when exact loss > ε + TOL, or ε_lower > ε.
    """
    return _run_case(case, draws, seed, alpha, eps)[0]


def _run_case(case: Case, draws: int, seed: int, alpha: float, eps: float):
    """:func:`run_case`'s result, and the draws (x0, x1) it bounded."""
    start = time.perf_counter()
    loss, method = case.recipe.exact(case.mechanism)
    x0, x1 = _draw_all(case, 0, draws, seed), _draw_all(case, 1, draws, seed)
    if x0.ndim != x1.ndim or (x0.ndim == 2 and x0.shape[1] != x1.shape[1]):
        # real outputs whose width follows the input: the width alone tells D from D'
        x0, x1 = np.full(len(x0), 0, dtype=np.int64), np.full(len(x1), 1, dtype=np.int64)
    bb = black_box(x0, x1, alpha)
    exact_fails, bb_fails = loss > eps + TOL, bb.eps_lower > eps
    caught_by = "+".join(name for name, fails in (("exact", exact_fails), ("black-box", bb_fails)) if fails)
    if case.mutant_of is None:
        verdict = "FAILED" if caught_by else "private"
    else:
        verdict = "caught" if caught_by else "MISSED"
    result = Result(
        mechanism=case.name, kind=MECHANISM if case.mutant_of is None else f"mutant of {case.mutant_of}",
        privacy=_privacy_text(case.mechanism), neighbours=case.recipe.neighbours,
        pair=case.recipe.pair, claimed_eps=eps, exact_loss=float(loss), exact_method=method,
        eps_lower=max(bb.eps_lower, 0.0), direction=bb.label, p_hat=bb.k_p / bb.n, q_hat=bb.k_q / bb.n,
        draws=draws, caught_by=caught_by, verdict=verdict, expected=case.expected, broken=case.broken,
        seconds=time.perf_counter() - start)
    return result, x0, x1


def low_bit_result(case: Case, x0: np.ndarray, x1: np.ndarray, alpha: float = ALPHA,
                   eps: float = EPSILON) -> Result:
    """The stated limitation of ``case``: the black box on :func:`low_bit_codes` of its draws.

    The verdict is always "stated": the row measures a known limitation of
    floating-point Laplace noise (README), it is not a check that can fail.
    """
    start = time.perf_counter()
    bb = black_box(low_bit_codes(x0), low_bit_codes(x1), alpha)
    note = ("ε_lower > ε: floating-point Laplace noise leaks through its low-order bits" if bb.eps_lower > eps
            else "no leak beyond ε seen at this draw count")
    return Result(
        mechanism=f"{case.name}: low-order bits", kind=LIMITATION, privacy=_privacy_text(case.mechanism),
        neighbours=case.recipe.neighbours, pair=case.recipe.pair, claimed_eps=eps, exact_loss=float("nan"),
        exact_method=LOW_BIT_EVENT, eps_lower=max(bb.eps_lower, 0.0), direction=bb.label,
        p_hat=bb.k_p / bb.n, q_hat=bb.k_q / bb.n, draws=len(x0), caught_by="", verdict="stated",
        expected="stated", broken="simulation mechanism: floating-point Laplace noise", message=note,
        seconds=time.perf_counter() - start)


def run_careless(case: Careless, eps: float = EPSILON) -> Result:
    """Run one careless input: "refused" when it raises one :class:`ConfigError` line naming its key.

    Returns
    -------
    Result
        Verdict "refused" (expected), "ACCEPTED" when the call returned, or "WRONG ERROR" when
        it raised anything else: another exception is a traceback for the user, and a line
        naming another argument sends the user to the wrong place.
    """
    start = time.perf_counter()
    try:
        case.call(case.mechanism)
    except ConfigError as err:
        message = str(err)
        right = "\n" not in message and message.startswith(f"{case.key}: ")
        verdict = "refused" if right else "WRONG ERROR"
    except Exception as err:  # whatever escapes is what the careless caller would see: a traceback
        message, verdict = first_line(err), "WRONG ERROR"
    else:
        message, verdict = "the call ran: the mechanism accepted it", "ACCEPTED"
    nan = float("nan")
    return Result(
        mechanism=case.name, kind=CARELESS, privacy=_privacy_text(case.mechanism), neighbours="", pair="",
        claimed_eps=eps, exact_loss=nan, exact_method="", eps_lower=nan, direction="", p_hat=nan, q_hat=nan,
        draws=0, caught_by="", verdict=verdict, expected="refused", broken=case.careless, message=message,
        seconds=time.perf_counter() - start)


def run_audit(draws: int = DEFAULT_DRAWS, seed: int = 0, mutants: bool = True, alpha: float = ALPHA,
              progress: Callable | None = None) -> list[Result]:
    """Audit every case of :func:`cases` and every careless input (at ε = :data:`EPSILON`).

    Parameters
    ----------
    draws, seed, alpha : see :func:`run_case`
    mutants : bool
        Also audit the planted mutants.
    progress : callable, optional
        Called with each :class:`Result` as it is ready.

    Returns
    -------
    list of Result
        The mechanisms, the mutants, the careless inputs, then the stated limitation of
        each mechanism with real-valued outputs (computed from that mechanism's draws).
    """
    results, limitations = [], []

    def emit(result):
        results.append(result)
        if progress is not None:
            progress(result)

    for case in cases(EPSILON, mutants):
        result, x0, x1 = _run_case(case, draws, seed, alpha, EPSILON)
        emit(result)
        if case.mutant_of is None and x0.dtype.kind == "f":
            limitations.append(low_bit_result(case, x0, x1, alpha, EPSILON))
    for careless in careless_cases(EPSILON):
        emit(run_careless(careless, EPSILON))
    for result in limitations:
        emit(result)
    return results


# --------------------------------------------------------------------------- outputs

COLUMNS = ["mechanism", "kind", "privacy", "neighbours", "pair", "claimed_eps", "exact_loss", "exact_method",
           "eps_lower", "direction", "p_hat", "q_hat", "draws", "caught_by", "verdict", "expected", "broken",
           "message", "seconds"]


def _num(x, digits=4):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    if np.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def _csv_value(name, value):
    if isinstance(value, float):
        return "inf" if np.isinf(value) else repr(round(value, 12)) if name != "seconds" else f"{value:.3f}"
    return value


def _cell(text) -> str:
    """Text for a markdown table cell: a bare | would end the cell."""
    return str(text).replace("|", "\\|")


def _markdown(results, draws, seed, alpha, seconds):
    real = [r for r in results if r.kind == MECHANISM]
    careless = [r for r in results if r.kind == CARELESS]
    limitations = [r for r in results if r.kind == LIMITATION]
    mutants = [r for r in results if r.kind.startswith("mutant of ")]
    lines = [
        "# Privacy audit",
        "",
        f"Claimed ε = {EPSILON:g} for every mechanism; {draws:,} draws per input (D and D'): the first "
        f"half chooses the event, the second half bounds it; Clopper–Pearson at α = {alpha:g} per "
        f"mechanism (α/4 per one-sided bound, two directions); exact-check tolerance {TOL:g}; "
        f"seed {seed}; {seconds:.1f} s.",
        "",
        "A mechanism is **private** when its exact loss is ≤ ε and ε_lower ≤ ε; a planted mutant (a "
        "test fixture of the audit) is **caught** when either check exceeds ε; a careless input is "
        "**refused** when the mechanism raises one line naming the argument. The low-order-bit rows "
        "are a known, stated limitation and never fail the audit. "
        "ε_lower is a lower bound on the privacy loss with confidence 1 − α; the exact loss is the "
        "worst log-ratio computed from the mechanism's law methods over the neighbours listed.",
        "",
        "## Mechanisms",
        "",
        "| mechanism | privacy | neighbours | black-box pair | claimed ε | exact loss | ε_lower | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in real:
        lines.append(f"| {r.mechanism} | {r.privacy} | {_cell(r.neighbours)} | {_cell(r.pair)} | "
                     f"{r.claimed_eps:g} | {_num(r.exact_loss)} | {_num(r.eps_lower)} | {r.verdict} |")
    if mutants:
        lines += ["", "## Planted mutants (test fixtures of the audit)", "",
                  "| mutant | of | what is broken | privacy | claimed ε | exact loss | ε_lower | caught by "
                  "| verdict |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in mutants:
            lines.append(f"| {r.mechanism} | {r.kind.removeprefix('mutant of ')} | {_cell(r.broken)} | "
                         f"{r.privacy} | {r.claimed_eps:g} | {_num(r.exact_loss)} | {_num(r.eps_lower)} | "
                         f"{r.caught_by or '—'} | {r.verdict} |")
    if careless:
        lines += ["", "## Careless inputs refused at the mechanism boundary", "",
                  "Each row runs a call a careless caller could make. It must raise one line naming the "
                  "argument (**refused**); **ACCEPTED** (the call ran) or **WRONG ERROR** (a traceback, or a "
                  "line naming another argument) fails the audit.", "",
                  "| case | of | careless input | verdict | what the caller sees |", "|---|---|---|---|---|"]
        lines += [f"| {r.mechanism} | {_of(r)} | {_cell(r.broken)} | {r.verdict} | `{_cell(r.message)}` |"
                  for r in careless]
    if limitations:
        lines += ["", "## Known, stated limitation: floating-point low-order bits (Mironov 2012)", "",
                  "Not a failure of the audit. These are simulation mechanisms: they draw from the papers' "
                  "continuous laws in floating point, and floating-point Laplace noise leaks through its "
                  "low-order bits. Each row reruns the black box on the draws of the mechanism above, with "
                  "events on the sign, binade and last mantissa bit of the first output coordinate; "
                  "ε_lower > ε measures the leak. Do not release real data with these mechanisms: use a "
                  "floating-point-safe library (e.g. OpenDP's discrete Laplace). README: \"Privacy: threat "
                  "model and what the audit covers\".", "",
                  "| mechanism | privacy | claimed ε | ε_lower (low-order bits) | draws | verdict |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r.mechanism} | {r.privacy} | {r.claimed_eps:g} | {_num(r.eps_lower)} | {r.draws:,} | "
                  f"{r.verdict} |" for r in limitations]
    lines += ["", "## Exact checks", "", "| mechanism | method |", "|---|---|"]
    lines += [f"| {r.mechanism} | {_cell(r.exact_method)} |" for r in real]
    lines += ["", f"Draws per input: {draws:,} (of each of D and D'). "
              "An audit can refute a privacy claim, never prove one: the exact check is only as good "
              "as the law methods and the neighbours enumerated, and ε_lower only bounds the loss "
              "from below.", ""]
    return "\n".join(lines)


def write_outputs(results: list[Result], out: Path, draws: int, seed: int, alpha: float, seconds: float):
    """``out/audit.csv`` and ``out/audit.md``, each written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def write_csv(path):
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for r in results:
                writer.writerow([_csv_value(c, getattr(r, c)) for c in COLUMNS])

    atomic_write(out / "audit.csv", write_csv)
    text = _markdown(results, draws, seed, alpha, seconds)
    atomic_write(out / "audit.md", lambda path: Path(path).write_text(text, encoding="utf-8"))


NAME_WIDTH = 46  # "ul_alg2_coordinate (randomize): low-order bits"


def _of(r: Result) -> str:
    return r.mechanism.split(":")[0]


def _table_line(r: Result) -> str:
    flag = "" if r.ok else f"   <-- expected {r.expected}"
    return (f"{r.mechanism:<{NAME_WIDTH}} {r.privacy:<24} {_num(r.exact_loss):>8} {_num(r.eps_lower):>8} "
            f"{r.verdict:<8} {r.caught_by or r.message}{flag}")


_SECTION = {CARELESS: "careless inputs: each must be refused in one line naming the argument",
            LIMITATION: "stated limitation, not a failure: ε_lower of the low-order bits of floating-point "
                        "Laplace noise (Mironov 2012)"}


def _printer():
    """A progress callback printing each row, with a heading where a new kind of row starts."""
    seen = set()

    def show(r: Result):
        if r.kind in _SECTION and r.kind not in seen:
            seen.add(r.kind)
            print(f"-- {_SECTION[r.kind]}", flush=True)
        print(_table_line(r), flush=True)

    return show


# --------------------------------------------------------------------------- entry point


@dataclass
class Options:
    draws: int = DEFAULT_DRAWS
    seed: int = 0
    out: Path = Path("results")
    mutants: bool = True
    help: bool = False


def _parse_int(name, value, low, high, what):
    try:
        number = int(str(value), 10)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise ConfigError(name, value, f"{what}, an integer in [{low}, {high}]")
    return number


def _check_out(value):
    if value == "":
        raise ConfigError("--out", value, "a directory (created if missing)")
    path = Path(value)
    if path.exists():
        if not path.is_dir():
            raise ConfigError("--out", value, "a directory (this path is a file)")
        probe = path
    else:
        probe = path.parent if str(path.parent) else Path(".")
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise ConfigError("--out", value, "a directory (a parent of this path is a file)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError("--out", value, f"a writable directory ({probe} is not writable)")
    return path


def _make_out(path: Path) -> None:
    """Create the output directory now, so that a path that cannot hold it fails before the audit."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", str(path), f"a directory that can be created ({err.strerror})") from None


def parse_args(argv: list[str]) -> Options:
    """Parse the audit's options; raise :class:`ConfigError` (one line) on any bad one."""
    opts, seen, quick, draws = Options(), set(), False, None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = str(args[i])
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in ("--quick", "--no-mutants", "-h", "--help"):
            if eq:
                raise ConfigError(name, arg, "the flag alone, without a value")
        elif name in ("--draws", "--seed", "--out"):
            if not eq:
                if i + 1 >= len(args):
                    raise ConfigError(name, MISSING, {"--draws": "an integer N", "--seed": "an integer S",
                                                      "--out": "a directory"}[name] + " after it")
                i += 1
                value = str(args[i])
        else:
            raise ConfigError("option", arg, OPTIONS)
        canonical = "--help" if name == "-h" else name
        if canonical in seen:
            raise ConfigError(name, arg, "each option once")
        seen.add(canonical)
        if name == "--quick":
            quick = True
        elif name == "--no-mutants":
            opts.mutants = False
        elif name in ("-h", "--help"):
            opts.help = True
        elif name == "--draws":
            draws = _parse_int(name, value, MIN_DRAWS, MAX_DRAWS, "draws per input")
        elif name == "--seed":
            opts.seed = _parse_int(name, value, 0, 2**63 - 1, "the root seed")
        else:
            opts.out = _check_out(value)
        i += 1
    # --draws, when given, wins over --quick's reduced count
    opts.draws = draws if draws is not None else (QUICK_DRAWS if quick else DEFAULT_DRAWS)
    return opts


def main(argv: list[str]) -> int:
    """``labeldp-sim audit``: run the audit, write ``<out>/audit.{csv,md}``, print a table.

    Returns 0 when every mechanism is "private", every mutant "caught" and every careless
    input "refused" (the stated limitation rows never fail), 1 otherwise, and 2 (one line
    on stderr, nothing computed or written) on a bad option.
    """
    try:
        opts = parse_args(argv)
        if not opts.help:
            _make_out(opts.out)
    except ConfigError as err:
        print(f"labeldp-sim: error: {err}", file=sys.stderr)
        return 2
    if opts.help:
        print(USAGE)
        print(f"  --draws N     outputs drawn per input (default {DEFAULT_DRAWS:,}; "
              f"--quick: {QUICK_DRAWS:,})")
        print("  --seed S      root seed (default 0)")
        print("  --out DIR     where audit.csv and audit.md go (default results)")
        print("  --no-mutants  audit the real mechanisms only")
        return 0
    print(f"privacy audit: ε = {EPSILON:g}, {opts.draws:,} draws per input, α = {ALPHA:g}, "
          f"seed {opts.seed}")
    print(f"{'mechanism':<{NAME_WIDTH}} {'privacy':<24} {'exact':>8} {'ε_lower':>8} verdict  caught by")
    start = time.perf_counter()
    results = run_audit(opts.draws, opts.seed, opts.mutants, ALPHA, progress=_printer())
    seconds = time.perf_counter() - start
    write_outputs(results, opts.out, opts.draws, opts.seed, ALPHA, seconds)
    bad = [r for r in results if not r.ok]
    print(f"{len(results)} audited in {seconds:.1f} s; "
          + ("every verdict as expected" if not bad else f"{len(bad)} unexpected: "
             + ", ".join(r.mechanism for r in bad))
          + f"; wrote {opts.out / 'audit.csv'} and {opts.out / 'audit.md'}")
    return 0 if not bad else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
