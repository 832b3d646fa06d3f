"""Outputs of the K-class experiments: trials, summaries, accuracy plots and tables, and which
claims of papers/002 the data reproduce (:mod:`.claims`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from labeldp_sim.stats.fit import summarize_by
from labeldp_sim.report.figures import mean_ci_grid, save_figure
from labeldp_sim.harness.store import atomic_write
from labeldp_sim.papers.kclass.claims import CLAIMS, check_claims, claims_markdown, load_summaries, load_trials
from labeldp_sim.papers.kclass.families import GaussianCircle
from labeldp_sim.papers.kclass.methods import method_classes

__all__ = ["summarize_kclass", "write_kclass", "summarize_digits", "write_digits", "write_claims"]


def _table(header: list, rows: list) -> list:
    """Lines of a Markdown pipe table through pandas: every cell as its text, a bare | escaped."""
    cells = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    return pd.DataFrame(cells, columns=[str(h) for h in header], dtype=object).to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, stralign=None).splitlines()


def _bayes(spec) -> dict:
    """K -> the Bayes accuracy of the family at K, in the order of ``spec.K_values``."""
    return {K: GaussianCircle(K, spec.sigma).bayes_accuracy() for K in spec.K_values}


def summarize_kclass(spec, trials: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy with its CI per (K, method), and the Bayes accuracy at K."""
    summary = summarize_by(trials, ["K", "method"], "accuracy")
    summary["bayes_accuracy"] = summary.K.map(_bayes(spec))
    return summary


def write_kclass(spec, trials: pd.DataFrame, summary: pd.DataFrame, out: Path) -> None:
    """trials.csv, summary.csv, accuracy.png and accuracy.md of one ``kclass_fig*`` run."""
    import matplotlib.pyplot as plt

    columns = ["experiment", "config_key", "seed_key", "K", "trial", "method", "accuracy", "seconds",
               "sigma", "N", "k", "eps", "run_id", "computed_by"]
    atomic_write(out / "trials.csv", lambda p: trials[columns].to_csv(p, index=False))
    bayes = _bayes(spec)
    labels = {name: cls.label for name, cls in method_classes().items()}
    atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False))

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for method, part in summary.groupby("method", sort=False):
        ax.errorbar(part.K, part["mean"], yerr=1.96 * part.se, marker="o", capsize=3,
                    label=labels[method])
    ax.plot(list(bayes), list(bayes.values()), "--", color="purple", label="Bayes")
    ax.set_xlabel("K (classes)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{spec.name}: σ = {spec.sigma}, ε = {spec.eps:g}, k = {spec.k}, N = {spec.N}, "
                 f"{spec.trials} trials", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "accuracy.png", dpi=110)

    grid = mean_ci_grid(summary, "K", "method", spec.K_values, spec.methods)
    lines = [f"# {spec.name}: accuracy (mean ± 95% CI half-width, {spec.trials} trials)", ""]
    lines += _table(["K", "Bayes", *(labels[m] for m in spec.methods)],
                    [[K, f"{bayes[K]:.3f}", *(grid[K, m] for m in spec.methods)] for K in spec.K_values])
    own = [c for c in CLAIMS if c.figure == spec.name]
    lines += ["", claims_markdown(check_claims({spec.name: summary}, own, trials={spec.name: trials}))]
    atomic_write(out / "accuracy.md", lambda p: p.write_text("\n".join(lines) + "\n"))


def summarize_digits(spec, trials: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy with its CI per (ε, method)."""
    return summarize_by(trials, ["eps", "method"], "accuracy")


def write_digits(spec, trials: pd.DataFrame, summary: pd.DataFrame, out: Path) -> None:
    """accuracy.csv (one row per split and method), summary.csv and accuracy.md."""
    columns = ["experiment", "config_key", "seed_key", "eps", "split", "method", "accuracy",
               "seconds", "run_id", "computed_by"]
    atomic_write(out / "accuracy.csv", lambda p: trials[columns].to_csv(p, index=False))
    atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False))
    eps = [float(e) for e in spec.eps]
    grid = mean_ci_grid(summary, "method", "eps", spec.methods, eps)
    lines = [f"# kclass_digits: test accuracy on scikit-learn digits (K = 10, kNN k = {spec.k}, "
             f"{spec.splits} random {1 - spec.test_fraction:.0%}/{spec.test_fraction:.0%} splits; "
             "mean ± 95% CI half-width)", ""]
    lines += _table(["method", *(f"ε = {e:g}" for e in eps)],
                    [[method_classes()[m].label, *(grid[m, e] for e in eps)] for m in spec.methods])
    atomic_write(out / "accuracy.md", lambda p: p.write_text("\n".join(lines) + "\n"))


def write_claims(results_dir: Path) -> pd.DataFrame:
    """``<results_dir>/kclass_claims.{md,csv}``: every claim of papers/002 against every K-class
    experiment found there (claims that compare two figures need both)."""
    table = check_claims(load_summaries(results_dir), trials=load_trials(results_dir))
    atomic_write(Path(results_dir) / "kclass_claims.csv", lambda p: table.to_csv(p, index=False))
    text = "# papers/002, measured: which claims the K-class experiments reproduce\n\n" + claims_markdown(table)
    atomic_write(Path(results_dir) / "kclass_claims.md", lambda p: p.write_text(text + "\n"))
    return table
