r"""Law-free analysis (SPEC §5a): M, S and the law-tied value per point; fits; verdicts; outputs.

Per grid point the trials of :mod:`.minimax` give R_r[i, t] (replicate r,
admitted instance i, oracle tuning t = (G_est or k, T)), the law-tuned
column R_r[i, law] and the law-tied value R_r[law instance, law tuning].

Selection is **cross-fitted**: on the even replicates (half A) take
t_A = argmin_t max_i mean_A R[i, t] and i_A = argmax_i mean_A R[i, t_A], and
evaluate R[i_A, t_A] on the odd replicates (half B); then swap the halves.

    M = ( mean_B R[i_A, t_A] + mean_A R[i_B, t_B] ) / 2,
    se(M) = ½ √( var_B / n_B + var_A / n_A ),

so the number reported was not used to choose where it is read, and its
standard error is an ordinary Monte-Carlo one (the two halves are
independent).  S is cross-fitted the same way over i at the law's tuning.
The arg-optima reported (G*_inst, G*_est or k*, T*) come from all
replicates; h*_est is refined by a parabola through log max_i R around the
grid minimum (a sub-grid vertex, clipped to the neighbouring grid values).

A point whose optimum (t* in any tuning dimension, or i*) lies on an edge of
its grid is flagged ``edge`` and left out of the fits; the fit of M, of S and
of the law-tied value is :func:`~labeldp_sim.fit.fit_slope` (WLS with Birge
inflation) with the usual equivalence test, and the slope of log h*_est is an
OLS fit compared with the law's exponent (within ``H_TOL``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..core.fit import fit_slope, verdict  # noqa: E402
from ..core.store import atomic_write  # noqa: E402
from .theory import CELLS  # noqa: E402

__all__ = ["point_matrices", "cross_fit", "analyse", "write_law_free", "write_minimax_table",
           "H_TOL", "TUNING_LABEL"]

H_TOL = 0.1
TUNING_LABEL = "oracle (best on the grid for the worst admitted instance)"


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


def cross_fit(R: np.ndarray, reps: np.ndarray) -> tuple[float, float]:
    """Cross-fitted min over tunings of max over instances (see module docstring); R: (r, i, t)."""
    if R.ndim == 2:
        R = R[:, :, None]
    halves = [reps % 2 == 0, reps % 2 == 1]
    values, variances = [], []
    for select, evaluate in (halves, halves[::-1]):
        mean = R[select].mean(axis=0)
        t = int(np.argmin(mean.max(axis=0)))
        i = int(np.argmax(mean[:, t]))
        held = R[evaluate][:, i, t]
        values.append(held.mean())
        variances.append(held.var(ddof=1) / len(held))
    return float(np.mean(values)), float(0.5 * np.sqrt(sum(variances)))


def _vertex(log_x: np.ndarray, y: np.ndarray, j: int) -> float:
    """Sub-grid minimum: vertex of the parabola through (j−1, j, j+1), clipped to [x_{j−1}, x_{j+1}]."""
    if j == 0 or j == len(y) - 1:
        return float(log_x[j])
    if np.any(y[j - 1:j + 2] <= 0):
        return float(log_x[j])
    x3, y3 = log_x[j - 1:j + 2], np.log(y[j - 1:j + 2])
    a, b, _ = np.polyfit(x3, y3, 2)
    if a <= 0:
        return float(log_x[j])
    return float(np.clip(-b / (2 * a), x3[0], x3[2]))


def _optima(mats: dict) -> dict:
    """Arg-optima from all replicates, their edge flags, the flat range of the worst instance."""
    R = mats["R"]
    mean = R.mean(axis=0)
    se = R.std(axis=0, ddof=1) / np.sqrt(R.shape[0])
    worst = mean.max(axis=0)
    t = int(np.argmin(worst))
    i = int(np.argmax(mean[:, t]))
    tune_value, T = mats["tunes"][t]
    tune_values = sorted({v for v, _ in mats["tunes"]})
    T_values = sorted({c for _, c in mats["tunes"]})
    # Only a truncated end is an edge: G = 1 (one cube), k = 1 and k = N are the ends of
    # what exists; the caps G_max (and T's range at both ends) are where the grid stops.
    edges = []
    if tune_value == tune_values[-1] and mats["tune_cap"]:
        edges.append(f"{mats['tune_col']}*={tune_value} at the grid cap")
    if len(T_values) > 1 and T in (T_values[0], T_values[-1]):
        edges.append(f"T*={T:.3g} on its grid edge")
    insts = mats["insts"]
    if i == len(insts) - 1 and len(insts) > 1:
        edges.append(f"G*_inst={insts[i]} at the grid cap")
    flat = mean[:, t] >= mean[i, t] - 2 * np.hypot(se[i, t], se[:, t])
    # the worst-case profile over the first tuning dimension at T*, for the sub-grid vertex
    same_T = [j for j, (_, c) in enumerate(mats["tunes"]) if c == T]
    profile_x = np.log([mats["tunes"][j][0] for j in same_T])
    jmin = int(np.argmin(worst[same_T]))
    return {"t": t, "i": i, "tune": tune_value, "T": T, "G_inst": int(insts[i]), "edge": "; ".join(edges),
            "inst_flat_lo": int(insts[flat].min()), "inst_flat_hi": int(insts[flat].max()),
            "log_tune_vertex": _vertex(profile_x, worst[same_T], jmin)}


def _law_exponent(cell, axis: str, x_lo: float, x_hi: float, fixed: float, beta: float, d: int, p) -> float:
    """d log h_law / d log(axis) between the two ends of a fit (the law's tuning exponent)."""
    def h(x):
        N, eps = (x, fixed) if axis == "N" else (fixed, x)
        return cell.bandwidth(N, eps, beta, d, 1.0, p)
    return float(np.log(h(x_hi) / h(x_lo)) / np.log(x_hi / x_lo))


def analyse(trials: pd.DataFrame, spec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-point table (M, S, law-tied, optima, flags) and the fits of one law-free run."""
    rows = []
    cell, est = spec.cell, spec.estimator
    for pt in spec.exp.points:
        part = trials[(trials.axis == pt.axis) & (trials.d == pt.d) & (trials.N_requested == pt.N_requested)
                      & (trials.eps_requested == pt.eps_requested)]
        mats = point_matrices(part, est.tuning)
        mats["tune_cap"] = est.grid_capped(mats["tunes"][-1][0], pt.N)
        M, M_se = cross_fit(mats["R"], mats["reps"])
        S, S_se = cross_fit(mats["law"], mats["reps"])
        opt = _optima(mats)
        log_h_est = est.log_bandwidth(opt["log_tune_vertex"], pt.N, pt.d)
        dist = spec.exp.distributions[pt.d]
        rows.append({
            "cell": cell.name, "axis": pt.axis, "d": pt.d, "N": pt.N, "eps": pt.eps,
            "in_regime": cell.in_regime(pt.axis, pt.N, pt.eps, dist.beta, pt.d, dist.p),
            "M": M, "M_se": M_se, "S": S, "S_se": S_se,
            "law_tied": float(np.mean(mats["tied"])),
            "law_tied_se": float(np.std(mats["tied"], ddof=1) / np.sqrt(len(mats["tied"]))),
            "tuning": TUNING_LABEL, "tuning_parameter": mats["tune_col"],
            "opt_tuning": opt["tune"], "opt_T": np.nan if opt["T"] == -1.0 else opt["T"],
            "h_est_star": float(np.exp(log_h_est)),
            "law_tuning": mats["law_tuning"][0], "law_T": mats["law_tuning"][1],
            "G_inst_star": opt["G_inst"], "G_inst_flat": f"{opt['inst_flat_lo']}-{opt['inst_flat_hi']}",
            "law_G_inst": mats["law_inst"],
            "instances": len(mats["insts"]),
            "G_inst_max": int(mats["insts"][-1]), "tunings": len(mats["tunes"]),
            "replicates": len(mats["reps"]), "edge": opt["edge"],
            "margin_C_gamma": spec.margin_constant.get(pt.d, np.nan),
        })
    points = pd.DataFrame(rows)
    for d in spec.exp.distributions:
        scales = {G: ok for (dd, G), ok in spec.admitted.items() if dd == d}
        refused = [G for G, ok in sorted(scales.items()) if not ok]
        constant = spec.margin_constant.get(d, np.nan)
        points.loc[points.d == d, "admission"] = (
            f"{len(scales) - len(refused)}/{len(scales)} grid scales admitted"
            + (f" (margin C_γ = {constant:.3g})" if np.isfinite(constant) else "")
            + (f"; refused G = {refused}" if refused else ""))
    return points, fit_law_free(points, spec)


def fit_law_free(points: pd.DataFrame, spec) -> pd.DataFrame:
    """Fits of M, S and the law-tied value on each (axis, d), with verdicts per statement."""
    cell, tol, rows = spec.cell, spec.tol, []
    dist0 = next(iter(spec.exp.distributions.values()))
    beta, gamma, p = dist0.beta, dist0.gamma, dist0.p
    for (axis, d), group in points.groupby(["axis", "d"], sort=True):
        if axis not in cell.axes:
            continue
        regime = group[group.in_regime]
        used = regime[regime.edge == ""]
        fixed = group.eps.iloc[0] if axis == "N" else group.N.iloc[0]
        law_h = (_law_exponent(cell, axis, float(used[axis].min()), float(used[axis].max()), fixed, beta,
                               int(d), p) if len(used) >= 2 else np.nan)
        h_slope = (float(np.polyfit(np.log(used[axis]), np.log(used.h_est_star), 1)[0])
                   if len(used) >= 2 else np.nan)
        for quantity, mean, se, subset in (("M", "M", "M_se", used), ("S", "S", "S_se", regime),
                                           ("law_tied", "law_tied", "law_tied_se", regime)):
            subset = subset[(subset[mean] > 0) & (subset[se] > 0)]  # a zero risk has no logarithm
            fitted = (fit_slope(subset[axis], subset[mean], subset[se])
                      if len(subset) >= spec.min_points else None)
            for rank, exponent in enumerate(cell.statements(axis)):
                theory = exponent.slope(beta, gamma, int(d), p)
                row = {"cell": cell.name, "quantity": quantity, "axis": axis, "d": int(d),
                       "statement": exponent.statement, "primary": rank == 0, "theory": theory,
                       "theory_formula": exponent.formula, "theory_source": exponent.source, "tol": tol,
                       "points": len(subset), "points_in_regime": len(regime),
                       "points_edge": int((regime.edge != "").sum()),
                       "tuning": TUNING_LABEL if quantity == "M" else
                       ("the law's" if quantity == "S" else "the law's, on the law's instance"),
                       "h_est_slope": h_slope if quantity == "M" else np.nan,
                       "law_h_exponent": law_h if quantity == "M" else np.nan}
                if fitted is None:
                    row.update(slope=np.nan, se=np.nan, ci_low=np.nan, ci_high=np.nan, birge=np.nan,
                               intercept=np.nan, verdict="inconclusive",
                               reason=f"too few points ({len(subset)} < {spec.min_points}): "
                                      + _edge_reason(regime))
                else:
                    row.update(fitted)
                    row["verdict"] = verdict(fitted["ci_low"], fitted["ci_high"], theory, tol)
                    row["reason"] = _reason(row, fitted, tol, subset if quantity == "M" else None)
                row["h_est_ok"] = (bool(abs(h_slope - law_h) <= H_TOL)
                                   if quantity == "M" and np.isfinite(h_slope) else None)
                rows.append(row)
    return pd.DataFrame(rows)


def _edge_reason(regime: pd.DataFrame) -> str:
    flagged = regime[regime.edge != ""]
    if not len(flagged):
        return "too few grid points in the theorem's regime"
    return "optimum on a grid edge at " + ", ".join(
        f"{'N' if r.axis == 'N' else 'eps'}={r.N if r.axis == 'N' else r.eps:.3g} ({r.edge})"
        for _, r in flagged.iterrows())


def _reason(row: dict, fitted: dict, tol: float, used: pd.DataFrame | None = None) -> str:
    if row["verdict"] == "consistent":
        return ""
    if row["verdict"].startswith("inconsistent") and used is not None and len(used):
        lo, hi = int(used.G_inst_star.min()), int(used.G_inst_star.max())
        est_lo, est_hi = used.opt_tuning.min(), used.opt_tuning.max()
        where = (f"the worst instance stays coarse (G*_inst {lo}-{hi}) while the oracle tuning moves "
                 f"({used.tuning_parameter.iloc[0]}* {est_lo:g}-{est_hi:g})")
        if hi <= 8:
            return (where + ": coarse bumps, whose edges carry the margin term, dominate over the "
                    "whole range; pre-asymptotic in this grid (larger N, or G_max, to leave it)")
        return where + ": not explained by the grid; see heatmap.png"
    width = fitted["ci_high"] - fitted["ci_low"]
    if row["verdict"] == "inconclusive":
        if width > 2 * tol:
            return f"CI width {width:.3f} > 2·tol: Monte-Carlo noise of the selection (more law_free.reps)"
        return (f"CI [{fitted['ci_low']:.3f}, {fitted['ci_high']:.3f}] straddles theory ± tol: "
                "pre-asymptotic (the fitted range is short or curved)")
    return ""


# --------------------------------------------------------------------------- outputs


def plot_rates_law_free(points: pd.DataFrame, fits: pd.DataFrame, path: Path, title: str) -> None:
    """M, S and the law-tied value against the axis, one panel per (axis, d)."""
    groups = list(points.groupby(["axis", "d"], sort=True))
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 4.2), squeeze=False)
    styles = {"M": ("o", "C0", "M = min max (oracle tuning)"), "S": ("s", "C1", "S = max at the law's tuning"),
              "law_tied": ("^", "C2", "law-tied")}
    for ax, ((axis, d), group) in zip(axes[0], groups):
        x = group[axis].to_numpy(float)
        edge = (group.edge != "").to_numpy()
        for quantity, (marker, color, label) in styles.items():
            y, se = group[quantity].to_numpy(), group[quantity + "_se" if quantity != "law_tied"
                                                      else "law_tied_se"].to_numpy()
            fit = fits[(fits.axis == axis) & (fits.d == d) & (fits.quantity == quantity) & fits.primary]
            text = ""
            if len(fit) and np.isfinite(fit.slope.iloc[0]):
                f = fit.iloc[0]
                text = f" {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]"
            ax.errorbar(x[~edge], y[~edge], yerr=1.96 * se[~edge], fmt=marker, color=color, capsize=3,
                        label=label + text)
            if edge.any():
                ax.errorbar(x[edge], y[edge], yerr=1.96 * se[edge], fmt=marker, mfc="none", color=color,
                            capsize=3, alpha=0.6)
        fit = fits[(fits.axis == axis) & (fits.d == d) & (fits.quantity == "M") & fits.primary]
        if len(fit) and np.isfinite(fit.slope.iloc[0]):
            f = fit.iloc[0]
            xs = np.geomspace(x.min(), x.max(), 20)
            centre = np.sqrt(x.min() * x.max())
            anchor = np.exp(f.intercept) * centre ** f.slope
            ax.plot(xs, anchor * (xs / centre) ** f.theory, "k--", alpha=0.6,
                    label=f"Table I {f.theory:.3f} [{f.verdict}]")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N" if axis == "N" else "ε")
        ax.set_ylabel("excess risk")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
        ax.set_title(f"{title} law-free, d={d} (hollow: optimum on a grid edge)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_heatmaps(trials: pd.DataFrame, points: pd.DataFrame, path: Path, title: str, tune_col: str) -> None:
    """log10 mean R over (G_inst, tuning) at T*, a panel per point, rows by d; minimax path marked."""
    rows = sorted(points.d.unique())
    ncols = int(points.groupby("d").size().max())
    fig, axes = plt.subplots(len(rows), ncols, figsize=(2.6 * ncols, 2.5 * len(rows)), squeeze=False)
    for a in axes.ravel():
        a.set_visible(False)
    for ri, d in enumerate(rows):
        for ci, (_, pt) in enumerate(points[points.d == d].iterrows()):
            part = trials[(trials.axis == pt.axis) & (trials.d == d) & (trials.N == pt.N)
                          & (np.isclose(trials.eps, pt.eps))]
            mats = point_matrices(part, tune_col)
            T = -1.0 if not np.isfinite(pt.opt_T) else pt.opt_T
            cols = [j for j, (_, c) in enumerate(mats["tunes"]) if np.isclose(c, T)]
            mean = mats["R"].mean(axis=0)[:, cols]
            tune = np.array([mats["tunes"][j][0] for j in cols], dtype=float)
            ax = axes[ri, ci]
            ax.set_visible(True)
            image = ax.pcolormesh(np.arange(len(tune) + 1), np.arange(len(mats["insts"]) + 1),
                                  np.log10(np.maximum(mean, 1e-300)), shading="flat", cmap="viridis")
            worst = np.argmax(mean, axis=0)
            ax.plot(np.arange(len(tune)) + 0.5, worst + 0.5, "w.-", lw=0.8, ms=3)
            j = int(np.argmin(mean.max(axis=0)))
            ax.plot(j + 0.5, worst[j] + 0.5, "r*", ms=9)
            step = max(1, len(tune) // 5)
            ax.set_xticks(np.arange(0, len(tune), step) + 0.5, [f"{v:g}" for v in tune[::step]], fontsize=5)
            step_i = max(1, len(mats["insts"]) // 5)
            ax.set_yticks(np.arange(0, len(mats["insts"]), step_i) + 0.5,
                          [str(v) for v in mats["insts"][::step_i]], fontsize=5)
            ax.set_xlabel(f"{mats['tune_col']} (oracle)", fontsize=6)
            ax.set_ylabel("G_inst", fontsize=6)
            label = f"N={pt.N:.2g}" if pt.axis == "N" else f"ε={pt.eps:.2g}"
            ax.set_title(f"d={d} {label}", fontsize=7)
            fig.colorbar(image, ax=ax, shrink=0.7).ax.tick_params(labelsize=5)
    fig.suptitle(f"{title}: log10 R (white: worst instance per tuning; red star: minimax)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_law_free(spec, trials: pd.DataFrame, points: pd.DataFrame, fits: pd.DataFrame, out: Path) -> None:
    """fit.csv, points.csv, heatmap.png and rate.png of one cell (per-trial rows stay in the store)."""
    atomic_write(out / "points.csv", lambda p: points.to_csv(p, index=False))
    atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
    atomic_write(out / "rate.png", lambda p: plot_rates_law_free(points, fits, p, spec.name))
    atomic_write(out / "heatmap.png", lambda p: plot_heatmaps(trials, points, p, spec.name, spec.estimator.tuning))


TABLE_COLUMNS = ["cell", "axis", "d", "theory", "M_slope", "M_ci_low", "M_ci_high", "verdict", "reason",
                 "points", "points_in_regime", "S_slope", "S_verdict", "law_tied_slope", "law_tied_verdict",
                 "h_est_slope", "law_h_exponent", "h_est_ok", "theorem7_verdict", "tuning"]


def minimax_table(base: Path) -> pd.DataFrame:
    """One row per (cell, axis, d) from results/minimax/<cell>/fit.csv."""
    rows = []
    for fit_csv in sorted(base.glob("*/fit.csv")):
        fits = pd.read_csv(fit_csv)
        for (cell, axis, d), group in fits.groupby(["cell", "axis", "d"], sort=True):
            prim = group[group.primary.astype(bool)].set_index("quantity")
            m = prim.loc["M"]
            t7 = group[(group.quantity == "M") & (group.statement == "Theorem 7")]
            rows.append({"cell": cell, "axis": axis, "d": int(d), "theory": m.theory,
                         "M_slope": m.slope, "M_ci_low": m.ci_low, "M_ci_high": m.ci_high,
                         "verdict": m.verdict, "reason": "" if pd.isna(m.reason) else m.reason,
                         "points": int(m.points), "points_in_regime": int(m.points_in_regime),
                         "S_slope": prim.loc["S"].slope, "S_verdict": prim.loc["S"].verdict,
                         "law_tied_slope": prim.loc["law_tied"].slope,
                         "law_tied_verdict": prim.loc["law_tied"].verdict,
                         "h_est_slope": m.h_est_slope, "law_h_exponent": m.law_h_exponent,
                         "h_est_ok": m.h_est_ok, "tuning": m.tuning,
                         "theorem7_verdict": t7.verdict.iloc[0] if len(t7) else ""})
    order = {name: i for i, name in enumerate(CELLS)}
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return table.sort_values(["cell", "axis", "d"], key=lambda s: s.map(order) if s.name == "cell" else s)


def _f(x, digits=3):
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{digits}f}"


def write_minimax_table(base: Path) -> pd.DataFrame:
    """results/minimax/table.csv and table.md from every cell's fit.csv."""
    table = minimax_table(base)
    atomic_write(base / "table.csv", lambda p: table.to_csv(p, index=False))
    lines = ["# Table I, law-free (SPEC §5a)", "",
             "Worst admitted instance × **oracle tuning** (best G_est / k / T on fixed geometric grids; "
             "no exponent of the theory in either grid). M = min over tunings of max over instances, "
             "cross-fitted on even/odd replicates; points whose optimum lies on a grid edge are left out. "
             "S = worst case at the law's tuning; law-tied = the law's own instance and tuning.", "",
             "| cell | axis | d | Table I | M slope [95% CI] | verdict | S slope | law-tied slope | "
             "h*_est slope (law) | Theorem 7 | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        h = f"{_f(r.h_est_slope, 2)} ({_f(r.law_h_exponent, 2)})"
        lines.append(f"| {r.cell} | {r.axis} | {r.d} | {_f(r.theory)} | {_f(r.M_slope)} "
                     f"[{_f(r.M_ci_low)}, {_f(r.M_ci_high)}] | {r.verdict} | {_f(r.S_slope)} | "
                     f"{_f(r.law_tied_slope)} | {h} | {r.theorem7_verdict or ''} | {r.reason or ''} |")
    counts = table.verdict.value_counts().to_dict()
    lines += ["", "Verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())), ""]
    atomic_write(base / "table.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    return table
