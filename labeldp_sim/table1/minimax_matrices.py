"""The risk matrices of one law-free point, read from its store rows (the analysis and the heatmaps share them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["point_matrices"]


def point_matrices(trials: pd.DataFrame, tune_col: str) -> dict:
    """R[r, i, t] for one point's trials (admitted grid instances × oracle tunings), and the law entries.

    ``tune_col`` is the estimator's tuning column beside T (its ``tuning``: G_est or k).
    """
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
