r"""Local slopes of the law-free rates (Table I's and the user-level ones) over sliding windows, and the verdict on the deepest one.

A whole-range slope of log M on log x (x = N or ε) mixes the pre-asymptotic
start of a sweep with its asymptotic end.  Here the slope is taken locally:

* **windows** — over one (axis, d) row's usable points, sorted by x, every
  maximal run of consecutive points with log10 x inside one decade
  (``WINDOW_DECADES``, or the spec's ``window_decades`` where it sets one),
  stepped point by point; a window needs at least
  ``WINDOW_MIN_POINTS`` points.  Its position is the geometric centre of its
  ends, its **depth** the mean log h*_est of its points (the oracle's
  bandwidth: smaller is deeper; on an N axis that is the largest N, on an ε axis
  normally the largest ε).
* **local slope and its 95 % CI** — how the CI is formed depends on the entries:

  - *exact entries* (expected risks, no Monte-Carlo error): ordinary least
    squares of log M on log x, CI b ± t_{0.975, n−2} · f · s / √S_xx with s²
    the residual mean square and f = √((1 + ρ)/(1 − ρ)) the AR(1) factor of
    the residuals' lag-1 autocorrelation ρ ∈ [0, 0.9].  The residual scatter
    is the fit's own uncertainty: the discreteness of the G_inst and tuning
    grids (each M is a min–max over grid points; it comes round periodically
    in log x, hence ρ) and the curvature of log M within the window.  The
    numerical error of the entries (``EXACT_REL_ERROR`` relative) adds
    2·δ/ln(x_hi/x_lo) to the half-width;
  - *Monte-Carlo entries*: :func:`~labeldp_sim.stats.fit.fit_slope`, weighted
    least squares with the delta-method standard errors of log M as known
    variances, inflated by the Birge ratio, normal quantile.

* **deepest and previous window** — the deepest window is the one of smallest
  depth; the previous one is the deepest among the shallower windows that
  overlap it over at most ``PREVIOUS_MAX_OVERLAP`` of its log10 span (so the
  two slopes are read, at least half, on different points).

Verdict (issue 20, item 3), for a theory exponent θ and margin tol:

* no window, or neither a previous window nor a trend: **inconclusive**
  (the flattening cannot be checked);
* the local slope still moves: **pre-asymptotic** (both numbers are reported).
  Where the caller passes the windows' **trend** (:func:`trend`, Table I), it
  moves when the slopes of the deepest windows, those whose centres lie within
  half a window span of the deepest one's, still trend: the OLS line through
  them changes by more than max(h_deep, ``TREND_FLOOR`` · tol) across them.
  One earlier window, however wide its CI, can neither call a settled offset
  moving nor a climbing slope settled; a drift below the deepest window's own
  half-width cannot be told from the grids' scatter, and one below half the
  tolerance is small beside the margin ± tol that the verdict resolves.  With fewer than
  ``TREND_MIN_WINDOWS`` such windows, or none reaching ``TREND_REACH`` of a
  span back (a short sweep), it falls back to the
  previous window: moving when the two slopes differ by more than
  √(h_deep² + h_prev²) (:func:`agree`);
* otherwise the equivalence test (SPEC §5) on the deepest CI: **consistent**
  when it lies inside θ ± tol, **inconsistent** when wholly outside (the
  deviation persists over the deepest windows), **inconclusive** else.

A window's CI rests on its own points: ``min_points`` (Table I: 7, so the t
quantile has at least 5 degrees of freedom) keeps a short window's residual
scatter from posing as precision.

**Grid shifts** (:func:`fold_grid_shift`, issue 35 item 4).  Exact entries
carry the grids' discreteness, which comes round periodically in log x; a sweep
of a few points per period samples it at one phase, and a sweep shifted by a
fraction of its step can move the slope and change the CI's width.  Each
window's two interleaved halves (every other point) are the sweep at half its
density and that sweep shifted by half its step; Table I folds both halves'
slopes into the window's CI (the hull), so a verdict holds on the grid whichever
way it is shifted.  The trend and the previous-window test keep the window fit's
own half-width (``fit_ci_low``/``fit_ci_high``): the fold may widen a CI, never
loosen the test of a moving slope.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from labeldp_sim.stats.fit import fit_slope, verdict

__all__ = ["WINDOW_DECADES", "WINDOW_MIN_POINTS", "PREVIOUS_MAX_OVERLAP", "EXACT_REL_ERROR", "CI_EXACT",
           "CI_MONTE_CARLO", "TREND_FLOOR", "TREND_MIN_WINDOWS", "TREND_REACH", "Trend", "ols_slope", "local_slope", "window_fits",
           "deepest_pair", "agree", "trend", "window_verdict",
           "window_text", "verdict_reason", "grid_advice", "headline", "UNDECIDED", "WINDOW_COLUMNS",
           "SHIFT_COLUMNS", "CI_SHIFT_HULL", "fold_grid_shift", "fit_half_width", "shift_text"]

WINDOW_DECADES = 1.0
WINDOW_MIN_POINTS = 4
PREVIOUS_MAX_OVERLAP = 0.5
# a relative error bound the exact paths state for their entries (quadrature, truncation): far below
# the grid's discreteness, it only keeps a clean power law's CI from being of zero width
EXACT_REL_ERROR = 1e-6
TREND_FLOOR = 0.5     # a trend across the deepest windows below this share of tol counts as settled
TREND_MIN_WINDOWS = 3  # fewer deepest windows than this: the previous window decides instead
TREND_REACH = 0.4      # ... or where none of them is centred this many spans from the deepest (>= 60 % shared)
RHO_MAX = 0.9  # the AR(1) inflation of an exact window's error is at most sqrt(19)
CI_EXACT = "OLS on exact entries, residual SE (grid discreteness + curvature) x AR(1) factor, t(n-2)"
CI_MONTE_CARLO = "WLS on Monte-Carlo SEs, Birge-inflated, normal"

CI_SHIFT_HULL = "; hull with the slopes of its two interleaved halves (the grid shifted by half its step)"

UNDECIDED = ("inconclusive", "pre-asymptotic")  # verdicts whose one-line summary adds why (headline)
AXIS_SYMBOLS = {"eps": "ε"}  # how window_text writes an axis (others: its own name, N, n, m)

WINDOW_COLUMNS = ["window", "window_lo", "window_hi", "window_centre", "span_decades", "points", "slope",
                  "se", "ci_low", "ci_high", "rho", "ci_method", "depth", "deepest", "previous"]
# fold_grid_shift's: the window fit's own CI, and the slopes of its even- and odd-ranked points
SHIFT_COLUMNS = ["fit_ci_low", "fit_ci_high", "shift_slope_even", "shift_slope_odd"]


def ols_slope(x, y, level: float = 0.95, rel_error: float = EXACT_REL_ERROR) -> dict:
    """OLS slope of log y on log x with the residual standard error (exact entries).

    The residuals of exact entries are the grids' discreteness (periodic in
    log x: the optimum walks across a geometric grid) and the curvature, so
    neighbouring residuals are correlated and the plain OLS error is too small
    (by about 1.7 on one-decade windows at d = 1).  The standard error is
    therefore inflated by the AR(1) effective-sample-size factor
    √((1 + ρ)/(1 − ρ)), ρ the lag-1 autocorrelation of the residuals in x
    order, clipped to [0, ``RHO_MAX``] (a negative ρ does not narrow the CI).

    Parameters
    ----------
    x, y : array_like, positive
    level : float
        Confidence level; the quantile is Student's t with n − 2 degrees of freedom.
    rel_error : float
        Relative error bound of each y; it moves the slope by at most
        2·rel_error / (ln x_max − ln x_min), added to the half-width.

    Returns
    -------
    dict with slope, se, ci_low, ci_high, intercept, rho, birge (NaN: no Monte-Carlo errors).
    """
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    n = len(lx)
    centred = lx - lx.mean()
    sxx = float(np.sum(centred ** 2))
    slope = float(np.sum(centred * (ly - ly.mean())) / sxx)
    intercept = float(ly.mean() - slope * lx.mean())
    resid = ly - intercept - slope * lx
    rho = _lag1(resid)
    se = (float(np.sqrt(np.sum(resid ** 2) / (n - 2) / sxx) * np.sqrt((1 + rho) / (1 - rho)))
          if n > 2 else np.inf)
    half = (stats.t.ppf(0.5 + level / 2, n - 2) * se if n > 2 else np.inf) + 2 * rel_error / np.ptp(lx)
    return {"slope": slope, "se": se, "ci_low": slope - half, "ci_high": slope + half,
            "intercept": intercept, "rho": rho, "birge": np.nan}


def _lag1(resid: np.ndarray) -> float:
    """Lag-1 autocorrelation of ``resid``, clipped to [0, RHO_MAX] (0 where undefined)."""
    r = resid - resid.mean()
    denominator = float(np.sum(r ** 2))
    if len(r) < 3 or denominator <= 0:
        return 0.0
    return float(np.clip(np.sum(r[1:] * r[:-1]) / denominator, 0.0, RHO_MAX))


def local_slope(x, mean, se, exact: bool) -> dict:
    """Slope of log ``mean`` on log ``x`` with its 95 % CI: :func:`ols_slope` on exact entries,
    :func:`~labeldp_sim.stats.fit.fit_slope` (WLS, Birge) on Monte-Carlo ones; ``ci_method`` says which."""
    fitted = ols_slope(x, mean) if exact else fit_slope(x, mean, se)
    return {**fitted, "ci_method": CI_EXACT if exact else CI_MONTE_CARLO}


class _Run(NamedTuple):
    start: int
    stop: int  # exclusive


def window_runs(log10_x: np.ndarray, decades: float, min_points: int) -> list:
    """Maximal runs of consecutive (sorted) points spanning at most ``decades``, with >= min_points."""
    stops = np.searchsorted(log10_x, log10_x + decades + 1e-9, side="right")
    runs, last = [], -1
    for start, stop in enumerate(stops):
        if stop > last:  # not inside the run that started one point earlier
            if stop - start >= min_points:
                runs.append(_Run(start, int(stop)))
            last = stop
    return runs


def window_fits(frame: pd.DataFrame, axis: str, value: str, se: str, exact: bool,
                decades: float = WINDOW_DECADES, min_points: int = WINDOW_MIN_POINTS,
                depth: str = "h_est_star") -> pd.DataFrame:
    """Local slope of log ``frame[value]`` on log ``frame[axis]`` over every window (module docstring).

    ``frame`` holds one (axis, d) row's usable points with the column ``depth``
    (smaller is deeper: Table I's oracle bandwidth h*_est; the user-level rows
    use the oracle cube length, or 1/x where the tuning has no length).  Returns
    one row per window (:data:`WINDOW_COLUMNS`), the deepest and previous
    windows flagged.
    """
    frame = frame.sort_values(axis)
    x = frame[axis].to_numpy(float)
    lx = np.log10(x)
    log_h = np.log(frame[depth].to_numpy(float))
    rows = []
    for k, run in enumerate(window_runs(lx, decades, min_points)):
        part = slice(run.start, run.stop)
        fitted = local_slope(x[part], frame[value].to_numpy(float)[part], frame[se].to_numpy(float)[part], exact)
        rows.append({"window": k, "window_lo": x[run.start], "window_hi": x[run.stop - 1],
                     "window_centre": float(np.sqrt(x[run.start] * x[run.stop - 1])),
                     "span_decades": float(lx[run.stop - 1] - lx[run.start]), "points": run.stop - run.start,
                     "slope": fitted["slope"], "se": fitted["se"], "ci_low": fitted["ci_low"],
                     "ci_high": fitted["ci_high"], "rho": fitted.get("rho", np.nan),
                     "ci_method": fitted["ci_method"],
                     "depth": float(np.mean(log_h[part])), "deepest": False, "previous": False})
    wins = pd.DataFrame(rows, columns=WINDOW_COLUMNS)
    deep, prev = deepest_pair(wins)
    if deep is not None:
        wins.loc[deep, "deepest"] = True
    if prev is not None:
        wins.loc[prev, "previous"] = True
    return wins.astype({"deepest": bool, "previous": bool})


def fold_grid_shift(wins: pd.DataFrame, frame: pd.DataFrame, axis: str, value: str, se: str,
                    exact: bool) -> pd.DataFrame:
    """``wins`` with each window's CI widened to the hull of its own CI and the slopes of its two halves.

    A window's points sorted by x, taken every other one from the first and from
    the second, are the sweep at half its density and that sweep shifted by half
    its step (module docstring, *Grid shifts*).  Each half is fitted as the window
    is (:func:`local_slope`; a half needs 3 points), and ``ci_low``/``ci_high``
    become min/max of the window's CI and both slopes, so the verdict on the CI
    holds for the grid and its shift alike.  The window fit's own CI stays in
    ``fit_ci_low``/``fit_ci_high``, both slopes in ``shift_slope_even``/``shift_slope_odd``
    (NaN where a half is too short: no fold), and ``ci_method`` says so.

    Parameters
    ----------
    wins : the windows of :func:`window_fits` over ``frame``
    frame, axis, value, se, exact : as given to :func:`window_fits`
    """
    wins = wins.assign(fit_ci_low=wins.ci_low, fit_ci_high=wins.ci_high,
                       shift_slope_even=np.nan, shift_slope_odd=np.nan)
    if not len(wins):
        return wins
    frame = frame.sort_values(axis)
    x = frame[axis].to_numpy(float)
    y, s = frame[value].to_numpy(float), frame[se].to_numpy(float)
    for label, win in wins.iterrows():
        inside = np.flatnonzero((x >= win.window_lo) & (x <= win.window_hi))
        halves = [inside[0::2], inside[1::2]]
        if min(len(h) for h in halves) < 3:
            continue
        slopes = [local_slope(x[h], y[h], s[h], exact)["slope"] for h in halves]
        wins.loc[label, ["shift_slope_even", "shift_slope_odd"]] = slopes
        wins.loc[label, "ci_low"] = min(win.ci_low, *slopes)
        wins.loc[label, "ci_high"] = max(win.ci_high, *slopes)
        wins.loc[label, "ci_method"] = win.ci_method + CI_SHIFT_HULL
    return wins


def fit_half_width(win) -> float:
    """The half-width of a window fit's own CI (before :func:`fold_grid_shift`, where it was folded)."""
    low, high = win.get("fit_ci_low", np.nan), win.get("fit_ci_high", np.nan)
    if not (np.isfinite(low) and np.isfinite(high)):
        low, high = win.ci_low, win.ci_high
    return float((high - low) / 2)


