r"""User-level outputs: per-point summaries, slope fits against the theory registry, plots and
"Table 1, measured" (papers/003).

**Flagged points.**  A point is left out of every fit, and says why in
``summary.csv``, when stage I of a two-stage estimator failed in more than
``1 − min_stage1_success`` of its trials (the true mean fell outside [L, R]:
the MSE then jumps by orders of magnitude, SPEC §7), or when the estimator
says the point is out of its theorem's regime ((group size)·(ε²∧1) < 1000, or
the theorem's condition n(ε²∧1) ≳ ln m fails).

**Expected slopes.**  Each estimator's slope on log n, log m, log ε or log d is
compared with the local slope of the FULL stated rate over the fitted points
(:func:`~.theory.expected_slope`: log factors such as (2)'s ln n included), with
the equivalence verdict of SPEC §5 at ``fit.tol``.

**Fixed instances test upper bounds one-sidedly** (issue 21, item 3).  On an
instance that is not a lower-bound construction (``Family.minimax_hard`` False)
the error must decay at least as fast as an upper bound, and a faster decay says
nothing about the minimax rate: against a rate of kind ``upper`` such a row is
"upper bound respected" (CI high ≤ the bound's local slope + tol), "upper bound
violated" (CI low above it) or "inconclusive".  So is a lower-bound family run at
fixed constants (law-tied: its scale and the estimator's tuning not searched).
Minimax verdicts come only from the law-free rows (:mod:`.law_free`,
``results/userlevel/law_free/``), shown first in "Table 1 at a glance".
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labeldp_sim.stats.fit import fit_slope, verdict  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from labeldp_sim.report.figures import hollow_handle, plot_rates, save_figure, wrap_title  # noqa: E402
from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.stats.windows import ols_slope  # noqa: E402
from labeldp_sim.papers.userlevel.theory import RATES, SLIPS, TABLE1_ROWS, expected_slope, rate_arguments  # noqa: E402

__all__ = ["summarize", "fit_userlevel", "write_userlevel", "write_table1", "TRIAL_COLUMNS"]

TRIAL_COLUMNS = ["experiment", "config_key", "seed_key", "estimator", "family", "n", "m", "eps", "d",
                 "replicate", "error", "stage1_ok", "in_regime", "groups", "path", "seconds", "run_id",
                 "computed_by"]
AXIS_WORDS = {"n": "n (users)", "m": "m (samples per user)", "eps": "ε", "d": "d"}


def summarize(spec, trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (axis, estimator, point): mean error, se, stage-I success, flag and why."""
    grouped = trials.groupby(["estimator", "n", "m", "eps", "d"], sort=False)
    stats = grouped.agg(mean=("error", "mean"), sd=("error", "std"), trials=("error", "size"),
                        stage1_success=("stage1_ok", "mean"), in_regime=("in_regime", "all"),
                        seconds=("seconds", "sum")).reset_index()
    stats["se"] = stats.sd / np.sqrt(stats.trials)
    rows = []
    for axis, points in spec.sweeps.items():
        for order, pt in enumerate(points):
            part = stats[(stats.n == pt.n) & (stats.m == pt.m) & (stats.eps == pt.eps) & (stats.d == pt.d)]
            for _, r in part.iterrows():
                reasons = []
                if np.isfinite(r.stage1_success) and r.stage1_success < spec.min_stage1_success:
                    reasons.append(f"stage I failed in {1 - r.stage1_success:.1%} of trials")
                if not r.in_regime:
                    reasons.append("out of the theorem's regime (group size·(ε²∧1) < 1000 or n(ε²∧1) < c1 ln m)")
                rows.append({"experiment": spec.name, "family": spec.family_name, "axis": axis, "order": order,
                             "estimator": r.estimator, "rate": spec.rates[r.estimator][0], "n": int(r.n),
                             "m": int(r.m), "eps": float(r.eps), "d": int(r.d), "mean": r["mean"], "se": r.se,
                             "trials": int(r.trials), "stage1_success": r.stage1_success,
                             "in_regime": not reasons, "flag": "; ".join(reasons), "seconds": r.seconds})
    return pd.DataFrame(rows)


