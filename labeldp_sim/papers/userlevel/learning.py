r"""User-level LDP learning of papers/003: stochastic optimisation, classification, regression.

Users i = 1..n each hold m i.i.d. samples and send ONE report of their whole
data set (user-level ε-LDP, Definition 1, Eq. (1)).  The families of
Sections 5-6 (with the hard instances of Theorems 10 and 12) and the three
learning protocols live in modules of their own; this module gathers them
under the names the experiments and the tests use:

* :class:`Algorithm3` — stochastic optimisation (Section 5, Algorithm 3,
  update (15), Theorem 8, (16)-(17)), with its family :class:`QuadraticSO`:
  :mod:`.so`;
* :class:`Algorithm4` — nonparametric classification on cubes with
  Hadamard-coded user statistics (Appendix E.1, (130)-(139), Theorem 9) and
  :class:`Algorithm5` — nonparametric regression, 2K groups (Appendix F.1,
  (190)-(195), Theorem 11): :mod:`.nonparametric`;
* the classification and regression families :class:`LinearMargin`,
  :class:`SineRegression`, :class:`Thm10Hard`, :class:`Thm12Hard`:
  :mod:`.label_families`;
* the exact per-cube integrals and risks (:class:`CubeMoments`,
  :func:`excess_risk`, :func:`regression_risk`, :func:`box_radial_integral`,
  :func:`cube_index`): :mod:`.integrals`; Hadamard coding: :mod:`.hadamard`.

Every privatisation goes through the user-level randomizers of
:mod:`.mechanisms` via the reusable Algorithm 1 / Algorithm 2 code of
:mod:`.mean_algorithms`; users' data are :class:`~.data.UserValues` on both
simulation paths, so the same randomizer code runs on the per-user path
(literal samples) and on the sufficient-statistic path.

Public API
----------
Families (``name``, ``task``, ``minimax_hard``, ``instance(rng, n, m, eps, d)``):
    :class:`QuadraticSO` ("quadratic", so), :class:`LinearMargin` ("linear",
    classification), :class:`SineRegression` ("sine", regression),
    :class:`Thm10Hard` ("thm10", classification), :class:`Thm12Hard` ("thm12",
    regression); :data:`FAMILIES`.
Estimators (``name``, ``task``, ``trial(family, n, m, eps, d, rng, path)``):
    :class:`Algorithm3` ("alg3"), :class:`Algorithm4` ("alg4"),
    :class:`Algorithm5` ("alg5"); :data:`ESTIMATORS`.
"""

from __future__ import annotations

from labeldp_sim.papers.userlevel.hadamard import hadamard_decode, hadamard_encode, hadamard_matrix
from labeldp_sim.papers.userlevel.integrals import CubeMoments, box_radial_integral, cube_index, excess_risk, regression_risk
from labeldp_sim.papers.userlevel.label_families import LabelFamily, LabelInstance, LinearMargin, SineRegression, Thm10Hard, Thm12Hard
from labeldp_sim.papers.userlevel.learning_base import LearningEstimator
from labeldp_sim.papers.userlevel.nonparametric import MAX_CUBES, Algorithm4, Algorithm5
from labeldp_sim.papers.userlevel.so import Algorithm3, QuadraticSO, SOInstance

__all__ = ["CubeMoments", "LabelInstance", "LabelFamily", "LinearMargin", "SineRegression", "Thm10Hard",
           "Thm12Hard", "SOInstance", "QuadraticSO", "hadamard_matrix", "hadamard_encode", "hadamard_decode",
           "cube_index", "box_radial_integral", "excess_risk", "regression_risk", "LearningEstimator",
           "Algorithm3", "Algorithm4", "Algorithm5", "FAMILIES", "ESTIMATORS", "MAX_CUBES"]

FAMILIES = {cls.name: cls for cls in (QuadraticSO, LinearMargin, SineRegression, Thm10Hard, Thm12Hard)}
ESTIMATORS = {cls.name: cls for cls in (Algorithm3, Algorithm4, Algorithm5)}