def shift_text(win) -> str:
    """``its halves (the grid shifted by half its step): -0.671, -0.668, folded into its CI`` ('' where not
    folded)."""
    even, odd = win.get("shift_slope_even", np.nan), win.get("shift_slope_odd", np.nan)
    if not (np.isfinite(even) and np.isfinite(odd)):
        return ""
    return f"its halves (the grid shifted by half its step): {even:.3f}, {odd:.3f}, folded into its CI"


def deepest_pair(wins: pd.DataFrame, max_overlap: float = PREVIOUS_MAX_OVERLAP) -> tuple:
    """Index labels of the deepest window and of the previous (next-shallower, overlap <= max_overlap)."""
    if not len(wins):
        return None, None
    deep = wins.depth.idxmin()
    d = wins.loc[deep]
    lo, hi = np.log10(d.window_lo), np.log10(d.window_hi)
    overlap = (np.minimum(hi, np.log10(wins.window_hi)) - np.maximum(lo, np.log10(wins.window_lo))).clip(lower=0)
    shallower = wins[(wins.depth > d.depth) & (overlap <= max_overlap * (hi - lo) + 1e-12)]
    return deep, (shallower.depth.idxmin() if len(shallower) else None)


def agree(deep, prev, tol: float) -> bool:
    """Whether the previous window's slope agrees with the deepest one's within the CI of their difference.

    |s_deep − s_prev| ≤ √(h_deep² + h_prev²), h the CI half-widths: both slopes
    are estimates.  The windows may share up to half their span; the shared
    points make the true difference less variable than this bound assumes, so
    it leans towards agreement by that much (a drift larger than both CIs
    together is still caught).  A drift below ``tol``/5 agrees whatever the CIs:
    exact entries give half-widths of 0.003, and a curvature that moves the slope
    by 0.006 over a window's shift is far below what the verdict resolves (± tol).
    """
    h_deep, h_prev = fit_half_width(deep), fit_half_width(prev)
    drift = abs(deep.slope - prev.slope)
    return bool(drift <= np.hypot(h_deep, h_prev) or drift <= tol / 5)


