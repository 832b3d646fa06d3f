"""Problem families of Table I: distributions of (X, Y) with a known regression function.

By concern: what every family is (:mod:`.base`), the cell models the exact
risks read (:mod:`.cells`), the bump profiles and their cube integrals
(:mod:`.geometry`), the classification tilts (:mod:`.classification`), the
minimax-hard regression bumps (:mod:`.regression`) and the smooth noisy
regression (:mod:`.noisy`).  A config reaches a family by its registered ``name``
(``conf/table1/distribution/<name>.yaml``).
"""

from labeldp_sim.papers.table1.families.base import Family, RegressionFamily
from labeldp_sim.papers.table1.families.cells import CellModel, RegressionCellModel, cube_index
from labeldp_sim.papers.table1.families.classification import BumpInstance, HolderBump, SmoothInstance, SmoothMargin
from labeldp_sim.papers.table1.families.geometry import PROFILES, BumpProfile, linf_margin_factor
from labeldp_sim.papers.table1.families.noisy import (NoisyGaussian, NoisyPareto, NoisyRegression,
                                                    NoisyRegressionInstance, NoisyStudentT)
from labeldp_sim.papers.table1.families.regression import BoundedBump, BumpSigns, HeavyTailBump, RegressionBumpInstance

__all__ = ["Family", "RegressionFamily", "CellModel", "RegressionCellModel", "cube_index", "HolderBump",
           "BumpInstance", "SmoothMargin", "SmoothInstance", "BoundedBump", "HeavyTailBump", "BumpSigns",
           "RegressionBumpInstance", "NoisyRegression", "NoisyGaussian", "NoisyStudentT", "NoisyPareto",
           "NoisyRegressionInstance",
           "BumpProfile", "PROFILES", "linf_margin_factor"]
