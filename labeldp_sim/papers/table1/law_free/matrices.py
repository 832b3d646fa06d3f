"""The risk matrices of one law-free point, read from its store rows (the analysis and the heatmaps share them).

Every entry passes :func:`checked_risks` on the way in: an excess risk is non-negative, so a
negative entry is either rounding (set to 0) or a wrong number (an error naming it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["point_matrices", "checked_risks", "NegativeRiskError", "ROUNDING"]

# Entries more negative than ROUNDING × (their row's largest |entry|) are errors, the others rounding.
# Why this scale: an exact entry is a sum of a handful of terms (E (9): ∫η², the projection Π, the
# mechanism's moments times the label moments; E (8): ½(Σ T_r − ∫F dν)), each at most a few times
# the signal of the instance (∫η² ≤ 3 E_v Var η, the bump mass), and every row holds the trivial
# tuning (one cube, or k = N), whose risk is of that order.  Float64 sums of them err by ~8ε per
# term, ~32ε ≈ 7e-15 of the row's largest entry; 2^-40 ≈ 9e-13 leaves a factor ~100 for the sums
# over cells inside the terms.  The cancellation this guards against (1 − cos 2πr at G_est/G_inst =
# 2^20, issue 30) gave −3e-7 with a row scale ~0.1: a relative −3e-6, six decades beyond the bound.
# Monte-Carlo entries are realised excess risks, non-negative as well, so the same rule holds there.
ROUNDING = 2.0 ** -40


class NegativeRiskError(ValueError):
    """An excess risk below zero beyond the rounding bound (:data:`ROUNDING`): a wrong number, not noise."""


def checked_risks(trials: pd.DataFrame) -> pd.Series:
    """``trials.excess_risk`` with negatives within the rounding bound set to 0; beyond it, an error.

    The scale of an entry is the largest |excess_risk| of its row (same replicate, instance and
    G_inst); the law's own instance has a single entry, so it takes the largest of its replicate.
    A tiny negative is clipped because it is a rounding of a true risk at most
    ROUNDING × scale ≥ 0 (:data:`ROUNDING`); NaN entries are left as they are.

    Raises
    ------
    NegativeRiskError
        Naming the first offending entry (cell, d, N, ε, replicate, instance, G_inst, tuning,
        G_est or k, T), its value and the bound, and how many entries break it.
    """
    risk = trials.excess_risk.astype(float)
    size = risk.abs()
    row = size.groupby([trials.replicate, trials.instance, trials.G_inst]).transform("max")
    whole = size.groupby(trials.replicate).transform("max")
    scale = row.where(trials.instance != "law", whole)
    bound = ROUNDING * scale
    bad = risk < -bound
    if bad.any():
        first = trials[bad].iloc[0]
        fields = ", ".join(f"{c}={first[c]}" for c in ("cell", "d", "N", "eps", "replicate", "instance", "G_inst",
                                                       "tuning", "G_est", "k", "T") if c in trials.columns)
        raise NegativeRiskError(
            f"negative excess risk {first.excess_risk:.6g} at {fields}: below -{bound[bad].iloc[0]:.3g} "
            f"(2^-40 of its row's largest entry, the rounding bound), so not rounding but a wrong number "
            f"({int(bad.sum())} such entries in this point)")
    return risk.where(~(risk < 0), 0.0)


def point_matrices(trials: pd.DataFrame, tune_col: str) -> dict:
    """R[r, i, t] for one point's trials (admitted grid instances × oracle tunings), and the law entries.

    ``tune_col`` is the estimator's tuning column beside T (its ``tuning``: G_est or k).  Entries
    pass :func:`checked_risks` (negative ones are rounding, set to 0, or an error).
    """
    trials = trials.assign(excess_risk=checked_risks(trials))
    grid = trials[(trials.instance == "grid") & trials.admitted.astype(bool)]
    oracle = grid[grid.tuning == "oracle"]
    T_filled = oracle["T"].fillna(-1.0)
    insts = np.sort(oracle.G_inst.unique())
    tunes = sorted(set(zip(oracle[tune_col], T_filled)))
    reps = np.sort(oracle.replicate.unique())
    R = np.full((len(reps), len(insts), len(tunes)), np.nan)
    ri = np.searchsorted(reps, oracle.replicate.to_numpy())
    ii = np.searchsorted(insts, oracle.G_inst.to_numpy())
    tindex = {t: j for j, t in enumerate(tunes)}
    ti = np.array([tindex[t] for t in zip(oracle[tune_col], T_filled)])
    R[ri, ii, ti] = oracle.excess_risk.to_numpy()
    law_col = grid[grid.tuning == "law"]
    L = np.full((len(reps), len(insts)), np.nan)
    L[np.searchsorted(reps, law_col.replicate.to_numpy()),
      np.searchsorted(insts, law_col.G_inst.to_numpy())] = law_col.excess_risk.to_numpy()
    tied = trials[trials.instance == "law"].sort_values("replicate")
    return {"R": R, "law": L, "tied": tied.excess_risk.to_numpy(), "insts": insts, "tunes": tunes,
            "reps": reps, "tune_col": tune_col, "law_tuning": law_col[[tune_col, "T"]].iloc[0].tolist(),
            "law_inst": int(tied.G_inst.iloc[0])}