class Trend(NamedTuple):
    """The local slopes of the deepest windows: how many, where their centres lie, and the OLS line
    through them (slope on log10 centre) at its two ends, in the order of the axis."""

    windows: int
    centre_lo: float
    centre_hi: float
    first: float
    last: float

    @property
    def change(self) -> float:
        return self.last - self.first

    def moving(self, deep, tol: float) -> bool:
        """Whether the change exceeds the deepest window fit's own half-width and ``TREND_FLOOR`` · tol."""
        return abs(self.change) > max(fit_half_width(deep), TREND_FLOOR * tol)

    def text(self, axis: str) -> str:
        return (f"the {self.windows} deepest windows (centres {AXIS_SYMBOLS.get(axis, axis)} {self.centre_lo:.3g}–"
                f"{self.centre_hi:.3g}) trend {self.first:.3f} → {self.last:.3f} ({self.change:+.3f})")


def trend(wins: pd.DataFrame, decades: float) -> Trend | None:
    """The :class:`Trend` of the windows whose centres lie within ``decades``/2 of the deepest one's
    (None: no window, fewer than ``TREND_MIN_WINDOWS`` there, or none centred ``TREND_REACH`` · ``decades``
    or more from it, i.e. every one sharing more than 60 % of the deepest's span)."""
    if not len(wins) or not wins.deepest.any():
        return None
    centre = np.log10(wins.window_centre.to_numpy(float))
    c_deep = float(np.log10(wins[wins.deepest].iloc[0].window_centre))
    distance = np.abs(centre - c_deep)
    near = distance <= decades / 2 + 1e-9
    # the trend must reach windows read mostly on other points than the deepest's
    if int(near.sum()) < TREND_MIN_WINDOWS or distance[near].max() < TREND_REACH * decades - 1e-9:
        return None
    x, y = centre[near], wins.slope.to_numpy(float)[near]
    b, a = np.polyfit(x, y, 1)
    lo, hi = float(x.min()), float(x.max())
    return Trend(int(near.sum()), 10 ** lo, 10 ** hi, float(a + b * lo), float(a + b * hi))


