r"""Classification families: tilts of the uniform label law (papers/000, Appendix B, D).

Labels take K classes, coded 0..K-1 (the paper's 1..K).  Every family here is
a *tilt* of the uniform label law: at x a preferred class a(x) gets probability

.. math:: \eta_{a}(x) = 1/K + (K-1) g(x)/K, \qquad \eta_j(x) = 1/K - g(x)/K \ (j \ne a),

so that η* − η_s = g(x).  For K = 2 this is the paper's η = η₂ − η₁ = ±g
with P(Y=2|x) = (1 + η)/2, (44).  Sampling is one line: with probability
g(x) draw Y = a(x), otherwise Y uniform on the K classes.  The exact risk of a
cube classifier comes from the instance's :class:`~.cells.CellModel`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from labeldp_sim.harness.components import Interval, Options
from labeldp_sim.harness.errors import check
from labeldp_sim.harness.store import memoized
from labeldp_sim.papers.table1.argmax_law import tilt_laws
from labeldp_sim.papers.table1.families.base import BETA, CLASSES, D, H_SCALE, POSITIVE, UNIT, Family
from labeldp_sim.papers.table1.families.cells import CellModel, cube_index, shifted_merge, tilt_model
from labeldp_sim.papers.table1.families.geometry import PROFILES, linf_margin_factor
from labeldp_sim.papers.table1.families.tilt_geometry import overlap_types, product_axes, product_types

__all__ = ["HolderBump", "BumpInstance", "SmoothMargin", "SmoothInstance"]


class HolderBump(Family):
    r"""The minimax-hard Hölder bump family η_v (Appendix B (45)–(47), Appendix D).

    Cut [0,1]^d into G^d cubes of side h = 1/G.  m = min(G^d, ⌊C_M h^(γβ−d)⌋)
    of them (spread evenly) carry a bump
    g(x) = L h^β φ((x − c_k)/h), φ(u) = Π_i cos²(π u_i) on [−1/2, 1/2]^d,
    with an independent uniformly random preferred class per trial
    (v_k = ±1 for K = 2, (46)).  Elsewhere η is uniform.  Restricting the
    bumps to m ~ h^(γβ−d) cubes is what enforces the γ-Tsybakov margin (47).

    With h tied to N (and ε) as in the lower-bound proofs, the excess risk of
    the cube estimators is m · L h^(β+d) ‖φ‖₁ · P(wrong cube) ~ h^(β(γ+1)),
    i.e. exactly the rate of Table I when P(wrong cube) is scale-free.

    Parameters
    ----------
    d : int ≥ 1
    beta : float in (0, 1]
        Hölder exponent β.
    gamma : float ≥ 0
        Tsybakov margin exponent γ.
    K : int ≥ 2
        Number of classes.
    L : float in (0, 1]
        Bump height constant (g ≤ L h^β ≤ 1).
    C_M : float > 0
        Constant of the bump count m (47).
    h_scale : float > 0
        Constant c of the cube side h = c · (law of the cell).
    shape : {"cos2", "linear_edge"}
        The bump profile φ.  ``cos2``: Π cos²(π u_i), the law-tied construction.
        ``linear_edge``: (1/2 − ‖u‖∞)₊^β, g = L (h/2 − ‖x − c_k‖∞)₊^β, which is
        β-Hölder with constant L and keeps the margin condition with one constant
        C_γ at every scale when γβ ≤ 1 (:meth:`margin_ratio`); cos² edges are
        quadratic and act like γ = 1/2 at coarse scales.  The law-free mode
        (SPEC §5a) uses it.
    """

    name = "holder_bump"
    task = "classification"
    minimax_hard = True
    supports_sufficient = True
    exact_tilt_law = True
    p = float("nan")
    parameters = {"d": D, "beta": BETA, "gamma": Interval(float, 0), "K": CLASSES, "L": UNIT, "C_M": POSITIVE,
                  "h_scale": H_SCALE, "shape": Options(*PROFILES)}

    def __init__(self, d=1, beta=1.0, gamma=1.0, K=2, L=1.0, C_M=4.0, h_scale=1.0, shape="cos2"):
        self.check_parameters(d=d, beta=beta, gamma=gamma, K=K, L=L, C_M=C_M, h_scale=h_scale, shape=shape)
        # (47) uses m ~ C_M h^(γβ−d) bumps: with γβ > d that is a vanishing number of
        # bumps as h → 0, and no non-trivial β-Hölder η with a γ-margin exists under a
        # density bounded below (Audibert & Tsybakov 2007).  Refused
        # here rather than clamped to one bump, which would run a different problem.
        check(gamma * beta <= d, "gamma", gamma,
              f"gamma*beta <= d (d = {int(d)}, beta = {float(beta):g}: gamma <= {d / beta:g}): "
              "with a density bounded below, gamma*beta > d admits only trivial problems "
              "(Audibert & Tsybakov 2007)")
        self.d, self.beta, self.gamma, self.K = int(d), float(beta), float(gamma), int(K)
        self.L, self.C_M, self.h_scale, self.shape = float(L), float(C_M), float(h_scale), shape

    @property
    def exact_shifted_tilt_law(self) -> bool:
        """Linear-edge bumps on a product set of cubes at every G (γβ = 1 and an integer C_M: (47)
        spreads C_M bumps per row of the last axis), where :func:`~.tilt_geometry.product_types`
        states the law of a shifted partition."""
        return (self.shape == "linear_edge" and abs(self.gamma * self.beta - 1.0) < 1e-12
                and float(self.C_M).is_integer())

    @property
    def profile(self):
        """The bump profile φ named by ``shape`` (:class:`~.geometry.BumpProfile`)."""
        return PROFILES[self.shape]

    def margin_ratio(self, G: int) -> float:
        r"""sup_t P(0 < η*(X) − η_s(X) ≤ t) / t^γ of the instance at h = 1/G, in closed form.

        Only for ``shape="linear_edge"`` with γβ ≤ 1.  With m bumps of height
        L h^β φ: P(0 < g ≤ t) = m h^d (1 − (1 − 2 (t / (L h^β))^(1/β))^d) below the
        peak L (h/2)^β and m h^d above it, so the supremum is
        m h^(d − γβ) L^(−γ) c_d(γβ) (:func:`linf_margin_factor`).
        """
        check(self.shape == "linear_edge", "distribution.shape", self.shape,
              "linear_edge (the margin condition is checked for linear-edge bumps only)")
        check(self.gamma * self.beta <= 1 + 1e-12, "distribution.gamma", self.gamma,
              f"gamma*beta <= 1 (beta = {self.beta:g}): a continuous η with a density bounded "
              "below has P(0 < |η| <= t) >= c t^(1/β), so no instance keeps C_γ t^γ for γβ > 1")
        h = 1.0 / G
        return (self.n_bumps(G) * h ** (self.d - self.gamma * self.beta) * self.L ** (-self.gamma)
                * linf_margin_factor(self.d, self.gamma * self.beta))

    @property
    def margin_constant(self) -> float:
        """The declared C_γ of the class: C_M L^(−γ) c_d(γβ), the ratio of (47)'s unrounded count.

        Every instance with m ≤ C_M h^(γβ−d) bumps has :meth:`margin_ratio` ≤ C_γ;
        one whose count was raised to a single bump (C_M h^(γβ−d) < 1) may not.
        """
        return self.C_M * self.L ** (-self.gamma) * linf_margin_factor(self.d, self.gamma * self.beta)

    def admitted(self, G: int) -> bool:
        """Whether the instance at h = 1/G satisfies the margin condition with :attr:`margin_constant`."""
        return self.margin_ratio(G) <= self.margin_constant * (1 + 1e-9)

    def _bump_budget(self, G: int) -> float:
        """C_M h^(γβ−d) at h = 1/G: the bump count of (47) before rounding and capping."""
        return self.C_M * float(G) ** (self.d - self.gamma * self.beta)

    def n_bumps(self, G: int) -> int:
        """m = min(G^d, ⌊C_M h^(γβ−d)⌋), at least 1 (47).

        The floor of one bump keeps a trial well defined where (47) asks for
        less than one; :meth:`construction_valid` flags those points, so they are
        never fitted as if the construction held.
        """
        m = np.floor(self._bump_budget(G) + 1e-9)
        return int(max(1, min(G ** self.d, m)))

    def construction_valid(self, G: int) -> bool:
        """Whether (47) holds unclamped: 1 ≤ C_M h^(γβ−d) ≤ G^d.

        Where the cap m = G^d binds, every cube carries a bump and the
        instance no longer has the γ-margin scaling of the construction.
        Where C_M h^(γβ−d) < 1 (γβ = d with C_M < 1, or small G), (47) asks for
        less than one bump and :meth:`n_bumps` raises it to one.  Either way the
        point is kept in the outputs (``in_regime`` False) but left out of the
        rate fits.
        """
        budget = self._bump_budget(G)
        return 1.0 - 1e-9 <= budget <= G ** self.d + 1e-9

    def bump_cubes(self, G: int) -> tuple:
        return tuple(int(i) for i in self._bump_array(G))

    def relevant_cubes(self, G: int, G_est: int, d: int) -> float:
        """The estimator cubes the m bumps meet: each bump (a cube of side 1/G) meets
        (G_est // G)^d of them when G_est >= G; else an estimator cube holds at most ⌈G/G_est⌉^d bumps."""
        cubes = float(G_est) ** d
        m = float(self.n_bumps(G))
        if G_est >= G:
            return min(cubes, m * float(G_est // G) ** d)
        return min(cubes, max(1.0, np.ceil(m / float(-(-G // G_est)) ** d)))

    def _bump_array(self, G: int) -> np.ndarray:
        """The m bump cubes spread evenly over the G^d (linear indices), as :meth:`bump_cubes` lists them."""
        m = self.n_bumps(G)
        return np.floor(np.arange(m) * (G ** self.d / m)).astype(np.int64)

    def tilt_measure(self, G: int, G_est: int, shifts: int = 1):
        r"""The law of the cubes' tilts |D_r| at h = 1/G on G_est^d estimator cubes, over the random classes.

        A :class:`~labeldp_sim.papers.table1.argmax_law.TiltMeasure` (K = 2): what the exact expected
        risk of a cube classifier needs from the instance (:meth:`CubeArgmax.expected_risks
        <labeldp_sim.papers.table1.estimators.CubeArgmax.expected_risks>`).  Linear-edge bumps on a
        product set of cubes (the (47) count with γβ = 1) are enumerated by cube types
        (:func:`~.tilt_geometry.product_types`); any other instance cube by cube from its
        overlaps.  Cached per (family, G, G_est, shifts).

        ``shifts`` = n > 1: the estimator's partition shifted along each axis by a uniform one of n
        steps of 1/(n G_est), wrapping round the cube (a torus); the measure is averaged over the
        n^d shifts.  Stated on product bump sets only (:attr:`exact_shifted_tilt_law`).
        """
        check(int(shifts) == 1 or self.exact_shifted_tilt_law, "estimator.shifts", shifts,
              "1 on this family (a shifted partition's tilt law is stated for linear-edge bumps with "
              "gamma*beta = 1 and an integer C_M only)")
        return _tilt_measure(self.d, self.beta, self.gamma, self.L, self.C_M, self.shape, int(G), int(G_est),
                             int(shifts))

    def draw(self, rng: np.random.Generator, G: int) -> "BumpInstance":
        """One η_v: fresh random preferred classes for every bump."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        bumps = self.bump_cubes(G)
        return BumpInstance(self, G, bumps, rng.integers(self.K, size=len(bumps)))


@lru_cache(maxsize=8192)
def _tilt_measure(d, beta, gamma, L, C_M, shape, G, G_est, shifts=1):
    """:meth:`HolderBump.tilt_measure`, once per process and, in a law-free run, once per code
    (``<results_dir>/memo.sqlite``, :func:`~labeldp_sim.harness.store.memoized`): it depends on
    neither N, ε nor the mechanism, and it costs more than the laws it is integrated against."""
    args = (d, beta, gamma, L, C_M, shape, G, G_est, shifts)
    return memoized("table1.tilt_measure", args, lambda: _computed_tilt_measure(*args))


def _computed_tilt_measure(d, beta, gamma, L, C_M, shape, G, G_est, shifts):
    family = HolderBump(d=d, beta=beta, gamma=gamma, L=L, C_M=C_M, shape=shape)
    bumps = family._bump_array(G)
    height = L * float(G) ** (-beta)
    axes = product_axes(d, G, bumps) if shape == "linear_edge" else None
    if axes is not None:
        return tilt_laws(product_types(d, G, G_est, axes, beta, shifts), height * float(G) ** (-d))
    cells, W = family.profile.overlaps(d, G, G_est, tuple(int(b) for b in bumps), beta)
    return tilt_laws(overlap_types(cells, W), height)


class BumpInstance:
    """One draw η_v of :class:`HolderBump` at cube count G."""

    def __init__(self, family: HolderBump, G: int, bumps: tuple, classes: np.ndarray):
        self.family, self.G, self.bumps, self.classes = family, int(G), bumps, classes
        self.height = family.L * (1.0 / G) ** family.beta  # L h^β

    def cell_model(self, G_est: int, shifts: int = 1, offsets=None) -> CellModel:
        """The estimator's cubes (shifted by offsets/(shifts G_est), :func:`~.cells.cube_index`) that meet a bump."""
        d, n = self.family.d, int(shifts)
        cells, W = self.family.profile.overlaps(d, self.G, n * int(G_est), self.bumps, self.family.beta)
        if n > 1:  # the fine cubes of side 1/(n G_est), summed into the shifted ones
            cells, merge = shifted_merge(cells, int(G_est), n, offsets, d)
            W = merge @ W
        mass = np.full(len(cells), float(G_est) ** (-d))
        return tilt_model(G_est ** d, cells, mass, W * self.height, self.classes, self.family.K)

    def g_and_class(self, X: np.ndarray):
        """g(x) and the preferred class a(x) at each row of X (g = 0 and a = 0 off the bumps)."""
        G, d = self.G, self.family.d
        lookup = np.full(G ** d, -1, dtype=np.int64)
        lookup[list(self.bumps)] = np.arange(len(self.bumps))
        k = lookup[cube_index(X, G)]
        on = np.flatnonzero(k >= 0)  # the profile (a cosine per axis) only where a bump is
        g, a = np.zeros(len(X)), np.zeros(len(X), dtype=np.int64)
        g[on] = self.height * self.family.profile.values(X.take(on, axis=0), G, self.family.beta)
        a[on] = self.classes[k[on]]
        return g, a

    def sample(self, N: int, rng: np.random.Generator):
        """N i.i.d. pairs (X, Y): Y = a(X) if a coin falls below g(X), else a uniform class.

        One uniform per label gives both the uniform class and the coin
        (:func:`_class_and_coin`).  g ≤ L h^β everywhere, so a coin at or above
        L h^β keeps the uniform class whatever X is: g and a, the costly part (a
        cosine per axis), are computed only for the samples whose coin falls below
        L h^β, a share L h^β of them.  The law is the tilt's, exactly.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        X = rng.random((N, self.family.d))
        y, coin = _class_and_coin(rng.random(N), self.family.K)
        maybe = np.flatnonzero(coin < self.height)
        g, a = self.g_and_class(X.take(maybe, axis=0))  # take: X[maybe] is ten times slower
        tilted = coin[maybe] < g
        y[maybe[tilted]] = a[tilted]
        return X, y


def _merged_model(fine: CellModel, merge, cells, n_cells: int) -> CellModel:
    """The cell model of unions of ``fine``'s cells: ``merge`` (sparse, coarse × fine) sums them."""
    mass = np.asarray(merge @ fine.mass).ravel()
    class_probs = np.asarray(merge @ (fine.mass[:, None] * fine.class_probs)) / mass[:, None]
    return CellModel(n_cells, cells, mass, class_probs, np.asarray(merge @ fine.regret))


def _class_and_coin(u, K):
    """A uniform class on 0..K−1 and an independent U[0, 1) coin, both from the uniforms u.

    K·u = class + coin: the integer part is uniform on 0..K−1 and the fractional
    part is uniform on [0, 1) and independent of it (exactly for K a power of two,
    else up to the rounding of K·u, 2^-52 relative).  u < 1, so K·u < K after
    rounding.  ``u`` is overwritten by the coin.  The classes are int32: float64 →
    int32 casts are vectorised on x86-64 and float64 → int64 casts are not.
    """
    u *= K
    label = u.astype(np.int32)
    u -= label
    return label, u


def _tilted_labels(g, a, K, rng):
    """Y = a with probability g, else uniform on K classes (the tilt above), one uniform per label."""
    uniform, coin = _class_and_coin(rng.random(len(g)), K)
    return np.where(coin < g, a, uniform)


class SmoothMargin(Family):
    r"""A fixed smooth instance with margin exponent γ — *not minimax-hard*.

    g(x) = A |2x₁ − 1|^(1/γ), preferred class 1 (the paper's class 2) where
    x₁ > 1/2 and class 0 elsewhere, so P(0 < η* − η_s < t) = (t/A)^γ
    (Assumption 1(b)), and η is min(1, 1/γ)-Hölder.  The instance does not
    change with N: its slopes may differ from Table I (usually faster), and
    reports do not call that a failure.

    Parameters
    ----------
    d, K : as in :class:`HolderBump`
    gamma : float > 0
    A : float in (0, 1]
        Amplitude.
    h_scale : float > 0
        Default constant of the estimator's h (no construction uses it).
    """

    name = "smooth_margin"
    task = "classification"
    minimax_hard = False
    supports_sufficient = True
    p = float("nan")
    parameters = {"d": D, "beta": BETA, "gamma": Interval(float, 0, closed="neither",
                                                          note="the smooth instance needs a margin"),
                  "K": CLASSES, "A": UNIT, "h_scale": H_SCALE}

    def __init__(self, d=1, beta=1.0, gamma=1.0, K=2, A=0.5, h_scale=1.0):
        self.check_parameters(d=d, beta=beta, gamma=gamma, K=K, A=A, h_scale=h_scale)
        self.d, self.beta, self.gamma, self.K = int(d), float(beta), float(gamma), int(K)
        self.A, self.h_scale = float(A), float(h_scale)

    def n_bumps(self, G=None) -> int:
        return 0

    def construction_valid(self, G=None) -> bool:
        return True

    def draw(self, rng, G=None) -> "SmoothInstance":
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return SmoothInstance(self)


class SmoothInstance:
    def __init__(self, family: SmoothMargin):
        self.family = family
        self.kappa = 1.0 / family.gamma

    def _F(self, x):
        """Antiderivative of |2x − 1|^κ."""
        u = 2 * x - 1
        return np.sign(u) * np.abs(u) ** (self.kappa + 1) / (2 * (self.kappa + 1))

    def cell_model(self, G_est: int, shifts: int = 1, offsets=None) -> CellModel:
        """Every cube of the estimator's partition (shifted by offsets/(shifts G_est): :func:`~.cells.cube_index`)."""
        if int(shifts) > 1:
            fine = self.cell_model(int(shifts) * int(G_est))
            cells, merge = shifted_merge(fine.cells, int(G_est), shifts, offsets, self.family.d)
            return _merged_model(fine, merge, cells, int(G_est) ** self.family.d)
        d, G = self.family.d, int(G_est)
        edges = np.arange(G + 1) / G
        lo, hi = edges[:-1], edges[1:]
        left = self._F(np.minimum(hi, 0.5)) - self._F(np.minimum(lo, 0.5))
        right = self._F(np.maximum(hi, 0.5)) - self._F(np.maximum(lo, 0.5))
        other = float(G) ** (-(d - 1))
        first_axis = np.unravel_index(np.arange(G ** d), (G,) * d)[0]
        W = self.family.A * other * np.stack([left[first_axis], right[first_axis]], axis=1)
        mass = np.full(G ** d, float(G) ** (-d))
        return tilt_model(G ** d, np.arange(G ** d), mass, W, np.array([0, 1]), self.family.K)

    def sample(self, N, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        X = rng.random((N, self.family.d))
        x1 = X[:, 0]
        g = self.family.A * np.abs(2 * x1 - 1) ** self.kappa
        return X, _tilted_labels(g, (x1 > 0.5).astype(np.int64), self.family.K, rng)


