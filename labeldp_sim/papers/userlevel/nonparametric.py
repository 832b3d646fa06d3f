r"""Nonparametric classification and regression under user-level ε-LDP (papers/003, Appendices E.1, F.1).

:class:`Algorithm4` (classification, Theorem 9) and :class:`Algorithm5`
(regression, Theorem 11) cut [0, 1]^d into cubes, Hadamard-code the users'
per-cube statistics (:mod:`.hadamard`), estimate every coordinate with
Algorithm 1 in the groups of Algorithm 2 (:mod:`.mean_algorithms`) and score
the resulting cube estimator exactly (:mod:`.integrals`).

Sufficient statistics (SPEC §7)
-------------------------------
A sample (X, Y) falls in one of 2B *cells* (cube b, label y) with
P(b, y) = (p_b + y q_b)/2, because P(Y = 1 | x) = (1 + η(x))/2.  The
per-sample statistic of coordinate k is a function of the cell:
U_k = y·H_K[k, b] (136) or V_k = H_K[k, b] (192), so a user is described
exactly by its m samples' cell counts.  On the sufficient path a group's users
are drawn by :func:`~.data.draw_users` over the cells' statistic vectors;
when the group runs one coordinate the cells merge into the two points ±1
with P(U_k = +1) = π_k = (1 + Q_k)/2, Q_k = Σ_l H_kl q_l (134), and the
group's users are Multinomial(n_group, Binomial(m, π_k) pmf) over the m + 1
atoms.  The per-user path draws every user's m samples (X_ij, Y_ij) from f
and η and counts their cells: it is the reference.

Decisions (see also SPEC §§4-7)
-------------------------------
* Cubes: B_1 = ⌈1/l⌉ cubes per axis of length 1/B_1 ≤ l, B = B_1^d, and
  K = 2^⌈log₂ B⌉ (130); cubes B+1..K carry q = 0 (132).
* Algorithm 1 per coordinate with D = 1, h = 4/√m and Δ = √(ln n/m), n the
  number of users of the whole protocol (Lemma 6's Δ = D√(ln(Kn)/m) with n the
  group size).  The ε regimes follow Algorithm 2 (:func:`~.mean_algorithms.algorithm2_plan`):
  K (classification) or 2K (regression) coordinates.
* The cube length l is chosen before the regime: l from the ε ≤ 1 / medium
  formula, and the low-privacy formula when ε ≥ K ln n for the resulting K.
* Regression: η̂_k = clip(q̂_k/p̂_k, ±T) when p̂_k > 0, and 0 when p̂_k ≤ 0
  (the ratio has no meaning there; (212)-(213) assume p̂_k ≥ p_k/2).
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from labeldp_sim.harness.components import Interval, Nullable
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import POSITIVE
from labeldp_sim.papers.userlevel.data import UserValues, draw_users
from labeldp_sim.papers.userlevel.exact import classification_risk, coordinate_variances, decoded_sd, decoded_variance, regression_risk_gaussian
from labeldp_sim.papers.userlevel.hadamard import fwht, hadamard_decode, hadamard_matrix
from labeldp_sim.papers.userlevel.integrals import CubeMoments, cube_index, excess_risk, regression_risk
from labeldp_sim.papers.userlevel.label_families import BETA, LabelFamily, LabelInstance
from labeldp_sim.papers.userlevel.learning_base import LearningEstimator, validate_point, safe_log, is_number, positive
from labeldp_sim.papers.userlevel.mean import STAGE1_MIN
from labeldp_sim.papers.userlevel.mean_algorithms import TwoStageTuning, algorithm2_plan, split_sizes, twostage_details
from labeldp_sim.papers.userlevel.mechanisms import coordinate

__all__ = ["Algorithm4", "Algorithm5", "MAX_CUBES"]

MAX_CUBES = 1 << 16  # estimator cubes B (and Hadamard order K ≤ 2B): bounds the K×K Hadamard matrix
_SAMPLES_CHUNK = 1 << 21  # samples drawn at once on the per-user path: bounds memory, not the law

# the parameters of _CubeProtocol, which Algorithms 4 and 5 both take
_CUBE_PARAMETERS = {"c_l": POSITIVE, "beta": BETA, "c2": POSITIVE, "min_stage1": POSITIVE,
                    "l": Nullable(Interval(float, 0, 1, closed="right"), "tuned")}


def _cell_probs(mom: CubeMoments) -> np.ndarray:
    """P(cube b, Y = y) = (p_b + y q_b)/2, cells ordered (b, +1), (b, −1)."""
    probs = np.stack([(mom.p + mom.q) / 2, (mom.p - mom.q) / 2], axis=1).ravel()
    probs = np.maximum(probs, 0.0)
    return probs / probs.sum()


def _cell_stats(H, B, K, coords) -> np.ndarray:
    r"""Per-cell statistic of each coordinate, shape (2B, len(coords)).

    Coordinate k < K: U_k = y H_K[k, b] (136); k ≥ K (regression): V_{k−K} = H_K[k−K, b] (192).
    """
    cols = []
    for k in coords:
        h = H[k % K, :B]
        cols.append(np.stack([h, -h] if k < K else [h, h], axis=1).ravel())
    return np.stack(cols, axis=1)


def _draw_cells(inst: LabelInstance, rng, n_users, m, B_axis, stats, probs, path) -> UserValues:
    """``n_users`` users' data as counts over the 2B cells, with the cells' statistics as the support.

    ``per_user``: every user's m samples (X_ij, Y_ij) from f and η, counted per cell
    (the literal protocol).  ``sufficient``: :func:`~.data.draw_users` over the
    cells' statistics with P(b, y) = (p_b + y q_b)/2, equal statistics merged
    (two atoms ±1 for one coordinate: Multinomial over Binomial(m, π) users).
    """
    if path == "sufficient":
        return draw_users(rng, n_users, m, stats, probs, "sufficient")
    n_cells = len(probs)
    atoms = np.zeros((int(n_users), n_cells), dtype=np.int64)
    rows = max(1, _SAMPLES_CHUNK // (m * inst.d))
    for start in range(0, int(n_users), rows):
        k = min(rows, int(n_users) - start)
        x, y = inst.sample(rng, k * m)
        cell = 2 * cube_index(x, B_axis) + (y < 0)
        atoms[start:start + k] = np.bincount(np.arange(k).repeat(m) * n_cells + cell,
                                             minlength=k * n_cells).reshape(k, n_cells)
    return UserValues(atoms, np.ones(int(n_users), dtype=np.int64), True, support=stats, m=m)


class _CubeProtocol(LearningEstimator):
    r"""Shared code of Algorithms 4 and 5: cubes, Hadamard coordinates, Algorithm 1 per coordinate.

    ``_coords_per_cube`` = 1 (Q only) or 2 (Q and P).  Subclasses give the cube
    length ``_cube_length(n, m, eps, d, K_guess)`` and ``_score``.
    """

    _coords_per_cube = 1

    def __init__(self, c_l, beta, c2, min_stage1, l):
        self.c_l = positive("c_l", c_l)
        check(is_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1]")
        self.beta = float(beta)
        self.c2 = positive("c2", c2)
        self.min_stage1 = positive("min_stage1", min_stage1)
        check(l is None or (is_number(l) and 0 < l <= 1), "l", l, "None (tuned) or in (0, 1]")
        self.l = None if l is None else float(l)

    # ----------------------------------------------------------------- tuning

    @abstractmethod
    def _length(self, n, m, eps, d, low) -> float:
        """Cube length at (n, m, ε, d); ``low``: the low-privacy formula."""

    def tuning(self, n, m, eps, d) -> dict:
        """(l, B_1, B, K, regime, groups, ε per Algorithm 1 instance) at (n, m, ε, d); see the module docstring."""
        def grid(l):
            B_axis = max(1, math.ceil(1.0 / l - 1e-9))
            B = B_axis ** d
            check(B <= MAX_CUBES, "l", l, f"a cube length giving at most {MAX_CUBES} cubes (got {B})")
            return B_axis, B, 1 << max(0, math.ceil(math.log2(B) - 1e-12))

        if self.l is not None:
            l, low = self.l, False
        else:
            l = min(1.0, self._length(n, m, eps, d, low=False))
            _, _, K = grid(l)
            low = eps >= self._coords_per_cube * K * math.log(n)
            if low:
                l = min(1.0, self._length(n, m, eps, d, low=True))
        B_axis, B, K = grid(l)
        regime, groups, eps_inst = algorithm2_plan(self._coords_per_cube * K, eps, n)
        return {"l": l, "B_axis": B_axis, "B": B, "K": K, "regime": regime, "plan": groups,
                "eps_instance": eps_inst, "low_privacy_l": low}

    def groups(self, n, m, eps, d) -> tuple:
        """(tuning, group sizes) at (n, m, ε, d), checked: at most ``MAX_CUBES`` cubes, 2 users per group."""
        tun = self.tuning(n, m, eps, d)
        plan = tun["plan"]
        sizes = split_sizes(n, len(plan))
        check(int(sizes.min()) >= 2, "n", n, f"at least {2 * len(plan)} users: {len(plan)} groups ({tun['regime']} "
              f"privacy, {self._coords_per_cube * tun['K']} coordinates), each with a stage I and a stage II user")
        return tun, sizes

    def check_point(self, family, n, m, eps, d):
        n, m, eps, d = validate_point(n, m, eps, d, "sufficient")
        self.groups(n, m, eps, d)

    # ----------------------------------------------------------------- protocol

    def _run(self, family, n, m, eps, d, rng, path):
        n, m, eps, d = validate_point(n, m, eps, d, path)
        check(isinstance(family, LabelFamily), "family", family, "a classification or regression family")
        tun, sizes = self.groups(n, m, eps, d)
        inst = family.instance(rng, n, m, eps, d)
        B_axis, B, K = tun["B_axis"], tun["B"], tun["K"]
        mom = inst.moments(B_axis)
        H = hadamard_matrix(K)
        truth = self._truth(mom, K)
        probs = _cell_probs(mom)
        plan = tun["plan"]
        tuning = self._stage_tuning(n, m)
        est = np.zeros(len(truth))
        fails = 0
        for coords, size in zip(plan, sizes):
            stats = _cell_stats(H, B, K, coords)
            n1 = int(size) // 2
            stage1 = _draw_cells(inst, rng, n1, m, B_axis, stats, probs, path)
            stage2 = _draw_cells(inst, rng, int(size) - n1, m, B_axis, stats, probs, path)
            for j, k in enumerate(coords):
                f = coordinate(j)
                out = twostage_details(stage1.map_samples(f), stage2.map_samples(f), tuning, tun["eps_instance"],
                                       rng, mu=float(truth[k]))
                est[k] = out["estimate"]
                fails += not out["stage1_ok"]
        info = {"stage1_ok": fails == 0, "stage1_failures": int(fails), **self._info(n, m, eps, tun, sizes, tuning)}
        return inst, mom, K, est, truth, info

    def _truth(self, mom: CubeMoments, K: int) -> np.ndarray:
        """The coordinates' means: Q = H_K q (134), then P = H_K p (190) for Algorithm 5 (cubes B+1..K: 0)."""
        pad = np.zeros(K - mom.B)
        truth = [fwht(np.concatenate([mom.q, pad]))]  # = hadamard_encode, without the K×K matrix
        if self._coords_per_cube == 2:
            truth.append(fwht(np.concatenate([mom.p, pad])))
        return np.concatenate(truth)

    @staticmethod
    def _stage_tuning(n, m) -> TwoStageTuning:
        """Algorithm 1 per coordinate: D = 1, h = 4/√m, Δ = √(ln n/m) (module docstring)."""
        return TwoStageTuning.theorem1(1.0, m, n)

    def _in_regime(self, info: dict) -> bool:
        """The theorem's condition n(ε²∧1) >= c2·(coordinates per cube)·(ln m + ln n) and SPEC §7's stage I size."""
        return bool(info["condition_ratio"] >= self._coords_per_cube * self.c2
                    and info["stage1_size_eps2"] >= self.min_stage1)

    def _info(self, n, m, eps, tun, sizes, tuning) -> dict:
        stage1_users = int(sizes.min()) // 2
        cond = n * min(eps ** 2, 1.0) / (safe_log(m) + safe_log(n)) if m > 1 else math.inf
        return {"groups": len(tun["plan"]), "l": tun["l"], "B": tun["B"], "K": tun["K"], "regime": tun["regime"],
                "eps_instance": tun["eps_instance"], "low_privacy_l": tun["low_privacy_l"], "h": tuning.h,
                "delta": tuning.delta, "bins": tuning.bins, "min_stage1_users": stage1_users,
                "stage1_size_eps2": stage1_users * min(tun["eps_instance"] ** 2, 1.0), "condition_ratio": cond}

    # ----------------------------------------------------------------- expected risk (no Monte Carlo)

    def _decoded_sds(self, inst: LabelInstance, n, m, eps, d) -> tuple:
        """(moments, info, sd of q̂_b, sd of p̂_b or None): the law of :mod:`.exact` at (n, m, ε, d).

        One coordinate per group (ε < 2): independent coordinates, one sd for every cube.  Larger ε:
        the coordinates of a group share its users (:func:`~.exact.decoded_variance`), sds per cube;
        for regression a group must not mix Q and P coordinates (then q̂_b and p̂_b would be correlated).
        """
        n, m, eps, d = validate_point(n, m, eps, d, "sufficient")
        tun, sizes = self.groups(n, m, eps, d)
        plan = tun["plan"]
        mom = inst.moments(tun["B_axis"])
        K = tun["K"]
        tuning = self._stage_tuning(n, m)
        truth = self._truth(mom, K)
        lam = (3 * tuning.h + 2 * tuning.delta) / tun["eps_instance"]
        n2 = sizes - sizes // 2  # stage II users of each group
        info = self._info(n, m, eps, tun, sizes, tuning)
        if all(len(coords) == 1 for coords in plan):
            per = np.empty(len(truth))
            per[np.array([coords[0] for coords in plan])] = n2
            var = coordinate_variances(truth, m, lam, per)
            sd_p = decoded_sd(var[K:]) if self._coords_per_cube == 2 else None
            return mom, info, decoded_sd(var[:K]), sd_p
        check(all(max(c) < K or min(c) >= K for c in plan), "eps", eps,
              "a value whose Algorithm 2 groups do not mix Q and P coordinates (regression, exact path)")
        P = truth[K:] if self._coords_per_cube == 2 else fwht(np.concatenate([mom.p, np.zeros(K - mom.B)]))
        sds = []
        for block, T in enumerate(np.split(truth, self._coords_per_cube)):
            chosen = [(np.asarray(c) - block * K, w) for c, w in zip(plan, n2) if (min(c) >= K) == bool(block)]
            var = decoded_variance([c for c, _ in chosen], K, T, P, m, lam, np.array([w for _, w in chosen]))
            sds.append(np.sqrt(var[:mom.B]))
        return mom, info, sds[0], (sds[1] if self._coords_per_cube == 2 else None)


