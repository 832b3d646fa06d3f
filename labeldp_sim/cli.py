"""Command line: ``python -m labeldp_sim experiment=<name> [hydra overrides]``.

Also the ``labeldp-sim`` console script, and Hydra multirun (``-m``).
Bad input ends the program with one line on stderr (the config key and the
allowed values) and exit status 2, before any computation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from .errors import ConfigError
from .experiment import CONF_DIR, GROUPS, build_experiment, group_options

__all__ = ["main", "run_experiment", "check_group_choices"]


def check_group_choices(argv: list[str]) -> None:
    """Reject ``group=name`` overrides naming no YAML file, in one line.

    Hydra's own message for this spans several lines; this check runs first.
    """
    for arg in argv:
        if "=" not in arg or arg.startswith("-"):
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+~")
        if key not in GROUPS:
            continue
        allowed = group_options(key)
        for choice in value.split(","):
            if choice.strip() not in allowed:
                raise ConfigError(key, choice.strip(), allowed)


def run_experiment(cfg: DictConfig, overrides=None) -> dict:
    """Validate, run the sweep, fit, plot and write every output of one experiment."""
    from .fit import fit_rates, summarize
    from .report import plot_rates, write_provenance, write_table1
    from .runner import run_sweep

    if cfg.get("kind", "rates") != "rates":
        return _run_accuracy_experiment(cfg, overrides)

    exp = build_experiment(cfg)  # raises ConfigError before any computation
    results_dir = Path(cfg.paths.results_dir)
    out = results_dir / exp.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    write_provenance(out / "provenance.json", exp.seed, exp.config_key, overrides)
    trials = run_sweep(exp, out)
    summary = summarize(trials)
    summary.to_csv(out / "summary.csv", index=False)
    fits = fit_rates(summary, exp.cell, exp.tol, exp.min_points)
    fits.to_csv(out / "fit.csv", index=False)
    plot_rates(summary, fits, out / "rate.png", exp.name)
    write_table1(results_dir)
    for _, r in fits.iterrows():
        print(f"{exp.name}: slope on log {r.axis}, d={r.d}: {r.slope:.3f} "
              f"[{r.ci_low:.3f}, {r.ci_high:.3f}] vs theory {r.theory:.3f} -> {r.verdict}")
    return {"trials": trials, "summary": summary, "fits": fits, "out": out}


def _run_accuracy_experiment(cfg: DictConfig, overrides=None) -> dict:
    """K-class experiments of papers/002 (accuracy, not rates)."""
    from .errors import check
    from .kclass import run_digits, run_kclass, validate_kclass
    from .report import write_provenance

    kind = cfg.get("kind")
    check(kind in ("kclass", "digits"), "kind", kind, ["rates", "kclass", "digits"])
    spec = validate_kclass(cfg) if kind == "kclass" else None  # raises before any computation
    out = Path(cfg.paths.results_dir) / cfg.experiment_name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    write_provenance(out / "provenance.json", int(cfg.seed), kind, overrides)
    summary = run_kclass(spec, out) if kind == "kclass" else run_digits(cfg, out)
    print((out / "accuracy.md").read_text())
    return {"summary": summary, "out": out}


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    try:
        run_experiment(cfg, HydraConfig.get().overrides.task)
    except ConfigError as err:
        print(f"labeldp-sim: error: {err}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    try:
        check_group_choices(sys.argv[1:])
    except ConfigError as err:
        print(f"labeldp-sim: error: {err}", file=sys.stderr)
        sys.exit(2)
    _hydra_main()