BOUND_RESPECTED, BOUND_VIOLATED = "upper bound respected", "upper bound violated"


def bound_verdict(ci_low: float, ci_high: float, theory: float, tol: float) -> str:
    """One-sided verdict of a fixed instance's slope against an upper bound's local slope ``theory``
    (module docstring): the log error may fall faster than the bound, not slower."""
    if ci_high <= theory + tol:
        return BOUND_RESPECTED
    if ci_low > theory + tol:
        return BOUND_VIOLATED
    return "inconclusive"


def _one_sided(minimax_hard: bool, rate: str) -> bool:
    """Whether a law-tied fit row is tested one-sidedly: every row against an upper bound.

    A fixed instance can only respect an upper bound; a lower-bound family at fixed
    constants (its scale and the estimator's tuning not searched) is one instance per
    point too, so the minimax verdict comes from the law-free rows (:mod:`.law_free`),
    not from these.  ``minimax_hard`` only words the reason.
    """
    return rate in RATES and RATES[rate].kind == "upper"


def _row_verdict(row: dict) -> str:
    test = bound_verdict if _one_sided(row["minimax_hard"], row["rate"]) else verdict
    return test(row["ci_low"], row["ci_high"], row["theory"], row["tol"])


def _fixed(spec, row) -> dict:
    return rate_arguments(spec.family_params, n=row.n, m=row.m, eps=row.eps, d=row.d)


