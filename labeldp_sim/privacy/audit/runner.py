"""Running the audit: the exact check and the black box of each case, the careless inputs, the low-order bits."""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from labeldp_sim.harness.errors import ConfigError, first_line
from labeldp_sim.privacy.grid import LOSS_TOLERANCE, rare_probability, cap_sweep, worst_excess
from labeldp_sim.privacy.protocols import Privacy
from labeldp_sim.privacy.audit.blackbox import ALPHA, black_box, low_bit_codes
from labeldp_sim.privacy.audit.registry import EPSILON, CapCheck, Careless, Case, cap_checks, careless_cases, cases

TOL = LOSS_TOLERANCE   # exact check: loss > ε + TOL fails (float rounding of log e^ε)
DEFAULT_DRAWS = 2_000_000
CHUNK = 200_000        # outputs per report/release call (memory only; fixed, so draws are reproducible)

# the kinds of rows besides "mutant of <mechanism>"
MECHANISM, CARELESS, LIMITATION, CAP = "mechanism", "careless input", "stated limitation", "ε cap"
LOW_BIT_EVENT = ("black box on the same draws, events on the sign, binade and last mantissa bit of the "
                 "first output coordinate (Mironov 2012)")


@dataclass
class Result:
    """One row of audit.csv."""

    mechanism: str
    kind: str
    privacy: str
    neighbours: str
    pair: str
    claimed_eps: float
    exact_loss: float
    exact_method: str
    eps_lower: float
    direction: str
    p_hat: float
    q_hat: float
    draws: int
    caught_by: str
    verdict: str
    expected: str
    broken: str = ""
    message: str = ""
    seconds: float = field(default=0.0)

    @property
    def ok(self) -> bool:
        return self.verdict == self.expected


def _rng(seed, name, side):
    # keyed on the case's name: adding a case does not move the others' draws
    return np.random.default_rng([seed, zlib.crc32(name.encode()), side])


def _draw_all(case: Case, side: int, draws: int, seed: int):
    rng = _rng(seed, case.name, side)
    parts = [case.recipe.draw(case.mechanism, side, min(CHUNK, draws - start), rng)
             for start in range(0, draws, CHUNK)]
    if parts[0].ndim == 1:
        return np.concatenate(parts)
    width = max(p.shape[1] for p in parts)
    if any(p.shape[1] != width for p in parts):  # cannot happen for a fixed-length output
        raise ValueError(f"{case.name}: outputs of different widths")
    return np.concatenate(parts)


def _privacy_text(mechanism) -> str:
    # a planted mutant or careless class may not state its privacy: its row then reads blank, it does not crash
    privacy = getattr(mechanism, "privacy", None)
    return f"{privacy.protects}, {privacy.model}" if isinstance(privacy, Privacy) else ""


def run_case(case: Case, draws: int, seed: int = 0, alpha: float = ALPHA, eps: float = EPSILON) -> Result:
    """Exact check and black-box audit of one case.

    Parameters
    ----------
    case : Case
    draws : int
        Outputs drawn under each of D and D' (half choose the event, half test it).
    seed : int
        Root seed; each case's streams are keyed on (seed, case name, side).
    alpha : float
        The black box's level: P(ε_lower > true loss) ≤ alpha.
    eps : float
        The claimed ε.

    Returns
    -------
    Result
        The verdict is "private"/"FAILED" for a mechanism, "caught"/"MISSED" for a mutant;
        a check fails when exact loss > ε + TOL, or ε_lower > ε.
    """
    return run_case_counts(case, draws, seed, alpha, eps)[0]


