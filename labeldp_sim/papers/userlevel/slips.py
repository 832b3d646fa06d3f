"""Slips and inconsistencies of papers/003 that touch the theory registry, and what the harness does.

SPEC §4's numbered list, the notes of SPEC §2/§3, and those found while
building the registry (:mod:`.theory`); each names the rates of
:data:`~.theory.RATES` it affects.  Presentation only: no trial reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Slip", "SLIPS"]


@dataclass(frozen=True)
class Slip:
    """A slip or inconsistency of papers/003 and what the harness does about it.

    Attributes
    ----------
    key : str
        ``"1"``–``"10"`` for SPEC §4's numbered list; ``"A1"``, ``"A2"``, ``"L1"``,
        ``"R2"``, ``"H1"``, ``"P1"`` for SPEC §2/§3 notes; ``"X…"`` for ones found while
        building this registry (not in the SPEC).
    where : str
        Location in the paper.
    what : str
        The slip.
    harness : str
        What the harness does instead.
    rates : tuple of str
        Names in :data:`~.theory.RATES` it affects.
    """

    key: str
    where: str
    what: str
    harness: str
    rates: tuple = ()


SLIPS: tuple[Slip, ...] = (
    Slip("1", "Theorems 6 and 7, proofs (App. C.2–C.3, eq. (111))",
         "The proofs give D²d/(mn(e^ε−1)²) (resp. D²d²/…), which equals the stated "
         "D²d/(nm(ε²∧ε)) only for ε ≲ 1; for large ε the proved bound decays like e^{−2ε}.",
         "Lower-bound slopes are compared for ε ≤ 1 only.",
         ("thm6_lower", "thm7_lower")),
    Slip("2", "Introduction (contributions) vs Theorem 8, eq. (17)",
         "The intro states the SO rate Õ(d/(nm(ε²∧ε))) — no square root, no ln²n — which "
         "conflicts with (17) D√(ln n/(nm)(1 + d ln n/(ε²∧ε))) and with Table 1's √(·).",
         "Uses (17): unsquared error, n/m slopes −½.",
         ("thm8_so",)),
    Slip("3", "Sec. 6.1, after Theorem 9",
         "'With large ε, (19) reduces to (mn/ln n)^{−2β/(2β+d)}': the exponent should be "
         "β(1+γ)/(2β+d), as printed in (19).",
         "Uses (19)'s exponent.",
         ("thm9_cls",)),
    Slip("4", "App. D, eq. (169)",
         "The bandwidth should be l ~ (mnε)^{−1/(2(d+β))}.",
         "Uses l = c(mnε²)^{−1/(2(d+β))} for ε ≤ 1 (ε² → ε in the medium regime), "
         "c = 6 (SPEC §5, §7).",
         ("thm9_cls",)),
    Slip("5", "Theorems 9 and 11; eq. (152)",
         "The analyses ignore the group count K: each group needs (n/K)ε² ≳ ln m while "
         "(152) uses nε². Theorem 9's condition has no d (Table 1's has).",
         "Groups sized ≥ 2000/ε² users (SPEC §7); grids kept inside that regime.",
         ("thm9_cls", "thm11_reg")),
    Slip("6", "App. C.4, eqs. (112), (114); App. B, eq. (85)",
         "(112)/(114) print the spike term with a flipped exponent sign "
         "((m²nε²/d)^{1−1/p} instead of ^{−(1−1/p)}); (114) needs d² in that term. (85) "
         "carries an extra M_p inside (M_p m²nε²)^{−(1−1/p)}.",
         "Uses (4)/(13) as stated; Δ from (84) with M_p^{1/p} scaling (SPEC §2).",
         ("thm3_heavy", "rem2_heavy_coord")),
    Slip("7", "Sec. 4.1, after Theorem 3",
         "Item-level heavy-tailed MSE written '(mε²)^{1−1/p}'; should be "
         "(nmε²)^{−(1−1/p)} (cf. Table 1's item-level column).",
         "Item-level baseline uses (d/(nm(ε²∧ε)))^{1−1/p}.",
         ("item_heavy",)),
    Slip("8", "App. E.3, eqs. (230)–(232)",
         "Should read l ~ (nmε²)^{−1/(2(d+β))} and R ≳ l^{2β} ~ (nmε²)^{−β/(d+β)}.",
         "Theorem 12's hard instance uses the corrected l (SPEC §6).",
         ("thm12_lower",)),
    Slip("9", "Theorem 10, App. D.3",
         "The hard instance's η = 0 cubes violate Assumption 2(a) (Tsybakov margin); the "
         "construction needs γβ ≤ d.",
         "Perturbs about l^{γβ−d} cubes only (SPEC §6); uses γβ ≤ d.",
         ("thm10_lower",)),
    Slip("10", "Assumption 2(b); Theorem 11",
         "Hölder-β with β > 1 forces constant η, so β ∈ (0, 1]. Theorem 11 is proved only "
         "for ε ≤ 1 although stated with ε²∧ε.",
         "β ≤ 1 in all grids; regression slopes compared for ε ≤ 1.",
         ("thm9_cls", "thm10_lower", "thm11_reg", "thm12_lower")),
    Slip("A1", "Algorithm 1, step 5",
         "k̂* = argmax_k x_k: x_k is undefined, read s_k (the noisy bin counts of step 4).",
         "k̂ = argmax_k Σ_i Z_ik.",
         ("thm1_alg1", "thm3_heavy")),
    Slip("A2", "Algorithm 2, line 8 (medium privacy)",
         "The loop runs k = 1..⌊d/ε⌋ but ⌈d/ε⌉ groups are formed, so up to ε−1 "
         "coordinates are never estimated; ε is assumed an integer.",
         "⌈d/ε⌉ groups, each runs ⌊ε⌋ independent Algorithm 1 instances at 1-LDP.",
         ("thm4_linf", "thm5_l2")),
    Slip("L1", "Lemma 1 (Kashin's representation, 'rephrased' from Lyubarskii–Vershynin)",
         "False as a linear map: a row with ||u_j||² ≥ ½ gives ||Ux||∞ ≥ 0.7 at "
         "x = u_j/||u_j||; the linear ||Ux||∞√d grows with d (3.5, 6.3, 12.3 at "
         "d = 16, 64, 256).",
         "Nonlinear Lyubarskii–Vershynin coefficients: from r = x repeat "
         "b = clip(Ur, ±1.5||r||/√(2d)), a += b, r −= Uᵀb; Uᵀa(X) = X.",
         ("thm5_l2", "rem2_heavy_l2", "thm8_so")),
    Slip("R2", "Remark 2, eq. (12) (= (116))",
         "With coordinatewise moments the second term lacks a factor d (sum over d "
         "coordinates of (115)).",
         "Measures (13) (ℓ2 moments) only; (12) kept as printed.",
         ("rem2_heavy_coord",)),
    Slip("H1", "Theorem 3 / App. A.5",
         "h is unspecified for the heavy-tailed variant.",
         "h = 4M_p^{1/p}/√m (SPEC §2).",
         ("thm3_heavy",)),
    Slip("P1", "Proposition 1",
         "Statement (1) is missing in the extraction (only (2) survives).",
         "Reconstructed (SPEC §3): item-level (ε/m)-LDP on every sample (group privacy).",
         ("p1a_item_level",)),
    Slip("X1", "App. C.4, eq. (113)",
         "The medium regime is written 1 ≤ ε < d ln m, Algorithm 2 uses 1 ≤ ε < d ln n. "
         "(Found while building this registry; not in the SPEC.)",
         "Algorithm 2's d ln n.",
         ("rem2_heavy_coord", "rem2_heavy_l2")),
    Slip("X2", "App. C.4, eqs. (112) vs (115)",
         "Per coordinate, (112) (ε < 1, n/d users per group) has the non-private term "
         "d/(mn) but the 'combined' (115) writes 1/(mn). Harmless for the rate (the "
         "ln m/(mnε²) term dominates for ε < 1). (Found here; not in the SPEC.)",
         "None needed; (13) is measured as printed.",
         ("rem2_heavy_coord",)),
    Slip("X3", "Remark 2 vs Table 1",
         "Remark 2 states the condition nε² ≥ c1 d ln m; Table 1 writes n(ε²∧1) ≳ d ln m. "
         "(Found here; not in the SPEC.)",
         "Uses n(ε²∧1) ≳ d ln m (Table 1; agrees for ε ≤ 1).",
         ("rem2_heavy_coord", "rem2_heavy_l2")),
    Slip("X4", "Eq. (4), (12), (13)",
         "'[a ∨ b + c]' does not say whether ∨ or + binds first. (Found here.)",
         "Reads (a ∨ b) + c (the +1/(mn) term is the non-private variance).",
         ("thm3_heavy", "rem2_heavy_coord", "rem2_heavy_l2")),
)
"""Slips and inconsistencies: SPEC §4's numbered list, §2/§3's notes, and extra finds."""