def fit_userlevel(spec, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (estimator, axis, d): slope with CI, the expected local slope, a verdict."""
    rows = []
    series = summary.assign(series_d=np.where(summary.axis == "d", 0, summary.d))
    for (estimator, axis, d), group in series.groupby(["estimator", "axis", "series_d"], sort=False):
        exact = spec.path == "exact"  # entries are expectations; a family without randomness has se = 0
        used = group[group.in_regime & (group["mean"] > 0) & ((group.se > 0) | exact)]
        point = _fixed(spec, group.iloc[0])  # the swept axis's own value is replaced by the grid in the fit
        fixed = {k: v for k, v in point.items() if k != axis}
        fitted = None
        if len(used) >= max(spec.min_points, 2):
            fitted = (ols_slope(used[axis], used["mean"]) if exact and not (used.se > 0).all()
                      else fit_slope(used[axis], used["mean"], used["se"]))
        for rank, name in enumerate(spec.rates[estimator]):
            rate = RATES[name]
            row = {"experiment": spec.name, "family": spec.family_name,
                   "minimax_hard": bool(spec.family.minimax_hard), "estimator": estimator,
                   "axis": axis, "d": int(point["d"]) if axis != "d" else 0,
                   "fixed": ", ".join(f"{k}={v:g}" for k, v in fixed.items() if k in ("n", "m", "eps", "d")),
                   "rate": rate.name, "rate_formula": rate.formula, "rate_source": rate.source,
                   "log_factors": rate.log_factors, "tol": spec.tol, "points": len(used),
                   "points_total": len(group), "flagged": int((~group.in_regime).sum()), "primary": rank == 0,
                   "x_min": float(used[axis].min()) if len(used) else np.nan,
                   "x_max": float(used[axis].max()) if len(used) else np.nan}
            if fitted is not None:
                theory = expected_slope(rate, axis, used[axis].to_numpy(float), fixed)
                row.update(fitted, theory=theory)
                row["verdict"] = _row_verdict(row)
                row["reason"] = _reason(row)
            else:
                row.update(slope=np.nan, se=np.nan, ci_low=np.nan, ci_high=np.nan, intercept=np.nan,
                           birge=np.nan, theory=np.nan, verdict="too few points",
                           reason=f"{len(used)} of {len(group)} points usable; flagged: "
                                  + "; ".join(sorted(set(group.flag[group.flag != ""]))))
            rows.append(row)
    for row in rows:  # a verdict that fails against the first rate may hold against another stated form
        if row["primary"] and row["verdict"] != "consistent":
            others = [o for o in rows if not o["primary"] and o["verdict"] == "consistent"
                      and (o["estimator"], o["axis"], o["d"]) == (row["estimator"], row["axis"], row["d"])]
            if others:
                row["reason"] += "; " + "; ".join(
                    f"consistent with {o['rate']} ({o['rate_source']}; log factors: {o['log_factors']})"
                    for o in others)
    return pd.DataFrame(rows)


def _reason(row: dict) -> str:
    if _one_sided(row["minimax_hard"], row["rate"]):
        return _bound_reason(row)
    if row["verdict"] == "consistent":
        return ""
    notes = []
    width = (row["ci_high"] - row["ci_low"]) / 2
    if row["verdict"] == "inconclusive" and width > row["tol"]:
        notes.append(f"CI half-width {width:.3f} > tol {row['tol']}: more trials would decide")
    elif row["verdict"] == "inconclusive":
        notes.append("CI straddles the tolerance band edge")
    else:
        notes.append(f"slope {row['slope']:.3f} vs the stated rate's local slope {row['theory']:.3f}")
    if row["flagged"]:
        notes.append(f"{row['flagged']} flagged point(s) left out")
    if not row["minimax_hard"]:
        notes.append("fixed instance (not minimax-hard)")
    return "; ".join(notes)


def _bound_reason(row: dict) -> str:
    """Why a fixed instance's one-sided verdict is what it is, and what it does not say."""
    edge = row["theory"] + row["tol"]
    notes = [("lower-bound family at fixed constants" if row.get("minimax_hard") else "fixed instance")
             + ": one-sided test against the upper bound (no minimax verdict: see the law-free rows)"]
    if row["verdict"] == BOUND_VIOLATED:
        notes.append(f"slope {row['slope']:.3f} decays slower than the bound's {row['theory']:.3f} + tol")
    elif row["verdict"] == "inconclusive":
        notes.append(f"CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] straddles {edge:.3f}")
    elif row["ci_high"] < row["theory"] - row["tol"]:
        notes.append("decays faster than the bound (allowed; silent on the minimax rate)")
    else:
        notes.append("slope matches the bound's local slope within tol")
    if row["flagged"]:
        notes.append(f"{row['flagged']} flagged point(s) left out")
    return "; ".join(notes)


def reverdict(fits: pd.DataFrame) -> pd.DataFrame:
    """``fits`` with the one-sided rows' verdicts and reasons recomputed from their numbers (fit.csv files
    written before the one-sided rule get it; idempotent; other rows are left as written)."""
    fits = fits.copy()
    fits["reason"] = fits["reason"].astype(object)  # an all-empty column reads back as float
    fits["verdict"] = fits["verdict"].astype(object)
    for i, row in fits.iterrows():
        if np.isfinite(row.get("slope", np.nan)) and _one_sided(bool(row.minimax_hard), row.rate):
            record = row.to_dict()
            record["verdict"] = _row_verdict(record)
            fits.loc[i, ["verdict", "reason"]] = record["verdict"], _reason(record)
    return fits


def write_userlevel(spec, trials: pd.DataFrame, summary: pd.DataFrame, fits: pd.DataFrame, out: Path) -> None:
    """trials.csv, summary.csv, fit.csv and rate.png of one experiment."""
    atomic_write(out / "trials.csv", lambda p: trials[[c for c in TRIAL_COLUMNS if c in trials]].to_csv(p, index=False))
    atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False))
    atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
    ylabel = {"mean": "E||μ̂−μ||²", "so": "E||θ̂−θ*||₂", "classification": "excess risk",
              "regression": "E∫(η̂−η)²f"}[spec.task]
    # one figure per dimension of the n/m/ε sweeps (rate.png for the first), each with the d sweep
    dims = sorted(set(summary.d[summary.axis != "d"]))
    for i, d in enumerate(dims or [None]):
        part = summary[(summary.axis == "d") | (summary.d == d)] if d is not None else summary
        fit_part = fits[(fits.axis == "d") | (fits.d == d)] if d is not None else fits
        title = spec.name if d is None else f"{spec.name} (d={d})"
        plot_rates(part, fit_part, out / ("rate.png" if i == 0 else f"rate_d{d}.png"), title,
                   series="estimator", ylabel=ylabel, xlabels=AXIS_WORDS)


