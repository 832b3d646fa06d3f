r"""Privacy audit of every mechanism: an exact privacy-loss check and a black-box lower bound (SPEC §6).

``labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]`` runs,
for each registered mechanism class — Table I's (papers/000), the K-class ones
(papers/002), the user-level randomizers (papers/003), whatever a paper adds — the
cases its class states beside it (``audit_cases``), at the claimed ε (1 by default):

**Exact check.**  The privacy loss of a mechanism M under a neighbour relation ~ is

    L(M) = sup_{D ~ D'} sup_{S} log P(M(D) ∈ S) / P(M(D') ∈ S),

and M is ε-DP iff L(M) ≤ ε.  Where the law of the output is known in closed form
the audit computes L from the mechanism's *own law methods* — the ones its
``report``/``release`` draws from (``bit_probabilities``, ``keep_probability``,
``transition_matrix``, ``selection_probabilities``/``weight``, ``location``/``scale``,
``location_and_scale``, ``count_scale``/``sum_scale``) — over a set of worst-case
neighbours, so a change to those methods moves the number:

- independent bits (RAPPOR (11), joint RAPPOR): the worst output takes, bit by bit,
  the larger of log(p_j/p'_j) and log((1−p_j)/(1−p'_j)), so
  L = max_{y,y'} Σ_j max(log p_j/p'_j, log (1−p_j)/(1−p'_j))  (the bound (15) is e^(ε/2)·e^(ε/2));
- finite outputs (RR, RRWithPrior): L = max_{i,i',j} log M[i,j]/M[i',j] over the
  transition matrix (an output possible under one input only gives L = ∞);
- exponential mechanism (17)/(31): the selection probabilities over an enumerated
  range of count vectors, L = max |log P(c|n) − log P(c|n')|; its closed-form
  supremum 2·weight is approached as the score gap grows, never reached;
- Laplace mechanisms (23)/(28)/(33)/(34), the joint Laplace vector, ALIBI: the
  density ratio of Lap(μ, b) and Lap(μ', b) is at most exp(‖μ−μ'‖₁/b) (attained on
  a quadrant), so L = max ‖Δμ‖₁/b over the neighbours; neighbours whose scales
  differ, or where one releases a constant and the other noise, give L = ∞.

**Black-box audit (DP-Sniper / StatDP style).**  M outputs are drawn under D and
under D' (fixed seeds).  The first half of each sample *chooses* an event E:
outputs are scored by an estimated log likelihood ratio (the histogram of
the codes for finite outputs; a per-coordinate quantile histogram, summed as a
naive-Bayes score, for real vectors) and E = {score ≥ t} with t maximising the
bound below on the first half.  The second half *tests* it:

    ε_lower = log( p̂_low(E | D) / p̂_up(E | D') ),

with one-sided Clopper–Pearson bounds at level α/4 each, in both directions
(D against D', D' against D, each with its own event).  The four bounds hold
together with probability ≥ 1 − α (α = 1e-6), and for a mechanism that is ε-DP
log P(E|D)/P(E|D') ≤ ε for every E, so P(ε_lower > ε) ≤ α.  The black box sees
only outputs: it catches what the law methods do not say (a report that skips its
noise, a report whose length follows the labels, a prior built from the user's
own label), but it can only give a *lower* bound on L.

**Planted mutants** (test fixtures of the audit, never used by the product): each
breaks one mechanism in one way; the audit must call it "caught".

**Careless inputs** (:class:`Careless`, listed by each class's ``audit_cases``):
each is a call a careless caller could make — a label 0.5 or −1, a cube index
past n_cells, NaN, samples of shape (m, 2) for d = 1, an ε whose probabilities
float64 cannot represent.  The mechanism must refuse it at its boundary with one
:class:`~labeldp_sim.harness.errors.ConfigError` line naming the argument: the row
says "refused", and "ACCEPTED" (the call ran) or "WRONG ERROR" (another
exception: a traceback for the user, or a line naming another argument) fail the
audit.

**ε caps on the grid of uniforms** (:class:`CapCheck`, listed by each capped class's
``audit_cases``): a mechanism that compares ``rng.random()`` — multiples of 2^-53 — with a
probability p draws with probability ⌈p·2^53⌉/2^53 (:mod:`labeldp_sim.privacy.grid`), so the
exact checks above compute RR's, RRWithPrior's and the RAPPORs' loss from the grid-rounded
law too.  Each capped class gets a row at its ``max_epsilon``: the realised loss of the class
built over a sweep of ε up to the cap, and the rounding bound at the cap (it grows with ε),
must stay within TOL of ε (**holds**); a planted class capped at the grid's edge,
ln(2^52 − 1) ≈ 36.04 (×2 for RAPPOR), must be **caught**.

**Stated limitation: low-order bits (Mironov 2012).**  For every mechanism with
real-valued outputs (the Laplace-based ones) the black box is run once more on
the same draws, on the event family "sign, binade and last mantissa bit of the
first output coordinate" (:func:`low_bit_codes`).  Floating-point Laplace noise
leaks through those bits far beyond e^ε.  The mechanisms are simulation
mechanisms that draw from the papers' continuous laws, which the rates are
about; the leak is a known, stated limitation (docs/audit.md, "Privacy: threat model
and what the audit covers"), reported with its ε_lower in rows of kind
"stated limitation" that never fail the audit.

Outputs: ``<out>/audit.csv`` and ``<out>/audit.md``, written atomically.

**Where the cases come from.**  Every concrete
:class:`~labeldp_sim.privacy.protocols.Mechanism` registered in any component group
(:func:`~labeldp_sim.harness.components.components`) is audited: its class's
``audit_cases(eps)`` returns an :class:`AuditCases` (real cases of that class, planted
mutants, careless inputs), usually by importing its paper's recipe module.  A class without
a recipe of its own, or whose rows are given to another class, stops the audit
(:class:`MissingRecipe`, :func:`collect`).

Modules: :mod:`.maths` (exact losses, Clopper–Pearson bounds), :mod:`.blackbox` (the
black-box test), :mod:`.registry` (recipes, cases, careless inputs, collected from the
mechanism registries), :mod:`.rappor_audit` (the shared RAPPOR's cases), :mod:`.mutants`
(its planted mutants), :mod:`.runner` (running the cases), :mod:`.report` (audit.csv,
audit.md, the printed table) and :mod:`.cli` (the entry point).  Every name is
re-exported here: import from ``labeldp_sim.privacy.audit``.
"""

