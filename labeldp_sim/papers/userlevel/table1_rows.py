"""Table 1 of papers/003 row by row, each row with the registry rates behind its entry.

Presentation only: the report's Table 1 (``table1.md``) is built from these
rows and the rates of :data:`~.theory.RATES` they name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Table1Row", "TABLE1_ROWS"]


@dataclass(frozen=True)
class Table1Row:
    """One row of the paper's Table 1 and the registry rates behind it.

    Attributes
    ----------
    key : str
    task : str
        The row's task as Table 1 names it.
    entry : str
        The user-level entry (Õ upper bound; non-private terms omitted).
    condition : str
        The sample-size condition printed under the entry.
    source : str
        The result the entry cites.
    item_level : str
        The item-level column and its citation.
    upper : str
        Name in :data:`~.theory.RATES` of the full upper bound.
    lower : str or None
        Name of the matching lower bound (None: the paper gives none).
    notes : str
    """

    key: str
    task: str
    entry: str
    condition: str
    source: str
    item_level: str
    upper: str
    lower: str | None
    notes: str = ""


TABLE1_ROWS: tuple[Table1Row, ...] = (
    Table1Row("mean_bounded_l2", "Mean, bounded (ℓ2 support)",
              "Õ(d/(nm(ε²∧ε)))", "n(ε²∧1) ≳ d ln m", "Theorem 5",
              "O(d/(nm(ε²∧ε))) (Asi et al., 2022)", "thm5_l2", "thm6_lower",
              "Full form (9) has the ln n factor."),
    Table1Row("mean_bounded_linf", "Mean, bounded (ℓ∞ support)",
              "Õ(d²/(nm(ε²∧ε))) (not printed: Table 1 prints the ℓ2 form; ℓ∞ adds ×d)",
              "n(ε²∧1) ≳ d ln m", "Theorem 4",
              "O(d²/(nm(ε²∧ε))) with nm samples (Sec. 4.2; Duchi et al., 2018)", "thm4_linf",
              "thm7_lower", "Full form (8)."),
    Table1Row("mean_heavy", "Mean, heavy-tail",
              "Õ(d ln m/(mn(ε²∧ε)) ∨ (d/(m²n(ε²∧ε)))^{1−1/p})", "n(ε²∧1) ≳ d ln m",
              "Remark 2",
              "O((d/(nm(ε²∧ε)))^{1−1/p}) (Duchi et al., 2018; garbled, reconstructed)",
              "rem2_heavy_l2", None,
              "No lower bound in the paper; spike_lower (SPEC §6, d = 1) matches the second "
              "term; item-level baseline: item_heavy."),
    Table1Row("so", "Stochastic optimization",
              "Õ(√(d/(nm(ε²∧ε))))", "n(ε²∧1) ≳ d ln n ln m", "Theorem 8",
              "Õ(√(d/(nm(ε²∧ε)))) (Duchi et al., 2013)", "thm8_so", None,
              "No lower bound in the paper. Slip 2."),
    Table1Row("classification", "Classification",
              "Õ((mn(ε²∧ε))^{−β(1+γ)/(2(d+β))})", "n(ε²∧1) ≳ d ln(mn)", "Theorem 9",
              "O((mn(ε²∧ε))^{−β(1+γ)/(2(d+β))}) (Berrett & Butucea, 2019)", "thm9_cls",
              "thm10_lower", "Lower bound for small ε only."),
    Table1Row("regression", "Regression",
              "Õ((mn(ε²∧ε))^{−β/(d+β)})", "n(ε²∧1) ≳ d ln(mn)", "Theorem 11",
              "O((mn(ε²∧ε))^{−β/(d+β)}) (Berrett et al., 2021)", "thm11_reg", "thm12_lower",
              "Lower bound for small ε only."),
)
"""Rows of Table 1 (non-private terms omitted there), each with its upper/lower rate names."""

