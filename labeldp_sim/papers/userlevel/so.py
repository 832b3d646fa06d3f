r"""Stochastic optimisation under user-level ε-LDP (papers/003, Section 5, Theorem 8).

:class:`QuadraticSO` (SPEC §7 row SO) is the family, :class:`Algorithm3`
the protocol: t0 disjoint user groups, each step's gradient mean estimated by
Algorithm 2 (:func:`~.mean_algorithms.algorithm2`) on the gradients' Kashin
coefficients (or coordinates), then a projected gradient step.

Θ is the ball of radius ½ (it holds θ* = E X and the support of X), and
θ_{t+1} = Π_Θ(θ_t − ηg_t).  The projection is 1-Lipschitz and fixes θ*, so
(124)-(129) hold unchanged, and it gives Assumption 1(b) with D = 1: for
θ ∈ Θ, ||∇l(X, θ)|| = ||θ − X|| ≤ ½ + ½.
"""

from __future__ import annotations

import math

import numpy as np

from labeldp_sim.harness.components import Interval, Nullable, Options
from labeldp_sim.harness.errors import ConfigError, check
from labeldp_sim.papers.userlevel.contract import POSITIVE, Family
from labeldp_sim.papers.userlevel.data import draw_users
from labeldp_sim.papers.userlevel.kashin import KASHIN_K, KashinBasis
from labeldp_sim.papers.userlevel.learning_base import LearningEstimator, validate_point, family_point, safe_log, is_number, positive
from labeldp_sim.papers.userlevel.mean import STAGE1_MIN, algorithm2_error_moments
from labeldp_sim.papers.userlevel.mean_algorithms import algorithm2, algorithm2_groups, algorithm2_tuning, split_sizes

__all__ = ["SOInstance", "QuadraticSO", "Algorithm3"]


class SOInstance:
    r"""One trial's SO problem: X ~ Σ_a p_a δ_{s_a}, l(x, θ) = ½||θ − x||², Θ = ball of radius ``radius``.

    L(θ) = E l(X, θ) = ½||θ − μ||² + const, θ* = μ = E X (14); Assumption 1:
    G = 1 (∇l(x, ·) is 1-Lipschitz), γ = 1 (strong convexity), and for θ ∈ Θ,
    ||∇l(X, θ)||₂ = ||θ − X||₂ ≤ radius + max ||s_a|| = ``grad_bound``.

    Attributes
    ----------
    support : ndarray (q, d); probs : ndarray (q,); theta_star : ndarray (d,)
    G, gamma, radius, grad_bound : float
    d, m : int; params : dict
    """

    def __init__(self, support, probs, d, m, radius, params=None):
        self.support = np.asarray(support, dtype=float).reshape(len(probs), int(d))
        self.probs = np.asarray(probs, dtype=float)
        self.d, self.m = int(d), int(m)
        self.theta_star = self.probs @ self.support
        self.G, self.gamma = 1.0, 1.0
        self.radius = float(radius)
        self.grad_bound = self.radius + float(np.max(np.linalg.norm(self.support, axis=1)))
        self.params = dict(params or {})

    def grad_support(self, theta) -> np.ndarray:
        """∇_θ l(s_a, θ) = θ − s_a for every support point, shape (q, d)."""
        return np.asarray(theta, dtype=float)[None, :] - self.support

    def gradient(self, theta) -> np.ndarray:
        """∇L(θ) = θ − θ*, exact."""
        return np.asarray(theta, dtype=float) - self.theta_star

    def project(self, theta) -> np.ndarray:
        """Π_Θ: the nearest point of the ball ||θ|| ≤ radius (1-Lipschitz, fixes θ* ∈ Θ)."""
        theta = np.asarray(theta, dtype=float)
        norm = float(np.linalg.norm(theta))
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def __repr__(self):
        return f"SOInstance(d={self.d}, m={self.m}, {self.params})"


class QuadraticSO(Family):
    r"""SPEC §7 row SO: l(x, θ) = ½||θ − x||², X = ±a e_k with a = ½.

    P(X = +a e_k) = (1 + s)/(2d), P(X = −a e_k) = (1 − s)/(2d), k = 1..d, so
    θ* = E X = (a s/d)·(1, …, 1), ||θ*|| = a s/√d.  Θ = ball of radius a (it
    holds every sample and θ*), so the gradient bound is D = 2a = 1 (SPEC d = 4,
    step η = ½).  Fixed, not minimax-hard (the paper has no SO lower bound).

    Parameters
    ----------
    s : float
        Bias in [−1, 1].
    a : float
        Size of a sample, > 0.
    """

    name = "quadratic"
    task = "so"
    minimax_hard = False
    parameters = {"s": Interval(float, -1, 1), "a": POSITIVE}

    def __init__(self, s=0.3, a=0.5):
        check(is_number(s) and -1 <= s <= 1, "s", s, "in [-1, 1]")
        self.s = float(s)
        self.a = positive("a", a)

    def instance(self, rng, n, m, eps, d=4) -> SOInstance:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        family_point(n, m, eps, d)
        d = int(d)
        eye = np.eye(d)
        support = np.vstack([self.a * eye, -self.a * eye])
        probs = np.concatenate([np.full(d, (1 + self.s) / (2 * d)), np.full(d, (1 - self.s) / (2 * d))])
        return SOInstance(support, probs, d, m, radius=self.a, params={"s": self.s, "a": self.a})