from __future__ import annotations

from labeldp_sim.privacy.audit.blackbox import (ALPHA, MAX_THRESHOLDS, N_BINS, Direction, count_at_least, one_direction, score_function,
                       bits_code, black_box, low_bit_codes)
from labeldp_sim.privacy.audit.maths import log_bound, log_ratio, bits_loss, clopper_pearson_lower, clopper_pearson_upper, matrix_loss
from labeldp_sim.privacy.audit.registry import (BIG, EPSILON, FULL_NB, K_BB, LABEL_NB, PRIVACY_NEUTRAL, T, AuditCases, CapCheck, Careless,
                       Case, MissingRecipe, Recipe, audited_classes, builds, calls, cap_checks, careless_cases, cases,
                       collect, load_configured)
from labeldp_sim.privacy.audit.runner import (CAP, CARELESS, CHUNK, DEFAULT_DRAWS, LIMITATION, LOW_BIT_EVENT, MECHANISM, TOL, Result,
                     run_case_counts, low_bit_result, run_audit, run_cap, run_careless, run_case)
from labeldp_sim.privacy.audit.report import COLUMNS, NAME_WIDTH, write_outputs
from labeldp_sim.privacy.audit.cli import MAX_DRAWS, MIN_DRAWS, OPTIONS, QUICK_DRAWS, USAGE, Options, main, parse_args

__all__ = ["ALPHA", "TOL", "DEFAULT_DRAWS", "QUICK_DRAWS", "EPSILON", "Recipe", "Case", "Careless", "Result",
           "AuditCases", "CapCheck", "MissingRecipe", "Direction", "bits_loss", "matrix_loss", "clopper_pearson_lower",
           "calls", "builds", "clopper_pearson_upper", "black_box", "low_bit_codes", "audited_classes", "collect",
           "cases", "careless_cases", "cap_checks", "load_configured", "run_case", "run_careless", "run_cap",
           "run_audit", "write_outputs", "parse_args", "main", "MECHANISM", "CARELESS", "LIMITATION", "CAP"]
