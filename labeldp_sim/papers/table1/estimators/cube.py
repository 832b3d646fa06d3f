"""The cube estimators: :class:`CubeArgmax` (the classifier (12)-(13), (17), (31)) and
:class:`CubeMean` (the regression cube mean), each with its sufficient-statistic and exact paths."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.harness.memory import Need
from labeldp_sim.papers.table1.argmax_law import choice_curve
from labeldp_sim.papers.table1.estimators.base import BandwidthTuned, draw_cell_counts
from labeldp_sim.papers.table1.families import CellModel, cube_index
from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.privacy.count_law import count_law
from labeldp_sim.privacy.protocols import CentralMechanism, CubeData, CubeSumMechanism, argmax_random_ties

__all__ = ["CubeArgmax", "CubeMean"]


class CubeArgmax(BandwidthTuned):
    """Cube classifier: argmax (or private selection) of per-cube statistics.

    Parameters
    ----------
    h_scale : float > 0
        Constant c in h = c · (bandwidth law of the cell), Theorems 2, 4, 13.
        The default configuration ties it to the distribution's constant so
        that the estimator's cubes are the construction's cubes.
    shifts : int in [1, 16]
        n > 1: every fit shifts its partition along each axis by an independent
        uniform one of n steps of 1/(n G_est), wrapping round [0, 1)^d (a torus).
        A shifted partition is a partition into cubes of side h (the wrapped
        ones are two boxes whose union is such a cube on the torus), and the
        upper bounds of Theorems 2, 4 and 13 hold for every one of them on the
        linear-edge bump instances, whose η vanishes on the faces of [0, 1]^d
        (so it is Hölder on the torus too); the randomised estimator's risk is
        their average.  What it buys: the risk no longer hinges on how G_est
        aligns with the instance's cubes, which made the law-free minimax risk
        jump between neighbouring integers (issue 35).  1 (the default): the
        fixed partition of the paper.
    """

    name = "cube_argmax"
    tasks = ("classification",)
    supports_sufficient = True
    accepts = (CubeSumMechanism, CentralMechanism)
    parameters = {**BandwidthTuned.parameters, "shifts": Interval(int, 1, 16)}
    exact_in_real_N = True  # the choice law's φ(t)^N = exp(N log φ(t)): N is an exponent, not a count

    def __init__(self, h_scale=1.0, shifts=1):
        super().__init__(h_scale)
        allowed = self.parameters["shifts"]
        check(allowed.accepts(shifts), "shifts", shifts, allowed.describe())
        self.shifts = int(shifts)

    def with_shifts(self, shifts: int) -> "CubeArgmax":
        """The same estimator with ``shifts`` shifts of its partition (the law-free search's ``law_free.shifts``)."""
        return CubeArgmax(self.h_scale, shifts)

    def instance_grid(self, G_cap: int, per_octave: int) -> np.ndarray:
        """The geometric grid of instance cube counts, with n > 1 shifts each value moved to the nearest
        multiple of n (at most ``G_cap``) where that is within half a grid step.

        The n shifted partitions start their intervals at (e + j/n)/G_est, that is at
        G_inst (n e + j) / (n G_est) mod 1 in the units of the instance's cubes.  Where n divides
        G_inst those offsets are multiples of 1/G_est (at most G_est of them, as with one
        partition); else they can take all n G_est values.  An axis has a class of intervals per
        offset (up to the symmetry u → −u), and the exact tilt law's cube types are products of
        classes over the axes, so an instance count prime to n costs up to n^2 times more (d = 3,
        four shifts, G_est = 256: G_inst = 203 has 513 classes per full axis and 3.0 million types,
        18 s; G_inst = 204 has 129 classes, 0.05 s).  The worst case is over a grid of scales either
        way; this one keeps its ratios within a factor 2^(1/(2 per_octave)) of the geometric grid's.
        """
        grid = super().instance_grid(G_cap, per_octave)
        n = self.shifts
        if n == 1:
            return grid
        half_step = 2.0 ** (0.5 / per_octave)
        moved = []
        for G in grid:
            multiple = n * int(np.round(G / n))
            if multiple > G_cap:
                multiple -= n
            near = multiple >= 1 and max(multiple / G, G / multiple) < half_step
            moved.append(multiple if near else int(G))
        return np.unique(moved)

    def _offsets(self, rng, d):
        """The partition's shift of one fit (none: ``shifts`` = 1 draws nothing, so its streams are unchanged)."""
        return rng.integers(self.shifts, size=d) if self.shifts > 1 else None

    def predict_per_sample(self, X, y, G, K, mechanism, rng, offsets=None):
        """Predicted class of every cube (length G^d) from N samples (the partition shifted by ``offsets``)."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        d = X.shape[1]
        n_cells = G ** d
        cells = cube_index(X, G, self.shifts, offsets)
        if isinstance(mechanism, CentralMechanism):
            return mechanism.release(CubeData.from_samples(cells, y, n_cells), rng, len(y), 1.0 / G, d, K)
        scores = mechanism.collect(y, rng, K=K, cells=cells, n_cells=n_cells)
        return argmax_random_ties(scores, rng)

    def predict_from_counts(self, model: CellModel, N, mechanism, rng, G, d):
        """Predicted class of the relevant cubes of ``model``, exactly in law."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        counts = draw_cell_counts(model.mass, model.class_probs, N, rng)
        K = counts.shape[1]
        data = CubeData.from_counts(counts, np.arange(K))
        if isinstance(mechanism, CentralMechanism):
            return mechanism.release(data, rng, int(N), 1.0 / G, d, K)
        return argmax_random_ties(mechanism.sample_aggregate(data, int(N), rng, K), rng)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        """Exact (8) of one fitted cube classifier, and the share of attainable regret."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        offsets = self._offsets(rng, point.d)
        model = instance.cell_model(point.G_est, self.shifts, offsets)
        if DataPath(path) is DataPath.SUFFICIENT:
            predictions = self.predict_from_counts(model, point.N, mechanism, rng, point.G_est, point.d)
        else:
            X, y = instance.sample(point.N, rng)
            predictions = self.predict_per_sample(X, y, point.G_est, instance.family.K, mechanism,
                                                  rng, offsets)[model.cells]
        return {"excess_risk": model.excess_risk(predictions),
                "regret_fraction": model.regret_fraction(predictions)}

    def exact_for(self, family, mechanism) -> bool:
        """Exact for two classes on a family that declares the law of its cubes' tilts
        (:attr:`~.families.base.Family.exact_tilt_law`) under a mechanism that declares its choice law
        (:attr:`~labeldp_sim.privacy.protocols.Mechanism.exact_choice`)."""
        return (family.K == 2 and family.exact_tilt_law and mechanism.exact_choice
                and (self.shifts == 1 or family.exact_shifted_tilt_law))

    def trial_needs(self, size, point, family, G_inst: int) -> list:
        """Per sample: the per-cube class counts (int64); on the sufficient path the cell model
        (4 float64 arrays over the relevant cubes × K)."""
        K, K_key = size.K, {"distribution.K": (int(size.K), size.K)}
        if size.per_sample:
            return [Need(8.0 * size.cubes * K, f"{size.cubes:,.0f} cubes × K = {K:,.0f} classes of counts (int64)",
                         {size.key: (size.got, size.cubes), **K_key})]
        R = family.relevant_cubes(G_inst, point.G_est, size.d) * self.shifts ** size.d  # the fine cubes first
        return [Need(32.0 * R * K, f"{R:,.0f} relevant cubes × K = {K:,.0f} classes × 4 float64 arrays",
                     {size.key: (size.got, R), **K_key})]

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        r"""E (8) of each column, exactly (:mod:`~labeldp_sim.papers.table1.argmax_law`):

            E R = ½ (Σ_r T_r − ∫ F dν),  F(D) = D Ψ(D),

        ν the law of the cubes' tilts over the random classes (the family's ``tilt_measure``,
        per (G_inst, G_est)), Ψ the mechanism's choice bias on a cube of mass G_est^-d
        (its ``argmax_choice_law``, per (N, ε, G_est)).  Errors: :meth:`exact_errors`.
        """
        return [choice_curve(self._choice_law(c, point)).expected_risk(
            family.tilt_measure(G_inst, int(c.tuning), self.shifts)) for c in columns]

    def exact_errors(self, family, G_inst: int, point, columns) -> list:
        """An estimate of the absolute error of each :meth:`expected_risks` entry (:meth:`ChoiceCurve.error
        <labeldp_sim.papers.table1.argmax_law.ChoiceCurve.error>`: interpolation tail, normal-law budget)."""
        return [choice_curve(self._choice_law(c, point)).error(family.tilt_measure(G_inst, int(c.tuning), self.shifts))
                for c in columns]

    @staticmethod
    def _choice_law(column, point):
        return column.mechanism.argmax_choice_law(int(point.N), float(column.tuning) ** (-point.d))

    def tuned_risks(self, instance, point, columns, draws) -> list:
        """One trial per column: the data and the release share the column's data stream, as in :meth:`trial`."""
        return [self.trial(instance, replace(point, G_est=int(c.tuning)), c.mechanism, draws.data(c.tuning, c.draw),
                           "sufficient")["excess_risk"] for c in columns]


