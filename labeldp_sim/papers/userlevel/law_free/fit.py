r"""Law-free user-level rows: the min–max per point, local slopes, verdicts, files (presentation only).

From the entries of :mod:`.law_free` (expected errors per point × tuning ×
scale × sign draw):

* **M** at a point is min over the tunings offered there (every entry
  admitted) of the max over scales of the mean over sign draws; its standard
  error is that of the sign average at the chosen (tuning, scale).
* A point whose oracle tuning sits on its grid's edge (or at the smallest
  tuning admitted there) is **ruled out** of the fits: the optimum may lie
  beyond, so M there is not the min–max the row is about; unless the
  worst-case risk is flat there (the neighbouring tuning within
  ``FLAT_EDGE``), when nothing beyond can be materially better, or the edge
  is 0, the parameter's own bound.  A worst scale on
  its grid's edge is reported (``scale_edge``), not ruled out: the families'
  risks flatten at both ends (Theorem 2's at s → 0, where Var Y → D²/m; the bump
  classes' once a bump covers an estimator cube), which is where the grids end.
* **Local slopes** over sliding windows of ``WINDOW_DECADES`` decades
  (:mod:`labeldp_sim.stats.windows`, the rule of Table I's law-free rows; the
  entries are closed forms averaged over a few sign draws, so the windows are
  fitted by OLS with the residual SE and the AR(1) factor).  Depth is the
  effective sample size n·m·(ε²∧ε): the deepest window is the one where it is
  largest.
* **Verdict** against the first rate of the experiment (the minimax rate:
  the lower bound, which the upper bound matches up to log factors), two-sided
  on the deepest window, pre-asymptotic when the previous window disagrees
  (``one_sided``: a worst-case row against an upper bound, "upper bound respected" or "violated");
  every other rate's local slope is listed beside it, and an upper bound is
  checked one-sidedly ("upper bound respected" when the deepest CI lies below
  its local slope + tol).

Outputs under ``results/userlevel/law_free/``: per experiment ``points.csv``,
``windows.csv``, ``fit.csv`` and ``convergence.png``; ``table.md`` and
``table.csv`` over every experiment.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labeldp_sim.stats.fit import verdict  # noqa: E402
from labeldp_sim.report.figures import THEORY_ZORDER, hollow_handle, save_figure, wrap_title  # noqa: E402
from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.stats.windows import verdict_reason, window_fits, window_text, window_verdict  # noqa: E402
from labeldp_sim.papers.userlevel.report import (BOUND_RESPECTED, BOUND_VIOLATED, ROW_OF_RATE, bound_verdict,  # noqa: E402
                                                 pipe_table)
from labeldp_sim.papers.userlevel.theory import RATES, expected_slope, rate_arguments  # noqa: E402

__all__ = ["analyse", "write_law_free", "write_law_free_table", "WINDOW_DECADES", "LAW_FREE_DIR"]

WINDOW_DECADES = 2.0
LAW_FREE_DIR = "law_free"
AXES = ("n", "m", "eps")


def _effective(n, m, eps):
    return n * m * np.minimum(np.square(eps), eps)


FLAT_EDGE = 1e-3  # an edge optimum whose neighbour is within this relative margin: the risk is flat there


def _flat_at(curve: pd.Series, t: float) -> bool:
    """Whether the worst-case risk is flat at the edge tuning ``t`` (its neighbour within FLAT_EDGE): then what
    lies beyond the grid cannot be materially better (e.g. Algorithm 1's margin Δ → 0 once the bins cover the
    user means' spread)."""
    pos = curve.index.get_loc(t)
    neighbour = curve.iloc[pos + 1] if pos == 0 and len(curve) > 1 else curve.iloc[pos - 1] if pos > 0 else np.nan
    return bool(np.isfinite(neighbour) and neighbour <= curve.iloc[pos] * (1 + FLAT_EDGE))


def point_values(entries: pd.DataFrame, spec) -> pd.DataFrame:
    """One row per point: M, its SE, the oracle tuning and worst scale, and the edge flags."""
    rows = []
    tunings, scales = np.array(spec.tunings), np.array(spec.scales)
    for (n, m, eps, d), part in entries.groupby(["n", "m", "eps", "d"]):
        ok_tuning = part.groupby("tuning").admitted.all()
        offered = part[part.tuning.isin(ok_tuning[ok_tuning].index)]
        base = {"n": int(n), "m": int(m), "eps": float(eps), "d": int(d),
                "offered": int(ok_tuning.sum()), "tunings": len(tunings)}
        if offered.empty:
            rows.append({**base, "M": np.nan, "M_se": np.nan, "tuning_star": np.nan, "scale_star": np.nan,
                         "length_star": np.nan, "scale_edge": False, "flag": "no tuning admitted (stage I or the theorem's regime)"})
            continue
        by = offered.groupby(["tuning", "scale"]).error.agg(["mean", "std", "count"]).reset_index()
        worst = by.loc[by.groupby("tuning")["mean"].idxmax()]
        best = worst.loc[worst["mean"].idxmin()]
        t, c = float(best.tuning), float(best.scale)
        flags = []
        admitted_t = np.sort(ok_tuning[ok_tuning].index.to_numpy(float))
        curve = worst.set_index("tuning")["mean"].sort_index()
        # t = 0 is the parameter's own bound (e.g. no margin Δ): nothing lies beyond it
        # a one-value grid is the theorem's own tuning (a worst-case row), not an oracle that may lie beyond
        if len(tunings) > 1 and (np.isclose(t, tunings[0]) or np.isclose(t, tunings[-1])
                                 or np.isclose(t, admitted_t[0])) and t != 0 and not _flat_at(curve, t):
            where = "on the grid's edge" if t in (tunings[0], tunings[-1]) else "at the smallest admitted value"
            flags.append(f"oracle {spec.tuning_key} = {t:.3g} {where}")
        scale_edge = bool(len(scales) > 1 and (np.isclose(c, scales[0]) or np.isclose(c, scales[-1])))
        length = offered[(offered.tuning == t) & (offered.scale == c)].length.mean()
        se = float(best["std"] / np.sqrt(best["count"])) if best["count"] > 1 else 0.0
        rows.append({**base, "M": float(best["mean"]), "M_se": se, "tuning_star": t, "scale_star": c,
                     "length_star": float(length), "scale_edge": scale_edge, "flag": "; ".join(flags)})
    points = pd.DataFrame(rows)
    points["depth"] = 1.0 / _effective(points.n, points.m, points.eps)
    return points


def _axis_points(points: pd.DataFrame, spec) -> pd.DataFrame:
    """``points`` once per sweep that holds them, with its ``axis``."""
    parts = []
    keyed = points.set_index(["n", "m", "eps", "d"])
    for axis, pts in spec.sweeps.items():
        idx = [(p.n, p.m, p.eps, p.d) for p in pts if (p.n, p.m, p.eps, p.d) in keyed.index]
        parts.append(keyed.loc[idx].reset_index().assign(axis=axis))
    return pd.concat(parts, ignore_index=True) if parts else points.assign(axis=[])


def _fixed(spec, axis: str, frame: pd.DataFrame, d) -> dict:
    """The rate's other arguments: the sweep's fixed axes (a d sweep: n, m and ε; otherwise also its d)."""
    return rate_arguments(spec.family_params, **{a: float(frame[a].iloc[0]) for a in AXES if a != axis},
                          **({} if axis == "d" else {"d": d}))


def _rows(points: pd.DataFrame):
    """(axis, d, frame) per fitted row: an n, m or ε sweep at one d; a d sweep whole (its d reported as NaN).

    A d sweep's depth is 1/d: a larger d is further into the regime where the privacy term, which carries
    the d-factor of Theorems 6 and 7, dominates the non-private D²/(mn)."""
    for (axis, d), frame in points.assign(group=np.where(points.axis == "d", np.nan, points.d)).groupby(
            ["axis", "group"], sort=False, dropna=False):
        yield axis, (np.nan if axis == "d" else int(d)), (frame.assign(depth=1.0 / frame.d) if axis == "d" else frame)


def analyse(entries: pd.DataFrame, spec) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(points, windows, fits) of one law-free experiment."""
    points = _axis_points(point_values(entries, spec), spec)
    fits, windows = [], []
    for axis, d, frame in _rows(points):
        usable = frame[np.isfinite(frame.M) & (frame.flag == "")]
        wins = window_fits(usable, axis, "M", "M_se", exact=True, decades=spec.window_decades, depth="depth")
        windows.append(wins.assign(axis=axis, d=d))
        deep = wins[wins.deepest].iloc[0] if wins.deepest.any() else None
        prev = wins[wins.previous].iloc[0] if wins.previous.any() else None
        ruled = frame[frame.flag != ""]
        ruled_text = (f"{len(ruled)} of {len(frame)} points ({'; '.join(sorted(set(ruled.flag)))})"
                      if len(ruled) else "")
        for k, rate in enumerate(spec.rates):
            theory = (expected_slope(rate, axis, [deep.window_lo, deep.window_hi], _fixed(spec, axis, frame, d))
                      if deep is not None else np.nan)
            kind = RATES[rate].kind
            if k == 0:
                v = window_verdict(deep, prev, theory, spec.tol)
                if spec.one_sided and v in ("consistent", "inconsistent"):
                    v = bound_verdict(deep.ci_low, deep.ci_high, theory, spec.tol)
            elif deep is None:
                v = "inconclusive"
            elif kind == "upper":
                v = bound_verdict(deep.ci_low, deep.ci_high, theory, spec.tol)
            else:
                v = verdict(deep.ci_low, deep.ci_high, theory, spec.tol)
            fits.append({
                "experiment": spec.name, "task": spec.task, "family": spec.family_name,
                "estimator": spec.estimator_name, "axis": axis, "d": d, "rate": rate, "rate_kind": kind,
                "rate_source": RATES[rate].source, "primary": k == 0, "theory": theory,
                "deep_slope": np.nan if deep is None else deep.slope,
                "deep_ci_low": np.nan if deep is None else deep.ci_low,
                "deep_ci_high": np.nan if deep is None else deep.ci_high,
                "deep_lo": np.nan if deep is None else deep.window_lo,
                "deep_hi": np.nan if deep is None else deep.window_hi,
                "prev_slope": np.nan if prev is None else prev.slope,
                "prev_ci_low": np.nan if prev is None else prev.ci_low,
                "prev_ci_high": np.nan if prev is None else prev.ci_high,
                "verdict": v, "points": len(usable), "points_total": len(frame), "tol": spec.tol,
                "table1_row": ROW_OF_RATE.get(rate, ""),
                "window_decades": spec.window_decades,
                "reason": (_worst_case(v, deep, prev, axis, ruled_text) if k == 0 and v in (BOUND_RESPECTED, BOUND_VIOLATED)
                           else verdict_reason(v, deep, prev, theory, spec.tol, axis, True, ruled_text,
                                               spec.window_decades, x=usable[axis]) if k == 0 else _beside(v, kind))})
    return points, (pd.concat(windows, ignore_index=True) if windows else pd.DataFrame()), pd.DataFrame(fits)


def _worst_case(v: str, deep, prev, axis: str, ruled_out: str) -> str:
    """A one-sided row's reason: what its verdict can and cannot say, and its two deepest windows."""
    where = "below" if v == BOUND_RESPECTED else "above"
    return (f"worst case over the family's scale at the theorem's tuning, one-sided against the upper bound (no lower "
            f"bound to be minimax against): the deepest CI lies {where} the bound's local slope + tol; deepest "
            f"{window_text(axis, deep)}; previous {window_text(axis, prev)}"
            + (f". Ruled out: {ruled_out}" if ruled_out else ""))


def _beside(v: str, kind: str) -> str:
    if v == BOUND_RESPECTED:
        return "the oracle-tuned worst case decays at least as fast as this upper bound"
    if v == BOUND_VIOLATED:
        return "the oracle-tuned worst case decays slower than this upper bound"
    return f"{kind} rate beside the verdict"


def plot_convergence(points: pd.DataFrame, windows: pd.DataFrame, spec, path: Path,
                     fits: pd.DataFrame | None = None) -> None:
    """M against each swept axis: the deepest and previous windows' fits and the theory slope.

    Parameters
    ----------
    points : pandas.DataFrame
        One row per (axis, point): M and its ``flag`` (non-empty: ruled out, drawn hollow).
    windows : pandas.DataFrame
        The windows' local slopes, with the ``deepest`` and ``previous`` flags.
    spec
        The experiment (name, estimator, family).
    path : Path
        The PNG written (the SVG beside it).
    fits : pandas.DataFrame or None
        :func:`analyse`'s fits: the primary rate's ``theory`` (its local slope over the deepest
        window), drawn over the data through the deepest window's centre; none: no theory line.
    """
    axes_ = list(dict.fromkeys(points.axis))
    width = 5.2 * len(axes_)
    fig, axs = plt.subplots(1, len(axes_), figsize=(width, 4.4), squeeze=False)
    for ax, axis in zip(axs[0], axes_):
        extra = {}
        panel = points[points.axis == axis]
        for d, part in ([(np.nan, panel)] if axis == "d" else panel.groupby("d")):
            # "d = …" in the fits' and theory's labels only where the panel holds several d
            tag = f", d = {d}" if axis != "d" and panel.d.nunique() > 1 else ""
            ok = part.flag == ""
            line = ax.plot(part[axis][ok], part.M[ok], "o-", ms=3, label="M" if axis == "d" else f"M, d = {d}")[0]
            if (~ok).any():
                ax.plot(part[axis][~ok], part.M[~ok], "o", mfc="none", color=line.get_color())
                extra["hollow"] = hollow_handle("hollow: ruled out (oracle tuning on the grid's edge)")
            win = windows[(windows.axis == axis) & _same_d(windows.d, d)] if len(windows) else windows
            for _, w in win[win.deepest | win.previous].iterrows():
                sel = part[(part[axis] >= w.window_lo) & (part[axis] <= w.window_hi) & ok]
                x = sel[axis].to_numpy(float)
                y0 = np.exp(np.mean(np.log(sel.M)) - w.slope * np.mean(np.log(x)))
                ax.plot(x, y0 * x ** w.slope, "k-" if w.deepest else "k:", lw=1.2,
                        label=f"{'deepest' if w.deepest else 'previous'} window fit {w.slope:.3f}{tag}")
            _theory_line(ax, axis, part[ok], _primary_fit(fits, axis, d), tag)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel({"eps": "ε", "n": "n (users)", "m": "m (samples per user)", "d": "d (dimension)"}[axis])
        ax.set_ylabel("M = min over tuning of max over instances")
        ax.grid(True, which="both", alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles=handles + list(extra.values()), fontsize=7, title="theory: through the deepest window",
                  title_fontsize=7)
    fig.suptitle(wrap_title(f"{spec.name}: {spec.estimator_name} on {spec.family_name}, law-free", width - 0.4, 10),
                 fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _primary_fit(fits: pd.DataFrame | None, axis: str, d) -> pd.Series | None:
    """The verdict's row (the first rate) of (axis, d), or None."""
    if fits is None or fits.empty:
        return None
    rows = fits[(fits.axis == axis) & _same_d(fits.d, d) & fits.primary.astype(bool)]
    return rows.iloc[0] if len(rows) else None


def _same_d(column: pd.Series, d) -> pd.Series:
    """Rows of dimension ``d``; NaN (a d sweep's rows) matches NaN."""
    return column.isna() if pd.isna(d) else column == d


def _theory_line(ax, axis: str, usable: pd.DataFrame, f: pd.Series | None, tag: str) -> None:
    """The primary rate's slope through the deepest window's geometric centre (M and the axis), drawn
    over the data (as Table I's law-free figures do); nothing without a deepest window."""
    if f is None or not np.isfinite(f.theory) or not np.isfinite(f.deep_lo):
        return
    x_all = usable[axis].to_numpy(float)
    inside = (x_all >= f.deep_lo) & (x_all <= f.deep_hi)
    if not inside.any():
        return
    centre = np.exp(np.mean(np.log(x_all[inside])))
    anchor = np.exp(np.mean(np.log(usable.M.to_numpy(float)[inside])))
    xs = np.geomspace(x_all.min(), x_all.max(), 20)
    ax.plot(xs, anchor * (xs / centre) ** f.theory, "--", color="C3", lw=1.4, dashes=(4, 2), zorder=THEORY_ZORDER,
            gid="theory", label=f"theory {f.theory:.3f} ({f.rate}){tag} [{f.verdict}]")


def write_law_free(spec, entries: pd.DataFrame, points, windows, fits, out: Path) -> None:
    atomic_write(out / "points.csv", lambda p: points.to_csv(p, index=False))
    atomic_write(out / "windows.csv", lambda p: windows.to_csv(p, index=False))
    atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
    plot_convergence(points, windows, spec, out / "convergence.png", fits)


def _f(x, digits=3):
    return "—" if not np.isfinite(x) else f"{x:.{digits}f}"


def _dim(d) -> str:
    """A row's d as the tables print it: a d sweep's row (NaN) reads "swept"."""
    return "swept" if pd.isna(d) else str(int(d))


def load_law_free_fits(base: Path) -> pd.DataFrame:
    """Every law-free experiment's fit.csv under ``base`` (results/userlevel/law_free)."""
    frames = [pd.read_csv(f) for f in sorted(Path(base).glob("*/fit.csv"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_law_free_table(base: Path) -> pd.DataFrame:
    """results/userlevel/law_free/table.{md,csv}: every law-free experiment's rows."""
    fits = load_law_free_fits(base)
    if fits.empty:
        return fits
    atomic_write(base / "table.csv", lambda p: fits.to_csv(p, index=False))
    primary = fits[fits.primary.astype(bool)]
    decisive = primary.verdict.isin(["consistent", "inconsistent", BOUND_RESPECTED, BOUND_VIOLATED])
    half = (primary.deep_ci_high - primary.deep_ci_low) / 2
    lines = ["# User-level Table 1, law-free (papers/003)", "",
             "M = min over the estimator's tuning grid of max over the lower-bound family's scale grid of the",
             "expected error (closed forms, `labeldp_sim.papers.userlevel.exact`; the hidden signs averaged over",
             "every sign pattern or over keyed draws, per experiment). Local slopes of log M over windows of "
             f"{WINDOW_DECADES:g} decades (an experiment may set its own: column `window_decades`); the verdict is on the deepest "
             "window (largest n·m·(ε²∧ε)), "
             "against the first rate (the minimax rate), pre-asymptotic when the previous window disagrees.",
             "The other rates' local slopes stand beside it; an upper bound is checked one-sidedly.",
             f"Decisive (consistent or inconsistent; a worst-case row: upper bound respected or violated) with CI "
             "half-width <= 0.03: "
             f"{int((decisive & (half <= 0.03)).sum())} of {len(primary)} rows.",
             "Generated by `labeldp_sim.papers.userlevel.law_free.fit`.", ""]
    header = ["experiment", "axis", "d", "deepest window", "slope [95% CI]", "previous", "rate", "expected",
              "verdict", "points", "reason"]
    rows = []
    for r in fits.itertuples():
        window = f"{r.deep_lo:.3g}–{r.deep_hi:.3g}" if np.isfinite(r.deep_lo) else "—"
        rows.append([r.experiment if r.primary else "", r.axis if r.primary else "", _dim(r.d) if r.primary else "",
                     window if r.primary else "",
                     f"{_f(r.deep_slope)} [{_f(r.deep_ci_low)}, {_f(r.deep_ci_high)}]" if r.primary else "",
                     _f(r.prev_slope) if r.primary else "", f"{r.rate} ({r.rate_kind})", _f(r.theory),
                     r.verdict if r.primary else f"({r.verdict})", f"{r.points}/{r.points_total}" if r.primary else "",
                     r.reason if isinstance(r.reason, str) else ""])
    lines += pipe_table(header, rows)
    atomic_write(base / "table.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    return fits