class Algorithm4(_CubeProtocol):
    r"""Algorithm 4: nonparametric classification under user-level ε-LDP (Appendix E.1, Theorem 9).

    1. Cut [0, 1]^d into B = B_1^d cubes of side 1/B_1 ≤ l, K = 2^⌈log₂B⌉ (130).
    2. Sample j of user i gives U_ijk = Y_ij H_K[k, cube(X_ij)] ∈ {±1} (136),
       E U_ijk = Q_k = Σ_l H_kl q_l, q_l = ∫_{C_l} fη (132)-(135).
    3. ε ≤ 1: K groups of users; group k runs Algorithm 1 with D = 1,
       h = 4/√m, Δ = √(ln n/m) on its users' means of U_·k: Q̂_k (137).
       Larger ε: the groups of Algorithm 2 with K coordinates (⌈K/⌊ε⌋⌉ groups
       of ⌊ε⌋ coordinates at 1-LDP each; one group at ε/K per coordinate when
       ε ≥ K ln n), E.1 "Medium/Low privacy".
    4. q̂ = H_K Q̂ / K (138); predict sign(q̂_k) on C_k (139).

    Var q̂_k ≈ 4λ²/n, λ = (3h + 2Δ)/ε (SPEC §5).  Rate (19):
    (mn(ε²∧ε))^{−β(1+γ)/(2(d+β))} ln^{1+γ}n + (nm/ln n)^{−β(1+γ)/(2β+d)}.

    Tuning (SPEC §5, (167), (169), (172)): l = c_l (mn e(ε))^{−1/(2(d+β))} with
    e(ε) = ε² for ε ≤ 1 and ε above (slip 4), and l = c_l (nm/ln n)^{−1/(2β+d)}
    when ε ≥ K ln n; c_l = 6 (the SPEC's l = 6(mnε²)^{−1/4} for d = β = 1).

    Privacy (user-level ε-LDP, Definition 1).  The groups are disjoint and a
    user's whole report is produced inside its group: a stage-I user sends,
    for each coordinate of its group, the one-hot bin of its user mean plus
    Lap(2/ε') per bin (:class:`~.mechanisms.BinHistogram`: ℓ1 sensitivity 2
    for any two data sets of m samples, so ε'-LDP); a stage-II user sends, per
    coordinate, clip(mean, L − Δ, R + Δ) + Lap((3h + 2Δ)/ε')
    (:class:`~.mechanisms.ClippedMean`: range 3h + 2Δ, so ε'-LDP), where L, R
    depend only on stage-I reports (sequential interaction, Eq. (1)).  With
    c coordinates per group, c·ε' = ε (ε < 1: c = 1, ε' = ε), ⌊ε⌋·1 ≤ ε
    (medium), K·ε/K = ε (low): basic composition gives ε.  q̂ and the
    classifier are post-processing.

    Parameters
    ----------
    c_l : float
        Constant of the cube length.
    beta : float
        Hölder exponent the tuning assumes, (0, 1].
    c2 : float
        Constant of Theorem 9's condition n(ε²∧1) ≥ c2(ln m + ln n).
    min_stage1 : float
        SPEC §7: every group needs (stage-I users)·(ε'²∧1) ≥ min_stage1.
    l : float, optional
        A fixed cube length instead of the tuning.

    ``trial`` returns ``error`` = R − R* (exact given q̂), ``stage1_ok``,
    ``in_regime``, ``groups``, ``q_hat_1`` / ``q_1`` (first cube), ``sign_errors``
    and the tuning (l, B, K, regime, eps_instance, h, delta, bins, ...).
    """

    name = "alg4"
    task = "classification"
    parameters = _CUBE_PARAMETERS
    _coords_per_cube = 1

    def __init__(self, c_l=6.0, beta=1.0, c2=1.0, min_stage1=STAGE1_MIN, l=None):
        super().__init__(c_l, beta, c2, min_stage1, l)

    def _length(self, n, m, eps, d, low):
        if low:
            return self.c_l * (n * m / safe_log(n)) ** (-1.0 / (2 * self.beta + d))
        return self.c_l * (m * n * min(eps ** 2, eps)) ** (-1.0 / (2 * (d + self.beta)))

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        inst, mom, K, Q_hat, Q, info = self._run(family, n, m, eps, d, rng, path)
        q_hat = hadamard_decode(Q_hat)[:mom.B]
        info["in_regime"] = self._in_regime(info)
        info.update(error=excess_risk(q_hat, mom), q_hat_1=float(q_hat[0]), q_1=float(mom.q[0]),
                    sign_errors=int(np.sum((q_hat < 0) != (mom.q < 0))))
        return info

    exact_expected_error = True

    def expected_error(self, inst: LabelInstance, n, m, eps, d) -> dict:
        """E(R − R* | instance) with q̂_b normal (:func:`~.exact.classification_risk`), and the tuning."""
        mom, info, sd_q, _ = self._decoded_sds(inst, n, m, eps, d)
        info["in_regime"] = self._in_regime(info)
        return {**info, "error": classification_risk(mom, sd_q), "sd_q": sd_q}