def window_verdict(deep, prev, theory: float, tol: float, trend_: Trend | None = None) -> str:
    """The verdict of the module docstring from the deepest and previous window rows (None: missing),
    the deepest windows' :class:`Trend` deciding whether the slope still moves where it is given."""
    if deep is None or (prev is None and trend_ is None):
        return "inconclusive"
    if (trend_.moving(deep, tol) if trend_ is not None else not agree(deep, prev, tol)):
        return "pre-asymptotic"
    return verdict(deep.ci_low, deep.ci_high, theory, tol)


def window_text(axis: str, win) -> str:
    """``ε 1e-06–1e-05 (7 pts): -0.668 [-0.675, -0.661]``."""
    return (f"{AXIS_SYMBOLS.get(axis, axis)} {win.window_lo:.3g}–{win.window_hi:.3g} ({int(win.points)} pts): "
            f"{win.slope:.3f} [{win.ci_low:.3f}, {win.ci_high:.3f}]")


def grid_advice(x, decades: float = WINDOW_DECADES, axis: str = "N", min_points: int = WINDOW_MIN_POINTS) -> str:
    """What a sweep with the usable values ``x`` lacks for a verdict, in one clause naming what to change.

    A window needs ``min_points`` points within ``decades``, so at least ⌈(min − 1)/decades⌉ points per
    decade; a verdict needs a second window that overlaps the deepest by at most half, so a sweep of at least
    (1 + ``PREVIOUS_MAX_OVERLAP``)·``decades`` decades at that density.
    """
    x = np.sort(np.asarray(x, dtype=float))
    name = AXIS_SYMBOLS.get(axis, axis)
    per_decade = int(np.ceil((min_points - 1) / decades))
    needed = (1 + PREVIOUS_MAX_OVERLAP) * decades
    if not len(x):
        return "no usable point (every point was ruled out: see 'Ruled out')"
    span = float(np.log10(x[-1] / x[0])) if len(x) > 1 else 0.0
    have = f"{len(x)} usable point(s) over {span:.2g} decade(s) of {name}"
    density = (len(x) - 1) / span if span > 0 else 0.0
    if density + 1e-9 < per_decade:
        return (f"{have}: too few points for a window of {decades:g} decade(s) (>= {min_points} points); "
                f"use >= {per_decade} points per decade over >= {needed:g} decades")
    if span + 1e-9 < needed:
        return (f"{have}: too short for two windows of {decades:g} decade(s) overlapping by at most half; "
                f"extend it to >= {needed:g} decades (deeper than {x[-1]:.3g} where the regime allows)")
    return (f"{have}, unevenly spaced: some decade holds fewer than {min_points} points; keep >= "
            f"{per_decade} points in every decade")