class CubeMean(BandwidthTuned):
    r"""Cube regression estimate η̂(x) = η̂_l for x ∈ B_l (Theorems 8, 12, 14; also non-private).

    The per-cube statistic (n_l, S_l) and the release rule come from the
    mechanism: S_l/n_l without privacy or with local label noise, (23)/(28)
    for central label DP, (33)/(34) for central full DP, the ratio estimate for
    the joint local mechanism.  The excess risk (9) is exact:
    Σ_l (η̂_l² P(B_l) − 2 η̂_l ∫_{B_l} η + ∫_{B_l} η²).

    Parameters
    ----------
    h_scale : float > 0
        Constant c in h = c · (bandwidth law of the cell), Theorems 8, 12, 14.
    """

    name = "cube_mean"
    tasks = ("regression",)
    supports_sufficient = True
    accepts = (CubeSumMechanism, CentralMechanism)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        model = instance.cell_model(point.G_est)
        data = self.draw_data(instance, model, point, rng, path)
        return {"excess_risk": self.risk(model, data, point, mechanism, rng, path),
                "regret_fraction": np.nan}

    def draw_data(self, instance, model, point, rng, path) -> CubeData:
        """The data of one trial on the estimator's cubes: per-cube counts, or the samples."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        if DataPath(path) is DataPath.SUFFICIENT:
            return CubeData.from_counts(draw_cell_counts(model.mass, model.value_probs, point.N, rng),
                                        model.values)
        X, y = instance.sample(int(point.N), rng)
        return CubeData.from_samples(cube_index(X, point.G_est), y, model.n_cells)

    def risk(self, model, data: CubeData, point, mechanism, rng, path) -> float:
        """Exact (9) of the estimate the mechanism releases (or lets us compute) from ``data``.

        ``data`` is not modified, so one draw can be privatized by several
        mechanisms (the law-free mode's clip levels share their data).
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        d, N, h = point.d, int(point.N), 1.0 / point.G_est
        if isinstance(mechanism, CentralMechanism):
            estimates = mechanism.release(data, rng, N, h, d)
        else:
            if DataPath(path) is DataPath.SUFFICIENT:
                n, S = mechanism.sample_aggregate(data, N, rng)
            else:
                n, S = mechanism.collect(data.y, rng, cells=data.cells, n_cells=model.n_cells)
            estimates = mechanism.estimate(n, S, N, h, d)
        return model.excess_risk(estimates)

    def exact_for(self, family, mechanism) -> bool:
        """Exact for the families that declare their signs averaged in closed form
        (:attr:`~.families.base.Family.exact_sign_average`) under a mechanism that declares the moments
        of its cube mean (:attr:`~labeldp_sim.privacy.protocols.Mechanism.exact_cube_mean`; the joint
        local ratio states them through :mod:`.noisy_ratio`)."""
        return family.exact_sign_average and mechanism.exact_cube_mean

    def trial_needs(self, size, point, family, G_inst: int) -> list:
        """Its per-cube float64 arrays: 3 per sample (counts, sums, estimates), 9 from the cell model."""
        return [Need((3.0 if size.per_sample else 9.0) * 8.0 * size.cubes,
                     f"{size.cubes:,.0f} estimator cubes × float64 arrays", {size.key: (size.got, size.cubes)})]

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        r"""E (9) of each column, exactly: with P(B_r) = μ, I_r = ∫_{B_r} η, J_r = ∫_{B_r} η²,

            E Σ_r (μ η̂_r² − 2 η̂_r I_r + J_r)
              = b2 (α0² + α1² Π) + b1 β0 + b0 − 2 a α1 Π + ∫η²
              = b2 α0² + ((a α1 − 1)² + α1² (b2 − a²)) Π + b1 β0 + b0 + (∫η² − Π),

        Π = Σ_r E_v I_r²/μ (the projection, :meth:`~.families.regression._RegressionBump.sign_averaged_cubes`),
        (a, b2, b1, b0) the mechanism's :class:`~labeldp_sim.privacy.protocols.CubeMeanMoments` over the
        cube count n ~ Bin(N, μ) (:class:`~labeldp_sim.privacy.count_law.CountLaw`), (α, β) the clipped
        label moments (E v = 0 removes the terms linear in η).
        """
        d, N, risks = point.d, int(point.N), []
        for c in columns:
            G_est = int(c.tuning)
            mom = _cube_mean_moments(c.mechanism, N, G_est, d)
            a0, a1, b0_label, _ = family.clipped_label_moments(G_inst, mom.T)
            eta2, proj = family.sign_averaged_cubes(G_inst, G_est)
            # ∫η² − Π (the bias) is tiny beside both when G_est ≫ G_inst: taken from the family's
            # cancellation-free form, and the Π terms grouped as ((a α1 − 1)² + α1² (b2 − a²)) Π
            bias = family.sign_averaged_bias(G_inst, G_est)
            spread = (mom.a * a1 - 1.0) ** 2 + a1 ** 2 * (mom.b2 - mom.a ** 2)
            risks.append(float(mom.b2 * a0 ** 2 + spread * proj + mom.b1 * b0_label + mom.b0 + bias))
        return risks

    def tuned_risks(self, instance, point, columns, draws) -> list:
        """One data draw per (G_est, draw), privatized by each of its columns' mechanisms (clip levels)."""
        risks, drawn = [], None
        for c in columns:
            key = (int(c.tuning), c.draw)
            if drawn is None or drawn[0] != key:  # columns come grouped: hold one draw at a time
                tuned = replace(point, G_est=key[0])
                model = instance.cell_model(key[0])
                drawn = (key, tuned, model, self.draw_data(instance, model, tuned, draws.data(*key), "sufficient"))
            _, tuned, model, data = drawn
            risks.append(self.risk(model, data, tuned, c.mechanism, draws.noise(c.tuning, c.slot), "sufficient"))
        return risks


@lru_cache(maxsize=65536)
def _cube_mean_moments(mechanism, N: int, G_est: int, d: int):
    """The mechanism's :class:`~labeldp_sim.privacy.protocols.CubeMeanMoments` on G_est^d cubes (the same
    for every instance: computed once per process and mechanism)."""
    return mechanism.cube_mean_moments(count_law(N, float(G_est) ** (-d)), N, 1.0 / G_est, d)