class Algorithm5(_CubeProtocol):
    r"""Algorithm 5: nonparametric regression under user-level ε-LDP (Appendix F.1, Theorem 11).

    Cubes and K as in :class:`Algorithm4`.  2K coordinates: U_·k (136) with
    mean Q_k = (H_K q)_k, and V_ijk = H_K[k, cube(X_ij)] (192) with mean
    P_k = (H_K p)_k (190), p_k = ∫_{C_k} f.  ε ≤ 1: 2K groups, K for the Q_k
    (137) and K for the P_k (193), each Algorithm 1 with D = 1; larger ε: the
    groups of Algorithm 2 with 2K coordinates.  q̂ = H_K Q̂/K, p̂ = H_K P̂/K
    (194), η̂ = clip(q̂_k/p̂_k, ±T) on C_k (195) (0 where p̂_k ≤ 0).

    Rate (21): (mn(ε²∧ε)/ln²n)^{−β/(d+β)} + (mn/ln n)^{−2β/(2β+d)}.  Tuning
    (219): l = c_l (mn e(ε)/ln²n)^{−1/(2(d+β))}, e(ε) = ε² ∧ ε, and
    l = c_l (mn/ln n)^{−1/(2β+d)} when ε ≥ 2K ln n; default c_l = 2.5 (the SPEC
    fixes none: the error at n = 2^17 and 2^22, m = 2^10, ε = 1 on the sine
    family is smallest for c_l ∈ [2, 3] in a scan of {1.5, 2, 3, 4}).

    Privacy: as :class:`Algorithm4`, with 2K coordinates (each user in one
    group, one report of BinHistogram or ClippedMean outputs per coordinate of
    its group, at most ε in total by basic composition; V uses no label but is
    privatised the same way).

    Parameters
    ----------
    c_l, beta, c2, min_stage1, l : as :class:`Algorithm4` (Theorem 11's
        condition is n(ε²∧1) ≥ 2c2(ln m + ln n)).
    T : float
        Clip of η̂, > 0 (|Y| ≤ 1 here).

    ``trial`` returns ``error`` = ∫(η̂ − η)² f (exact given η̂), ``stage1_ok``,
    ``in_regime``, ``groups``, ``q_hat_1`` / ``q_1``, ``p_hat_1`` / ``p_1``,
    ``bias2`` (the error of η̂_k = q_k/p_k, Lemma 8) and the tuning.
    """

    name = "alg5"
    task = "regression"
    parameters = {**_CUBE_PARAMETERS, "T": POSITIVE}
    _coords_per_cube = 2

    def __init__(self, c_l=2.5, beta=1.0, T=1.0, c2=1.0, min_stage1=STAGE1_MIN, l=None):
        super().__init__(c_l, beta, c2, min_stage1, l)
        self.T = positive("T", T)

    def _length(self, n, m, eps, d, low):
        if low:
            return self.c_l * (m * n / safe_log(n)) ** (-1.0 / (2 * self.beta + d))
        return self.c_l * (m * n * min(eps ** 2, eps) / safe_log(n) ** 2) ** (-1.0 / (2 * (d + self.beta)))

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        inst, mom, K, est, truth, info = self._run(family, n, m, eps, d, rng, path)
        q_hat = hadamard_decode(est[:K])[:mom.B]
        p_hat = hadamard_decode(est[K:])[:mom.B]
        safe = np.where(p_hat > 0, p_hat, 1.0)
        eta_hat = np.where(p_hat > 0, np.clip(q_hat / safe, -self.T, self.T), 0.0)
        info["in_regime"] = self._in_regime(info)
        info.update(error=regression_risk(eta_hat, mom), q_hat_1=float(q_hat[0]), q_1=float(mom.q[0]),
                    p_hat_1=float(p_hat[0]), p_1=float(mom.p[0]), T=self.T,
                    bias2=regression_risk(mom.q / mom.p, mom), nonpositive_p=int(np.sum(p_hat <= 0)))
        return info

    exact_expected_error = True

    def expected_error(self, inst: LabelInstance, n, m, eps, d) -> dict:
        """E(∫(η̂ − η)²f | instance) with q̂_b, p̂_b normal (:func:`~.exact.regression_risk_gaussian`)."""
        mom, info, sd_q, sd_p = self._decoded_sds(inst, n, m, eps, d)
        info["in_regime"] = self._in_regime(info)
        return {**info, "error": regression_risk_gaussian(mom, sd_q, sd_p, self.T), "sd_q": sd_q, "sd_p": sd_p}
