"""The audit's outputs: ``audit.csv``, ``audit.md`` and the table printed as the audit runs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.store import atomic_write
from labeldp_sim.privacy.audit.registry import EPSILON
from labeldp_sim.privacy.audit.runner import CAP, CARELESS, LIMITATION, MECHANISM, TOL, Result

log = get_logger("audit")

COLUMNS = ["mechanism", "kind", "privacy", "neighbours", "pair", "claimed_eps", "exact_loss", "exact_method",
           "eps_lower", "direction", "p_hat", "q_hat", "draws", "caught_by", "verdict", "expected", "broken",
           "message", "seconds"]


def _num(x, digits=4):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    if np.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def _csv_value(name, value):
    if isinstance(value, float):
        return "inf" if np.isinf(value) else repr(round(value, 12)) if name != "seconds" else f"{value:.3f}"
    return value


def _cell(text) -> str:
    """Text for a markdown table cell: a bare | would end the cell."""
    return str(text).replace("|", "\\|")


def _table(header: list, rows: list) -> list:
    """Lines of a Markdown pipe table of the cells as given (already text), through pandas."""
    return pd.DataFrame(rows, columns=header, dtype=object).to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, stralign=None).splitlines()


def _markdown(results, draws, seed, alpha, seconds):
    real = [r for r in results if r.kind == MECHANISM]
    careless = [r for r in results if r.kind == CARELESS]
    limitations = [r for r in results if r.kind == LIMITATION]
    caps = [r for r in results if r.kind == CAP]
    mutants = [r for r in results if r.kind.startswith("mutant of ")]
    lines = [
        "# Privacy audit",
        "",
        f"Claimed ε = {EPSILON:g} for every mechanism; {draws:,} draws per input (D and D'): the first "
        f"half chooses the event, the second half bounds it; Clopper–Pearson at α = {alpha:g} per "
        f"mechanism (α/4 per one-sided bound, two directions); exact-check tolerance {TOL:g}; "
        f"seed {seed}; {seconds:.1f} s.",
        "",
        "A mechanism is **private** when its exact loss is ≤ ε and ε_lower ≤ ε; a planted mutant (a "
        "test fixture of the audit) is **caught** when either check exceeds ε; a careless input is "
        "**refused** when the mechanism raises one line naming the argument. The low-order-bit rows "
        "are a known, stated limitation and never fail the audit. "
        "ε_lower is a lower bound on the privacy loss with confidence 1 − α; the exact loss is the "
        "worst log-ratio computed from the mechanism's law methods over the neighbours listed.",
        "",
        "## Mechanisms",
        "",
    ]
    lines += _table(["mechanism", "privacy", "neighbours", "black-box pair", "claimed ε", "exact loss", "ε_lower",
                     "verdict"],
                    [[r.mechanism, r.privacy, _cell(r.neighbours), _cell(r.pair), f"{r.claimed_eps:g}",
                      _num(r.exact_loss), _num(r.eps_lower), r.verdict] for r in real])
    if mutants:
        lines += ["", "## Planted mutants (test fixtures of the audit)", ""]
        lines += _table(["mutant", "of", "what is broken", "privacy", "claimed ε", "exact loss", "ε_lower",
                         "caught by", "verdict"],
                        [[r.mechanism, r.kind.removeprefix("mutant of "), _cell(r.broken), r.privacy,
                          f"{r.claimed_eps:g}", _num(r.exact_loss), _num(r.eps_lower), r.caught_by or "—",
                          r.verdict] for r in mutants])
    if careless:
        lines += ["", "## Careless inputs refused at the mechanism boundary", "",
                  "Each row runs a call a careless caller could make. It must raise one line naming the "
                  "argument (**refused**); **ACCEPTED** (the call ran) or **WRONG ERROR** (a traceback, or a "
                  "line naming another argument) fails the audit.", ""]
        lines += _table(["case", "of", "careless input", "verdict", "what the caller sees"],
                        [[r.mechanism, _of(r), _cell(r.broken), r.verdict, f"`{_cell(r.message)}`"]
                         for r in careless])
    if caps:
        lines += ["", "## ε caps: the loss realised on the 2^-53 grid of uniforms", "",
                  "A mechanism that compares `rng.random()` (multiples of 2^-53) with a probability p draws "
                  "with probability ⌈p·2^53⌉/2^53, not p. Each row builds the class at ε over a sweep up to "
                  "its cap (`max_epsilon`), computes the exact loss of the grid-rounded law, and bounds the "
                  "rounding at the cap (the bound grows with ε, so it covers every smaller ε). The cap "
                  f"**holds** when cap + worst excess ≤ cap + {TOL:g}.", ""]
        lines += _table(["ε cap of", "privacy", "cap", "cap + worst excess", "verdict",
                         "worst excess seen, rounding bound"],
                        [[r.mechanism, r.privacy, f"{r.claimed_eps:g}", _num(r.exact_loss, 12), r.verdict,
                          _cell(r.message)] for r in caps])
    if limitations:
        lines += ["", "## Known, stated limitation: floating-point low-order bits (Mironov 2012)", "",
                  "Not a failure of the audit. These are simulation mechanisms: they draw from the papers' "
                  "continuous laws in floating point, and floating-point Laplace noise leaks through its "
                  "low-order bits. Each row reruns the black box on the draws of the mechanism above, with "
                  "events on the sign, binade and last mantissa bit of the first output coordinate; "
                  "ε_lower > ε measures the leak. Do not release real data with these mechanisms: use a "
                  "floating-point-safe library (e.g. OpenDP's discrete Laplace). docs/audit.md: \"Privacy: threat "
                  "model and what the audit covers\".", ""]
        lines += _table(["mechanism", "privacy", "claimed ε", "ε_lower (low-order bits)", "draws", "verdict"],
                        [[r.mechanism, r.privacy, f"{r.claimed_eps:g}", _num(r.eps_lower), f"{r.draws:,}", r.verdict]
                         for r in limitations])
    lines += ["", "## Exact checks", ""]
    lines += _table(["mechanism", "method"], [[r.mechanism, _cell(r.exact_method)] for r in real + caps])
    lines += ["", f"Draws per input: {draws:,} (of each of D and D'). "
              "An audit can refute a privacy claim, never prove one: the exact check is only as good "
              "as the law methods and the neighbours enumerated, and ε_lower only bounds the loss "
              "from below.", ""]
    return "\n".join(lines)


def write_outputs(results: list[Result], out: Path, draws: int, seed: int, alpha: float, seconds: float):
    """``out/audit.csv`` and ``out/audit.md``, each written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def write_csv(path):
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for r in results:
                # COLUMNS names the result's fields in the CSV's order: one list keeps the header and rows aligned
                writer.writerow([_csv_value(c, getattr(r, c)) for c in COLUMNS])

    atomic_write(out / "audit.csv", write_csv)
    text = _markdown(results, draws, seed, alpha, seconds)
    atomic_write(out / "audit.md", lambda path: Path(path).write_text(text, encoding="utf-8"))


NAME_WIDTH = 46  # "ul_alg2_coordinate (randomize): low-order bits"


def _of(r: Result) -> str:
    return r.mechanism.split(":")[0]


def _table_line(r: Result) -> str:
    flag = "" if r.ok else f"   <-- expected {r.expected}"
    return (f"{r.mechanism:<{NAME_WIDTH}} {r.privacy:<24} {_num(r.exact_loss):>8} {_num(r.eps_lower):>8} "
            f"{r.verdict:<8} {r.caught_by or r.message}{flag}")


_SECTION = {CARELESS: "careless inputs: each must be refused in one line naming the argument",
            CAP: "ε caps: the loss realised on the 2^-53 grid of uniforms stays ≤ ε up to each cap",
            LIMITATION: "stated limitation, not a failure: ε_lower of the low-order bits of floating-point "
                        "Laplace noise (Mironov 2012)"}


def printer():
    """A progress callback printing each row, with a heading where a new kind of row starts."""
    seen = set()

    def show(r: Result):
        if r.kind in _SECTION and r.kind not in seen:
            seen.add(r.kind)
            log.info(f"-- {_SECTION[r.kind]}")
        log.info(_table_line(r))

    return show