class _CoordinateFrame:
    """``mean="linf"``: Algorithm 2 on the gradients' d coordinates, with the instance's D as sup-norm bound.

    A frame maps the gradients to the coordinates Algorithm 2 estimates and back: g = Uᵀ(coefficients), U (dim, d).
    """

    K = None

    def __init__(self, d, basis_seed, D):
        self.dim, self.bound = d, D
        self.U = np.eye(d)

    @staticmethod
    def dimension(d) -> int:
        return d

    def coefficients(self, grads):
        return grads

    def reconstruct(self, g):
        return g


class _KashinFrame:
    """``mean="kashin"``: Algorithm 2 on the gradients' 2d Kashin coefficients (Theorem 8's proof, (122)).

    Their sup norm is K·D/√d with K = max(``KASHIN_K``, the basis' measured K),
    as :class:`~.mean.KashinL2`.
    """

    def __init__(self, d, basis_seed, D):
        self.basis = KashinBasis(d, basis_seed)
        self.K = max(KASHIN_K, self.basis.K)
        self.dim, self.bound = 2 * d, self.K * D / math.sqrt(d)
        self.U = self.basis.U

    @staticmethod
    def dimension(d) -> int:
        return 2 * d

    def coefficients(self, grads):
        return self.basis.coefficients(grads)

    def reconstruct(self, g):
        return self.basis.reconstruct(g[None, :])[0]


# Algorithm 3's ``mean``: the representation of the gradients whose mean Algorithm 2 estimates
_FRAMES = {"kashin": _KashinFrame, "linf": _CoordinateFrame}