def run_case_counts(case: Case, draws: int, seed: int, alpha: float, eps: float):
    """:func:`run_case`'s result, and the draws (x0, x1) it bounded."""
    start = time.perf_counter()
    loss, method = case.recipe.exact(case.mechanism)
    x0, x1 = _draw_all(case, 0, draws, seed), _draw_all(case, 1, draws, seed)
    if x0.ndim != x1.ndim or (x0.ndim == 2 and x0.shape[1] != x1.shape[1]):
        # real outputs whose width follows the input: the width alone tells D from D'
        x0, x1 = np.full(len(x0), 0, dtype=np.int64), np.full(len(x1), 1, dtype=np.int64)
    bb = black_box(x0, x1, alpha)
    exact_fails, bb_fails = loss > eps + TOL, bb.eps_lower > eps
    caught_by = "+".join(name for name, fails in (("exact", exact_fails), ("black-box", bb_fails)) if fails)
    if case.mutant_of is None:
        verdict = "FAILED" if caught_by else "private"
    else:
        verdict = "caught" if caught_by else "MISSED"
    result = Result(
        mechanism=case.name, kind=MECHANISM if case.mutant_of is None else f"mutant of {case.mutant_of}",
        privacy=_privacy_text(case.mechanism), neighbours=case.recipe.neighbours,
        pair=case.recipe.pair, claimed_eps=eps, exact_loss=float(loss), exact_method=method,
        eps_lower=max(bb.eps_lower, 0.0), direction=bb.label, p_hat=bb.k_p / bb.n, q_hat=bb.k_q / bb.n,
        draws=draws, caught_by=caught_by, verdict=verdict, expected=case.expected, broken=case.broken,
        seconds=time.perf_counter() - start)
    return result, x0, x1


def low_bit_result(case: Case, x0: np.ndarray, x1: np.ndarray, alpha: float = ALPHA,
                   eps: float = EPSILON) -> Result:
    """The stated limitation of ``case``: the black box on :func:`low_bit_codes` of its draws.

    The verdict is always "stated": the row measures a known limitation of
    floating-point Laplace noise (docs/audit.md), it is not a check that can fail.
    """
    start = time.perf_counter()
    bb = black_box(low_bit_codes(x0), low_bit_codes(x1), alpha)
    note = ("ε_lower > ε: floating-point Laplace noise leaks through its low-order bits" if bb.eps_lower > eps
            else "no leak beyond ε seen at this draw count")
    return Result(
        mechanism=f"{case.name}: low-order bits", kind=LIMITATION, privacy=_privacy_text(case.mechanism),
        neighbours=case.recipe.neighbours, pair=case.recipe.pair, claimed_eps=eps, exact_loss=float("nan"),
        exact_method=LOW_BIT_EVENT, eps_lower=max(bb.eps_lower, 0.0), direction=bb.label,
        p_hat=bb.k_p / bb.n, q_hat=bb.k_q / bb.n, draws=len(x0), caught_by="", verdict="stated",
        expected="stated", broken="simulation mechanism: floating-point Laplace noise", message=note,
        seconds=time.perf_counter() - start)


def run_careless(case: Careless, eps: float = EPSILON) -> Result:
    """Run one careless input: "refused" when it raises one :class:`ConfigError` line naming its key.

    Returns
    -------
    Result
        Verdict "refused" (expected), "ACCEPTED" when the call returned, or "WRONG ERROR" when
        it raised anything else: another exception is a traceback for the user, and a line
        naming another argument sends the user to the wrong place.
    """
    start = time.perf_counter()
    try:
        case.call(case.mechanism)
    except ConfigError as err:
        message = str(err)
        right = "\n" not in message and message.startswith(f"{case.key}: ")
        verdict = "refused" if right else "WRONG ERROR"
    except Exception as err:  # whatever escapes is what the careless caller would see: a traceback
        message, verdict = first_line(err), "WRONG ERROR"
    else:
        message, verdict = "the call ran: the mechanism accepted it", "ACCEPTED"
    nan = float("nan")
    return Result(
        mechanism=case.name, kind=CARELESS, privacy=_privacy_text(case.mechanism), neighbours="", pair="",
        claimed_eps=eps, exact_loss=nan, exact_method="", eps_lower=nan, direction="", p_hat=nan, q_hat=nan,
        draws=0, caught_by="", verdict=verdict, expected="refused", broken=case.careless, message=message,
        seconds=time.perf_counter() - start)


