"""papers/002's parts of the HTML report: its claims, figure by figure, and its experiment pages.

Read from ``results/kclass_claims.csv`` (and ``results/paper_scale/kclass_claims.csv`` when the
paper-scale runs are there): each claim's paired difference with its 95% CI is the
``measured`` column the claims checker wrote.
"""

from __future__ import annotations

from labeldp_sim.report.site import Layout, Section, register_layout, register_section
from labeldp_sim.report.html import esc, table
from labeldp_sim.report.verdicts import Verdict, Verdicts

__all__ = []

def _claim_verdicts(site, exp):
    """The claims of the paper about this figure, from the claims table of the folder the run is in."""
    relative = (exp.path.parent / "kclass_claims.csv").as_posix()
    if not (site.results / relative).exists():
        return None
    frame = site.read_csv(relative)
    part = frame[frame.figure == exp.name] if frame is not None and "figure" in frame else None
    if part is None or part.empty:
        return None
    rows = [Verdict(str(r.verdict), esc(f"{r.claim} ({r.source}) {str(r.reason)[:1].upper()}{str(r.reason)[1:]}."))
            for r in part.itertuples()]
    return Verdicts(rows, esc("Each claim of papers/002 about this figure, with the paired difference of "
                              "accuracies and its 95% CI (its table folds below)."), site.sources(relative, from_site=True))


register_layout(Layout("kclass", figures=(("accuracy", "test accuracy against the swept parameter, per method"),),
                       tables=(("accuracy.md", "Accuracy (mean ± 95% CI)"),
                               ("summary.csv", "Points (accuracy per method and grid point)")),
                       verdicts=_claim_verdicts))
register_layout(Layout("digits", tables=(("accuracy.md", "Accuracy (mean ± 95% CI)"),
                                         ("summary.csv", "Points (accuracy per method and ε)")),
                       verdicts=_claim_verdicts))

COLUMNS = ["figure", "claim", "measured", "verdict", "reason", "rule", "source"]


SHOWN_CONTRASTS = 2


def _contrasts(measured) -> str:
    if not isinstance(measured, str):
        return ""
    parts = [esc(part) for part in measured.split("; ")]
    if len(parts) <= SHOWN_CONTRASTS:
        return "<br>".join(parts)
    return (f"<details><summary>{len(parts)} contrasts: {parts[0]} …</summary>" + "<br>".join(parts)
            + "</details>")


def _claims(site, relative: str, prefix: str) -> tuple:
    frame = site.read_csv(relative)
    if frame is None:
        return None, None
    frame = frame.copy()
    frame["figure"] = [site.page_link(prefix + f, f) for f in frame.figure]
    # one contrast per line, so the paired differences read as a list; a long list opens on a click
    frame["measured"] = [_contrasts(m) for m in frame.measured]
    return frame, frame.verdict.value_counts()


def _section(site):
    frame, counts = _claims(site, "kclass_claims.csv", "")
    if frame is None:
        return Section("K-class claims (papers/002)", site.missing_file("kclass_claims.csv", "make sweep writes it"),
                       anchor="kclass", summary="missing", absent=True)
    body = ("<p>Each claim the paper makes about its Figures 2–4 and the digits experiment, checked on the "
            "reduced-scale runs: the paired difference of accuracies (VA − baseline, in points) with its 95% CI, "
            "and the rule that turns it into a verdict.</p>"
            + table(frame, COLUMNS, raw=("figure", "measured"), wide=("measured",)) + site.sources("kclass_claims.csv"))
    paper = None
    if (site.results / "paper_scale" / "kclass_claims.csv").exists():
        paper, _ = _claims(site, "paper_scale/kclass_claims.csv", "paper_scale/")
    if paper is not None:
        body += ("<details><summary>At the paper's scale (results/paper_scale/)</summary>"
                 + table(paper, COLUMNS, raw=("figure", "measured"), wide=("measured",))
                 + site.sources("paper_scale/kclass_claims.csv") + "</details>")
    return Section("K-class claims (papers/002)", body, anchor="kclass",
                   summary=", ".join(f"{n} {v}" for v, n in counts.items()))


register_section(30, _section, "kclass", "K-class claims (papers/002)", "kclass")