class Algorithm3(LearningEstimator):
    r"""Algorithm 3: stochastic optimisation under user-level ε-LDP (Section 5, Theorem 8).

    Users are split into t0 groups S_0..S_{t0−1}.  At step t the users of S_t
    compute their gradients ∇l(X_ij, θ_t); g_t = MeanEst of them (Algorithm 2
    on the Kashin coefficients, Theorem 5 — ``mean="kashin"``, as Theorem 8's
    proof (122) uses — or Algorithm 2 on the coordinates, ``mean="linf"``), and

    .. math:: \theta_{t+1} = \Pi_\Theta(\theta_t - \eta g_t)\qquad (15),

    θ̂ = θ_{t0} (Π_Θ: see the module docstring; Θ ∋ θ*, so (124)-(129) hold).
    Theorem 8 (16): E||θ_t − θ*|| ≤ (1 − ηγ/2)^t ||θ_0 − θ*|| +
    (2D/γ)√(C t0/(nm)·(1 + d ln n/(ε²∧ε))), and with t0 ~ ln n, (17):
    D√(ln n/(nm)·(1 + d ln n/(ε²∧ε))).

    Tuning (SPEC §5): t0 = ⌈ln(nm(ε²∧ε))/(ηγ)⌉, so the contraction term
    (1 − ηγ/2)^{t0} ≤ (nm(ε²∧ε))^{−1/2} lies below the noise term; η = ½ ≤ 1/G.
    The mean estimator's bound is the instance's D (ℓ2; also an ℓ∞ bound), and
    the Kashin sup-norm K·D/√d with K = max(``KASHIN_K``, measured K), as
    :class:`~.mean.KashinL2`.

    Privacy (user-level ε-LDP).  The t0 groups are disjoint, and inside a
    step Algorithm 2's groups are disjoint, so each user takes part in one
    Algorithm 2 group of one step only.  There it sends, per coordinate of its
    group, a :class:`~.mechanisms.BinHistogram` report (stage I) or a
    :class:`~.mechanisms.ClippedMean` report (stage II) of the mapped samples
    (Kashin coefficient or coordinate of ∇l(X_ij, θ_t)); both clip for every
    input, so they are ε'-LDP whatever θ_t is, and the coordinates of a group
    compose to ≤ ε (Theorem 4's proof; :func:`~.mean.algorithm2`).  θ_t is a
    function of earlier users' reports only (sequential interaction, Eq. (1));
    θ̂ is post-processing.

    Parameters
    ----------
    lr : float
        Step η > 0 (Theorem 8 needs η ≤ 1/G; SPEC: ½).
    mean : {"kashin", "linf"}
        The multi-dimensional mean estimator.
    t0 : int, optional
        Number of steps/groups; None = the SPEC's tuning.
    c1 : float
        Constant of Theorem 8's condition n(ε²∧1) ≥ c1·d·ln n·ln m.
    min_stage1 : float
        SPEC §7: every Algorithm 1 instance needs (stage-I users)·(ε'²∧1) ≥ min_stage1.
    basis_seed : int
        Seed of the Kashin frame.

    ``trial`` returns ``error`` = ||θ̂ − θ*||₂ (unsquared), ``stage1_ok``,
    ``in_regime``, ``groups`` (t0 × Algorithm 2 groups per step), ``t0``,
    ``lr``, ``theta_hat_1`` / ``theta_star_1``, ``grad_bound`` and Algorithm 2's
    regime diagnostics.
    """

    name = "alg3"
    task = "so"
    parameters = {"lr": POSITIVE, "mean": Options(*_FRAMES), "t0": Nullable(Interval(int, 1), "tuned"),
                  "c1": POSITIVE, "min_stage1": POSITIVE, "basis_seed": Interval(int, 0)}

    def __init__(self, lr=0.5, mean="kashin", t0=None, c1=1.0, min_stage1=STAGE1_MIN, basis_seed=0):
        self.lr = positive("lr", lr)
        check(mean in _FRAMES, "mean", mean, tuple(_FRAMES))
        self.mean = mean
        check(t0 is None or (is_number(t0) and int(t0) == t0 and t0 >= 1), "t0", t0, "None (tuned) or an integer >= 1")
        self.t0 = None if t0 is None else int(t0)
        self.c1 = positive("c1", c1)
        self.min_stage1 = positive("min_stage1", min_stage1)
        check(is_number(basis_seed) and int(basis_seed) == basis_seed and basis_seed >= 0, "basis_seed", basis_seed,
              "an integer >= 0")
        self.basis_seed = int(basis_seed)

    def steps(self, n, m, eps, gamma=1.0) -> int:
        """t0 = ⌈ln(nm(ε²∧ε))/(ηγ)⌉ ≥ 1 (SPEC §5), or the fixed ``t0``."""
        if self.t0 is not None:
            return self.t0
        return max(1, math.ceil(math.log(max(n * m * min(eps ** 2, eps), 1.0)) / (self.lr * gamma)))

    def step_sizes(self, n, m, eps, d, gamma=1.0) -> tuple:
        """(t0, users per step) at (n, m, ε, d), checked: each step's Algorithm 2 has 2 users per group."""
        t0 = self.steps(n, m, eps, gamma)
        sizes = split_sizes(n, t0)
        dim = _FRAMES[self.mean].dimension(d)
        for size in sorted({int(s) for s in sizes}):
            try:
                check(size >= 2, "n", size, "at least 2 users (a stage I and a stage II user)")
                algorithm2_groups(dim, eps, size)  # the rule each step's algorithm2 applies
            except ConfigError as err:
                raise ConfigError("n", n, f"enough users for {t0} steps (n = {n} gives steps of {size} users; "
                                  f"each step's Algorithm 2 needs {err.allowed})") from None
        return t0, sizes

    def check_point(self, family, n, m, eps, d):
        n, m, eps, d = validate_point(n, m, eps, d, "sufficient")
        inst = family.instance(np.random.default_rng(0), n, m, eps, d)
        check(isinstance(inst, SOInstance), "family", family, "an SO family")
        self.step_sizes(n, m, eps, d, inst.gamma)

    def _regime(self, n, m, eps, d, stage1, inst) -> dict:
        """Theorem 8's condition n(ε²∧1) ≥ c1·d·ln n·ln m (its ratio), and the point's regime: that condition,
        every stage I group's (size)·(ε_inst²∧1) = ``stage1`` >= ``min_stage1``, and η <= 1/G."""
        cond = n * min(eps ** 2, 1.0) / (d * safe_log(n) * safe_log(m)) if m > 1 else math.inf
        return {"condition_ratio": cond, "theorem_regime": cond >= self.c1,
                "in_regime": bool(cond >= self.c1 and stage1 >= self.min_stage1 and self.lr <= 1.0 / inst.G)}

    approximate_expected_error = ("root of a second-moment recursion: each step's Algorithm 2 error moments in "
                                  "closed form at the mean iterate; the output's projection left out (an upper bound)")

    def expected_error(self, inst: SOInstance, n, m, eps, d) -> dict:
        r"""√E||θ̂ − θ*||², by the recursion of the iterates' second moment (no trial is drawn).

        With δ_t = θ_t − θ* and g_t = Uᵀ(Algorithm 2's estimate of E a(∇l(X, θ_t))), whose error e_t has
        conditional moments b(θ_t) = E[e_t | θ_t] and M(θ_t) = E[e_t e_tᵀ | θ_t]
        (:func:`~.mean.algorithm2_error_moments`: closed form on the law of the gradients' coefficients at
        θ_t), the unprojected step δ_{t+1} = (1 − η)δ_t − ηUᵀe_t (∇L(θ_t) = δ_t, (15)) gives

        .. math:: E||δ_{t+1}||² = (1-η)^2 E||δ_t||² - 2η(1-η)E[δ_t·Uᵀb(θ_t)] + η^2 E\,\mathrm{tr}(UUᵀM(θ_t)).

        The moments are taken at the mean iterate θ̄_t (θ̄_{t+1} = θ̄_t − η(δ̄_t + Uᵀb(θ̄_t)), θ̄_0 = 0):
        exact when b and M do not vary over the spread of θ_t, which is O(√E||δ_t||²) and shrinks with the
        noise; the Monte-Carlo trials check it (``tests/userlevel/test_so_worst_case.py``).  Projections are
        left out: Π_Θ is 1-Lipschitz and fixes θ* ∈ Θ, so each can only shorten δ, and this is an upper bound
        of the projected protocol's error, equal to it while the iterates stay in Θ.  The root makes it
        comparable with (17), a bound on E||θ̂ − θ*|| ≤ √E||θ̂ − θ*||² (Jensen).
        """
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        check(isinstance(inst, SOInstance), "family", inst, "an SO family")
        t0, sizes = self.step_sizes(n, m, eps, d, inst.gamma)
        frame = _FRAMES[self.mean](d, self.basis_seed, inst.grad_bound)
        proj = frame.U @ frame.U.T
        theta, second = np.zeros(d), float(inst.theta_star @ inst.theta_star)
        worst, info = math.inf, {}
        eta = self.lr
        for size in sizes:
            delta = theta - inst.theta_star
            bias, moments, info = algorithm2_error_moments(
                frame.coefficients(inst.grad_support(theta)), inst.probs, m, int(size), eps,
                lambda group, _: algorithm2_tuning(frame.bound, m, group))
            drift = frame.U.T @ bias
            second = ((1 - eta) ** 2 * second - 2 * eta * (1 - eta) * float(delta @ drift)
                      + eta ** 2 * float(np.sum(proj * moments)))
            theta = theta - eta * (delta + drift)
            worst = min(worst, info["min_stage1_users"] * min(info["eps_instance"] ** 2, 1.0))
        return {"error": math.sqrt(max(second, 0.0)), "stage1_size_eps2": worst,
                **self._regime(n, m, eps, d, worst, inst), "exact_law": info["exact_law"],
                "groups": t0 * info["groups"], "t0": t0, "regime": info["regime"],
                "eps_instance": info["eps_instance"], "kashin_K": frame.K}

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        n, m, eps, d = validate_point(n, m, eps, d, path)
        inst = family.instance(rng, n, m, eps, d)
        check(isinstance(inst, SOInstance), "family", family, "an SO family")
        t0, sizes = self.step_sizes(n, m, eps, d, inst.gamma)
        D = inst.grad_bound
        frame = _FRAMES[self.mean](d, self.basis_seed, D)
        theta = np.zeros(d)
        fails, worst = 0, math.inf
        info = {}
        for size in sizes:
            grads = inst.grad_support(theta)
            support = frame.coefficients(grads)
            truth = inst.probs @ support

            def draw(n_users, coords, support=support):
                return draw_users(rng, n_users, m, support, inst.probs, path, transform=lambda s: s[:, coords])

            g, info = algorithm2(draw, frame.dim, frame.bound, m, int(size), eps, rng, truth=truth)
            g = frame.reconstruct(g)
            fails += info["stage1_failures"]
            worst = min(worst, info["min_stage1_users"] * min(info["eps_instance"] ** 2, 1.0))
            theta = inst.project(theta - self.lr * g)
        regime = self._regime(n, m, eps, d, worst, inst)
        return {"error": float(np.linalg.norm(theta - inst.theta_star)), "stage1_ok": fails == 0,
                "stage1_failures": int(fails), "in_regime": regime["in_regime"], "groups": t0 * info["groups"],
                "t0": t0, "lr": self.lr, "mean": self.mean, "regime": info["regime"],
                "eps_instance": info["eps_instance"], "stage1_size_eps2": worst,
                "condition_ratio": regime["condition_ratio"],
                "grad_bound": D, "kashin_K": frame.K, "theta_hat_1": float(theta[0]),
                "theta_star_1": float(inst.theta_star[0])}