def run_cap(check: CapCheck, eps: float = EPSILON) -> Result:
    """Check a class's ε cap: the loss its draws realise on the 2^-53 grid stays ≤ ε up to the cap.

    For each ε of :func:`~labeldp_sim.privacy.grid.cap_sweep` (``cls.max_epsilon`` last) the
    realised loss of ``cls(ε)`` is computed (``check.realised``); the row's exact loss is

        cap + max(max_ε (realised(ε) − ε), worst_excess(1/(1 + e^(cap/comparisons)), comparisons)),

    the cap plus the worst excess seen or bounded, so it is ≤ cap + TOL exactly when the cap
    holds.  The rounding bound grows with ε, so at the cap it covers every smaller ε; the sweep
    shows the realised excess itself (it jumps about with where p·2^53 falls on the grid).

    Returns
    -------
    Result
        Kind :data:`CAP` (or "mutant of <check>" for a planted cap); verdict "holds"/"FAILED" for
        a real check, "caught"/"MISSED" for a mutant.
    """
    start = time.perf_counter()
    cap = float(check.cls.max_epsilon)
    sweep = cap_sweep(cap)
    excess = np.array([check.realised(check.cls(e)) - e for e in sweep])
    worst = int(np.argmax(excess))
    bound = worst_excess(rare_probability(cap / check.comparisons), check.comparisons)
    loss = cap + max(float(excess[worst]), bound)
    fails = loss > cap + TOL
    if check.mutant_of is None:
        verdict, caught_by = ("FAILED" if fails else "holds"), ""
    else:
        verdict, caught_by = ("caught" if fails else "MISSED"), ("exact" if fails else "")
    nan = float("nan")
    return Result(
        mechanism=check.name, kind=CAP if check.mutant_of is None else f"mutant of {check.mutant_of}",
        privacy=_privacy_text(check.cls), neighbours="", pair="", claimed_eps=cap, exact_loss=loss,
        exact_method=(f"{check.method}, at {len(sweep)} ε in [{sweep[0]:.4g}, {cap:.6g}]; and the rounding "
                      f"bound at the cap"),
        eps_lower=nan, direction="", p_hat=nan, q_hat=nan, draws=0, caught_by=caught_by, verdict=verdict,
        expected=check.expected, broken=check.broken,
        message=(f"worst realised excess {excess[worst]:.3g} at ε = {sweep[worst]:.6g}; "
                 f"rounding bound {bound:.3g} at the cap"),
        seconds=time.perf_counter() - start)


def run_audit(draws: int = DEFAULT_DRAWS, seed: int = 0, mutants: bool = True, alpha: float = ALPHA,
              progress: Callable | None = None) -> list[Result]:
    """Audit every case of :func:`cases` and every careless input (at ε = :data:`EPSILON`).

    Parameters
    ----------
    draws, seed, alpha : see :func:`run_case`
    mutants : bool
        Also audit the planted mutants (of the mechanisms and of the ε caps).
    progress : callable, optional
        Called with each :class:`Result` as it is ready.

    Returns
    -------
    list of Result
        The mechanisms, the mutants, the careless inputs, the ε caps (:func:`run_cap`), then the
        stated limitation of each mechanism with real-valued outputs (computed from that
        mechanism's draws).
    """
    results, limitations = [], []

    def emit(result):
        results.append(result)
        if progress is not None:
            progress(result)

    for case in cases(EPSILON, mutants):
        result, x0, x1 = run_case_counts(case, draws, seed, alpha, EPSILON)
        emit(result)
        if case.mutant_of is None and x0.dtype.kind == "f":
            limitations.append(low_bit_result(case, x0, x1, alpha, EPSILON))
    for careless in careless_cases(EPSILON):
        emit(run_careless(careless, EPSILON))
    for check in cap_checks(EPSILON, mutants):
        emit(run_cap(check, EPSILON))
    for result in limitations:
        emit(result)
    return results