# --------------------------------------------------------------------------- Table 1, measured


def _load(base: Path, name: str) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in sorted(base.glob(f"*/{name}"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


BASELINES = "Baselines (Proposition 1 and the naive user mean)"
# the Table 1 row each rate speaks to (d = 1 and constant forms included)
ROW_OF_RATE = {"thm1_alg1": "mean_bounded_l2", "alg1_constants": "mean_bounded_l2", "thm2_lower": "mean_bounded_l2",
               "thm5_l2": "mean_bounded_l2", "thm6_lower": "mean_bounded_l2", "thm4_linf": "mean_bounded_linf",
               "alg2_constants": "mean_bounded_linf", "thm7_lower": "mean_bounded_linf",
               "thm3_heavy": "mean_heavy", "rem2_heavy_l2": "mean_heavy", "rem2_heavy_coord": "mean_heavy",
               "rem2_heavy_coord_summed": "mean_heavy",
               "spike_lower": "mean_heavy", "thm8_so": "so", "item_so": "so", "thm9_cls": "classification",
               "thm10_lower": "classification", "thm11_reg": "regression", "thm12_lower": "regression",
               # Theorem 5's constant form (Kashin) and Theorem 2's fixed-n statement: their own rows
               "kashin_constants": "mean_bounded_l2", "thm2_fixed_n": "mean_bounded_l2"}


def _primary_rate(primary: pd.DataFrame, experiment: str, estimator: str, rate: str) -> str:
    """The verdict's rate of an (experiment, estimator): its rows all sit under that rate's Table 1 row."""
    match = primary[(primary.experiment == experiment) & (primary.estimator == estimator)].rate
    return str(match.iloc[0]) if len(match) else rate


def _row_of(rate: str) -> str:
    key = ROW_OF_RATE.get(rate)
    return next((r.task for r in TABLE1_ROWS if r.key == key), BASELINES)


def _f(x, digits=3):
    return "—" if not np.isfinite(x) else f"{x:.{digits}f}"


def pipe_table(header: list, rows: list) -> list:
    """Lines of a Markdown pipe table through pandas: every cell as its text (``str``), a bare | escaped."""
    cells = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    return pd.DataFrame(cells, columns=[str(h) for h in header], dtype=object).to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, stralign=None).splitlines()


# What Table 1 asks of each row beyond the n and m axes, and why a part is not run yet (issue 21, item 2).
# A part that some results file covers is shown as measured; these reasons show only where none does.
# What a measured cell still leaves out, shown after its verdicts (a part of the axis no experiment covers).
NOT_RUN_PART = {
    ("classification", "d"): "d = 4 not run: the cube counts B* the oracle can reach there run 5-10 only, and the "
                             "risk jumps by orders of magnitude between neighbouring counts (issue 34's note)",
}
NOT_RUN = {
    ("mean_bounded_linf", "item"): "ul_minimax_linf_item (Algorithm 2 on nm users of one sample, make minimax) is not "
                                   "in this folder",
    ("mean_heavy", "d"): "heavy tails at d > 1: ul_minimax_heavy_coord (Remark 2's estimator, make minimax) is not in "
                         "this folder",
    ("mean_heavy", "eps>1"): "Theorem 3 is one-dimensional (ε²∧1); Remark 2's ε²∧ε: ul_minimax_heavy_coord_eps "
                             "(make minimax) is not in this folder",
    ("mean_heavy", "item"): "ul_minimax_heavy_item (item_ldp on the spike, make minimax) is not in this folder",
    ("mean_heavy", "law_free"): "the paper gives no lower bound (Table 1 cites none); its worst-case rows, "
                                "ul_minimax_heavy and ul_minimax_heavy_coord (make minimax), are not in this folder",
    ("so", "eps"): "ul_minimax_so (worst case, make minimax) is not in this folder",
    ("so", "eps>1"): "ul_minimax_so_eps (worst case, make minimax) is not in this folder",
    ("so", "d"): "ul_minimax_so (worst case over d = 1..64, make minimax) is not in this folder",
    ("so", "item"): "ul_minimax_so_item (Algorithm 3 on nm users of one sample, make minimax) is not in this folder",
    ("so", "law_free"): "the paper gives no lower bound for SO; its worst-case rows, ul_minimax_so (make minimax), are "
                        "not in this folder",
    ("classification", "eps>1"): "the exact path needs one coordinate per group (ε < 2); the law-tied rows run "
                                 "at ε = 1",
    ("classification", "d"): "d = 2, 3 law-free in experiments/minimax_dims.txt (make minimax MINIMAX_SUITE=...); "
                             + NOT_RUN_PART[("classification", "d")],
    ("classification", "beta_gamma"): "no law-free run at β, γ other than 1 in this folder (make minimax runs them)",
    ("classification", "item"): "ul_minimax_cls_item (Algorithm 4 on nm users of one sample, make minimax) is not in "
                                "this folder",
    ("regression", "eps>1"): "the exact path needs one coordinate per group (ε < 2); the law-tied rows run at "
                             "ε = 1",
    ("regression", "d"): "d = 2, 3, 4 law-free in experiments/minimax_dims.txt (make minimax MINIMAX_SUITE=...)",
    ("regression", "beta_gamma"): "no law-free run at β other than 1 in this folder (make minimax runs them)",
    ("regression", "item"): "ul_minimax_reg_item (Algorithm 5 on nm users of one sample, make minimax) is not in this "
                            "folder",
}
# row -> the item-level rates: Table 1's right column (item_bounded), then Proposition 1's user-level baselines
ITEM_LEVEL = {"mean_bounded_l2": ("item_bounded", "p1a_item_level", "p1b_one_sample"), "mean_heavy": ("item_heavy",),
              "mean_bounded_linf": ("item_linf",), "so": ("item_so",), "classification": ("item_cls",),
              "regression": ("item_reg",)}
_ITEM_RATES = {rate for rates in ITEM_LEVEL.values() for rate in rates}
GLANCE_PARTS = (("n", "n"), ("m", "m"), ("eps", "ε ≤ 1"), ("eps>1", "ε > 1"), ("d", "d"),
                ("beta_gamma", "β, γ"), ("item", "item-level column"))


def _eps_of(fixed: str) -> float:
    for part in str(fixed).split(","):
        key, _, value = part.strip().partition("=")
        if key == "eps":
            return float(value)
    return np.nan


def _glance_cell(row_key: str, part: str, tied: pd.DataFrame, free: pd.DataFrame,
                 exponents: pd.DataFrame | None = None) -> str:
    """One cell of the at-a-glance table: the law-free verdict (minimax) and the law-tied one, or why not run.

    ``free`` holds the row's law-free fits (for the item column: every law-free fit), ``exponents`` the
    exponent table of :mod:`.law_free.exponents` (the β, γ column reads it; its runs at β, γ ≠ 1 stay out of
    the n, m and ε columns, which speak for the paper's β = γ = 1)."""
    texts = []
    exponents = pd.DataFrame(columns=["experiment", "task", "beta", "gamma", "d"]) if exponents is None else exponents
    varied = set(exponents.experiment[(exponents.beta.astype(float) != 1)
                                      | (exponents.gamma.astype(float).fillna(1) != 1)])
    if part in ("n", "m", "eps", "d"):
        lf = free[free.primary.astype(bool) & ~free.experiment.isin(varied) & ~free.rate.isin(_ITEM_RATES)]
        # the d column: d sweeps (the means' factors d, d²), and the learning rows' n, m, ε rows at d >= 2 (d sits in
        # their exponent); ε rows past 1 fill the ε > 1 column
        in_exponent = lf.d.astype(float).ge(2) & (row_key in ("classification", "regression"))
        lf = (lf[(lf.axis == "d") | in_exponent] if part == "d" else
              lf[~in_exponent & (lf.axis == part) & ~((lf.axis == "eps") & (lf.deep_lo.astype(float) > 1))])
        for r in lf.itertuples():
            where = ("d swept: " if r.axis == "d" else f"d = {int(r.d)}, {r.axis}: ") if part == "d" else ""
            texts.append(f"law-free {r.experiment}: {where}{r.verdict} ({_f(r.deep_slope)} vs {_f(r.theory)})")
        for r in tied[(tied.axis == part) & tied.primary.astype(bool)].itertuples():
            texts.append(f"{r.experiment}: {r.verdict}")
    elif part == "eps>1":
        lf = free[free.primary.astype(bool) & (free.axis == "eps") & (free.deep_lo.astype(float) > 1)
                  & ~free.rate.isin(_ITEM_RATES)]
        texts += [f"law-free {r.experiment}: {r.verdict} ({_f(r.deep_slope)} vs {_f(r.theory)})" for r in lf.itertuples()]
        above = tied[tied.primary.astype(bool) & (((tied.axis == "eps") & (tied.x_max.astype(float) > 1))
                                                  | tied.fixed.map(_eps_of).gt(1))]
        texts += [f"{r.experiment} ({r.axis}): {r.verdict}" for r in above.itertuples()]
    elif part == "beta_gamma":
        task = {"classification": "classification", "regression": "regression"}.get(row_key)
        for r in exponents[(exponents.task == task) & exponents.experiment.isin(varied)].itertuples():
            at = f"β = {r.beta:g}" + (f", γ = {r.gamma:g}" if task == "classification" else "")
            texts.append(f"law-free {r.experiment}: {at}, n: {r.verdict} ({_f(r.measured)} vs {_f(r.theory)})")
    elif part == "item":  # the item-level rows sit under Baselines; ITEM_LEVEL names whose row they are
        rates = ITEM_LEVEL.get(row_key, ())
        lf = free[free.primary.astype(bool) & free.rate.isin(rates)]
        for (experiment, estimator), rows in lf.groupby(["experiment", "estimator"], sort=False):
            texts.append(f"law-free {experiment} ({estimator}): " + ", ".join(
                f"{r.axis} {r.verdict} ({_f(r.deep_slope)} vs {_f(r.theory)})" for r in rows.itertuples()))
        texts += [f"{r.experiment} ({r.estimator}, {r.axis}): {r.verdict}" for r in
                  tied[tied.rate.isin(rates)].itertuples()]
    if texts:
        part_left = NOT_RUN_PART.get((row_key, part))
        return "; ".join(texts + ([part_left] if part_left else []))
    if part in ("beta_gamma",) and row_key not in ("classification", "regression"):
        return "—"
    if part == "d" and row_key in ("mean_bounded_l2", "mean_bounded_linf") and tied.axis.eq("d").any():
        return "; ".join(texts) or "—"
    reason = NOT_RUN.get((row_key, part)) or NOT_RUN.get((row_key, "law_free" if part in ("n", "m") else part))
    return f"not run: {reason}" if reason else "not run"


def _at_a_glance(fits: pd.DataFrame, free: pd.DataFrame, exponents: pd.DataFrame | None = None) -> list:
    """Table 1 row by row: what is measured (law-free minimax verdicts first) and what is not, with why."""
    lines = ["## Table 1 at a glance", "",
             "Per row and axis: the law-free verdict (worst lower-bound instance × oracle tuning, exact risks; "
             "`law_free/table.md`), then the law-tied rows (fixed instances: one-sided against the upper bound). "
             "A part no results file covers says why it is not run.", ""]
    header = ["Table 1 row", "entry"] + [label for _, label in GLANCE_PARTS]
    # the columns the cells read, present even where no file (or an older one) has them
    fits = fits.reindex(columns=list(dict.fromkeys([*fits.columns, "axis", "primary", "rate", "fixed", "x_max",
                                                    "verdict", "experiment", "estimator", "table1_row"])))
    free = free.reindex(columns=list(dict.fromkeys([*free.columns, "axis", "primary", "verdict", "deep_slope",
                                                    "theory", "table1_row", "d", "deep_lo", "experiment",
                                                    "rate", "estimator"])))
    rows = []
    for row in TABLE1_ROWS:
        tied = fits[fits.table1_row == row.task] if len(fits) else fits
        lf = free[free.table1_row == row.key] if len(free) else free
        rows.append([row.task, row.entry] + [
            _glance_cell(row.key, key, fits if key == "item" else tied, free if key == "item" else lf, exponents)
            for key, _ in GLANCE_PARTS])
    return lines + pipe_table(header, rows) + [""]


def write_table1(base: Path) -> pd.DataFrame:
    """results/userlevel/table1.{csv,md}, error_vs_m.png and exponents.png from every experiment's fits."""
    fits = _load(base, "fit.csv")
    free = _load(base / "law_free", "fit.csv")
    if fits.empty and free.empty:
        return fits
    if fits.empty:  # only law-free rows so far: the columns the at-a-glance table reads
        fits = pd.DataFrame(columns=["experiment", "estimator", "axis", "primary", "rate", "fixed", "x_max",
                                     "verdict", "table1_row", "tol", "slope", "ci_low", "ci_high", "theory"])
    else:
        fits = reverdict(fits)
    tol = float(fits.tol.iloc[0] if len(fits) else free.tol.iloc[0])
    lines = ["# Table 1, measured (papers/003, user-level LDP)", "",
             "Each row: one estimator's slope of log error on one log axis, a weighted fit over the points",
             "that were not flagged (stage-I failures, out-of-regime groups), against the local slope of the",
             f"FULL stated rate over the same points (log factors included; tolerance ±{tol:g}).",
             "Errors: E||μ̂−μ||² for means, E||θ̂−θ*||₂ for SO, excess risk for classification, "
             "E∫(η̂−η)²f for regression.",
             "A fixed instance (not a lower-bound construction) is tested one-sidedly against an upper bound: "
             f"'{BOUND_RESPECTED}' when the slope's CI lies below the bound's local slope + tol, "
             f"'{BOUND_VIOLATED}' when above; a faster decay says nothing about the minimax rate, so these rows "
             "give no minimax verdict.", "Generated by `labeldp_sim.papers.userlevel.report`.", ""]
    primary = fits[fits.primary.astype(bool)] if len(fits) else fits
    fits["table1_row"] = ([_row_of(_primary_rate(primary, e, s, r)) for r, e, s in
                           zip(fits.rate, fits.experiment, fits.estimator)] if len(fits) else [])
    exponents_csv = base / "law_free" / "exponents.csv"
    lines += _at_a_glance(fits, free, pd.read_csv(exponents_csv) if exponents_csv.exists() else None)
    header = ["experiment", "estimator", "family", "axis", "d", "fixed", "slope [95% CI]", "expected",
              "rate (source)", "verdict", "points", "reason"]
    atomic_write(base / "table1.csv", lambda p: fits.to_csv(p, index=False))
    for task in dict.fromkeys([r.task for r in TABLE1_ROWS] + [BASELINES]):
        part = fits[fits.table1_row == task]
        if part.empty:
            continue
        entry = next((r.entry for r in TABLE1_ROWS if r.task == task), "")
        lines += [f"## {task}" + (f": {entry}" if entry else ""), ""]
        lines += pipe_table(header, [
            [r.experiment, r.estimator, r.family + ("" if r.minimax_hard else " (fixed)"), r.axis,
             r.d if r.axis != "d" else "swept", r.fixed,
             f"{_f(r.slope)} [{_f(r.ci_low)}, {_f(r.ci_high)}]", _f(r.theory), f"{r.rate} ({r.rate_source})",
             r.verdict if r.primary else f"({r.verdict}; beside the verdict)", f"{r.points}/{r.points_total}",
            r.reason if isinstance(r.reason, str) else ""]
            for r in part.itertuples()])
        lines.append("")
    lines += _baselines_section(fits)
    lines += ["## Slips of papers/003 and what the harness does", ""]
    lines += [f"- **{s.key}** ({s.where}): {s.what} — {s.harness}" for s in SLIPS]
    atomic_write(base / "table1.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    _plot_error_vs_m(base)
    _plot_exponents(fits, base / "exponents.png")
    return fits


def _baselines_section(fits: pd.DataFrame) -> list:
    m_fits = fits[(fits.axis == "m") & fits.primary & fits.estimator.isin(["alg1", "naive", "one_sample", "item"])]
    if m_fits.empty:
        return []
    words = {"alg1": "Algorithm 1 (−1 expected)", "naive": "naive user mean + Laplace (0)",
             "one_sample": "P1b, one sample per user (0)", "item": "P1a, item-level ε/m on every sample (+1)"}
    lines = ["## Why Algorithm 1 matters: slopes in m", ""]
    lines += pipe_table(["experiment", "estimator", "m-slope [95% CI]", "expected", "verdict"], [
        [r.experiment, words[r.estimator], f"{_f(r.slope)} [{_f(r.ci_low)}, {_f(r.ci_high)}]", _f(r.theory),
         r.verdict] for r in m_fits.itertuples()])
    return lines + ["", "See `error_vs_m.png`.", ""]


def _plot_error_vs_m(base: Path) -> None:
    summary = _load(base, "summary.csv")
    if summary.empty:
        return
    part = summary[(summary.axis == "m") & summary.estimator.isin(["alg1", "naive", "one_sample", "item"])]
    if part.empty:
        return
    fig, axes = plt.subplots(1, part.experiment.nunique(), figsize=(6 * part.experiment.nunique(), 4.2),
                             squeeze=False)
    for ax, (name, exp) in zip(axes[0], part.groupby("experiment")):
        flagged = False
        for est, group in exp.groupby("estimator"):
            ok = group.in_regime.astype(bool)
            line = ax.errorbar(group.m[ok], group["mean"][ok], yerr=1.96 * group.se[ok], marker="o", capsize=3,
                               label=est)
            if (~ok).any():
                flagged = True
                ax.errorbar(group.m[~ok], group["mean"][~ok], yerr=1.96 * group.se[~ok], fmt="o", mfc="none",
                            color=line[0].get_color(), alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("m (samples per user)")
        ax.set_ylabel("E(μ̂−μ)²  (95% error bars)")
        ax.set_title(wrap_title(f"{name}: n = {int(exp.n.iloc[0])}, ε = {exp.eps.iloc[0]:g}", 5.6, 10), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles=handles + ([hollow_handle("hollow: flagged (left out of the fits)")] if flagged else []),
                  fontsize=8)
    fig.tight_layout()
    save_figure(fig, base / "error_vs_m.png", dpi=110)


def _plot_exponents(fits: pd.DataFrame, path: Path) -> None:
    if fits.empty:
        return
    ok = fits[np.isfinite(fits.slope.astype(float)) & fits.primary.astype(bool)]
    if ok.empty:
        return
    fig, ax = plt.subplots(figsize=(6.5, 6))
    colors = {"consistent": "tab:green", BOUND_RESPECTED: "tab:green", "inconsistent": "tab:red",
              BOUND_VIOLATED: "tab:red"}
    for r in ok.itertuples():
        ax.errorbar(r.theory, r.slope, yerr=[[r.slope - r.ci_low], [r.ci_high - r.slope]], fmt="o",
                    color=colors.get(r.verdict, "tab:orange"), capsize=2)
        ax.annotate(f"{r.experiment}/{r.estimator}/{r.axis}", (r.theory, r.slope), fontsize=5, alpha=0.7)
    lo, hi = min(ok.theory.min(), ok.ci_low.min()) - 0.2, max(ok.theory.max(), ok.ci_high.max()) + 0.2
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = stated")
    ax.set_xlabel("expected local slope of the stated rate")
    ax.set_ylabel("measured slope (95% CI)")
    # the colour key in a legend: a second title line of it was wider than the figure
    key = [Line2D([], [], ls="none", marker="o", color=c, label=t) for c, t in (
        ("tab:green", "consistent or upper bound respected"), ("tab:orange", "inconclusive"),
        ("tab:red", "inconsistent or upper bound violated"))]
    ax.legend(handles=key + ax.get_legend_handles_labels()[0], fontsize=7, loc="upper left")
    ax.set_title("papers/003: exponents, measured vs stated", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