def headline(reason: str) -> str:
    """The part of a verdict's reason before its window details (what a one-line summary prints)."""
    return str(reason).split("; deepest ")[0].split(". Ruled out")[0]


def verdict_reason(verdict_: str, deep, prev, theory: float, tol: float, axis: str, exact: bool,
                   ruled_out: str, decades: float = WINDOW_DECADES, x=None, trend_: Trend | None = None,
                   min_points: int = WINDOW_MIN_POINTS) -> str:
    """Why the verdict: the deepest windows' slopes and what was ruled out before fitting them.

    ``x``, the row's usable values of ``axis``, makes a missing window's reason name what to change
    (:func:`grid_advice`); a still-moving slope is told to go deeper than its last value.  ``trend_``:
    the deepest windows' :class:`Trend`, where it decided whether the slope moves.
    """
    if deep is None:
        head = (grid_advice(x, decades, axis, min_points) if x is not None else
                f"no window of {decades:g} decade(s) with >= {min_points} usable points "
                "(deepen or densify the sweep)")
    elif prev is None and trend_ is None:
        advice = grid_advice(x, decades, axis, min_points) if x is not None else "extend the sweep"
        head = (f"no shallower window overlapping the deepest by at most half, so the flattening cannot be "
                f"checked: {advice}; deepest window {window_text(axis, deep)}")
    else:
        shifted = shift_text(deep)
        windows = (f"deepest {window_text(axis, deep)}" + (f", {shifted}" if shifted else "")
                   + (f"; previous {window_text(axis, prev)}" if prev is not None else ""))
        half = (deep.ci_high - deep.ci_low) / 2
        settled = (f"{trend_.text(axis)}, within max(deepest half-width, {TREND_FLOOR:g}·tol)" if trend_ is not None
                   else "previous window agreeing")
        if verdict_ == "pre-asymptotic":
            moving = (f"{trend_.text(axis)}, more than max(deepest half-width {fit_half_width(deep):.3f}, "
                      f"{TREND_FLOOR:g}·tol)"
                      if trend_ is not None else
                      f"previous {prev.slope:.3f} vs deepest {deep.slope:.3f}, apart by more than their CIs allow")
            head = f"local slope still moving: {moving} (extend the sweep deeper than {deep.window_hi:.3g}); {windows}"
        elif verdict_ == "consistent":
            head = f"deepest CI inside {theory:.3f} ± {tol:g}, {settled}; {windows}"
        elif verdict_.startswith("inconsistent"):
            head = f"deviation from {theory:.3f} ± {tol:g} persists, {settled}; {windows}"
        elif half > tol:
            cause = ("the grid's shift: the slopes of the window's halves fall outside its own CI (a denser "
                     "sweep)" if fit_half_width(deep) <= tol else
                     "the grids' discreteness (a denser sweep or wider windows)" if exact
                     else "Monte-Carlo noise of the selection (more law_free.reps)")
            head = f"deepest CI half-width {half:.3f} > tol: {cause}; {windows}"
        else:
            head = f"deepest CI (half-width {half:.3f}) straddles {theory:.3f} ± {tol:g}; {windows}"
    return head + (f". Ruled out: {ruled_out}" if ruled_out else "")
