"""The report's shared sections of the index: the privacy audit, the benchmarks, provenance.

The papers' sections live in their own ``site`` modules; these read the files the shared
commands write (``make audit``: ``audit.csv``, ``audit.md``; ``make bench``: ``bench.md``)
and every experiment's ``provenance.json``.
"""

from __future__ import annotations

import re

import pandas as pd

from labeldp_sim.report.site import Section, Site, register_section
from labeldp_sim.report.html import badge, esc, markdown_html, table

__all__ = []


def _provenance_section(site: Site) -> Section:
    rows = []
    for relative, exp in site.experiments.items():
        trials = (exp.provenance.get("trials") or {}) if exp.provenance else {}
        rows.append({"experiment": relative, "kind": exp.kind + (f" ({exp.mode})" if exp.mode else ""),
                     "package": exp.package or "", "status": exp.status,
                     "written": (exp.provenance.get("written") or "")[:16].replace("T", " "),
                     "commit": (exp.provenance.get("git_commit") or "")[:12],
                     "fingerprint": exp.recorded or "", "current fingerprint": exp.current or "",
                     "trials wanted": trials.get("wanted"), "computed": trials.get("computed"),
                     "reused": trials.get("reused")})
    if not rows:
        return Section("Provenance", f"<p>No experiment directory (with a config.yaml) in "
                       f"<code>{esc(site.results.as_posix())}/</code> yet: "
                       "run <code>make sweep</code>.</p>", anchor="provenance")
    frame = pd.DataFrame(rows)
    counts = frame.status.value_counts()
    totals = {c: int(pd.to_numeric(frame[c], errors="coerce").fillna(0).sum())
              for c in ("trials wanted", "computed", "reused")}
    fingerprints = {}
    for exp in site.experiments.values():
        if exp.package:
            fingerprints[exp.package] = exp.current
    # the current code is named by its fingerprints (each experiment's commit is in its row): the
    # working tree's commit would change the page at every commit and tell nothing the rows don't
    lead = ("<p>Current code fingerprints: "
            + ", ".join(f"<code>{esc(p)}</code> {esc(f)}" for p, f in sorted(fingerprints.items()))
            + f". {len(frame)} experiments: " + ", ".join(f"{n} {esc(s)}" for s, n in counts.items())
            + f". Trials: {totals['trials wanted']:,} wanted, {totals['computed']:,} computed, "
              f"{totals['reused']:,} reused from the store (as each experiment's last run recorded).</p>"
            + "<p>An experiment is <b>stale</b> when its <code>provenance.json</code> records a code fingerprint "
              "other than the current one of its package: its numbers come from older code.</p>")
    body = lead + (f"<details><summary>Every experiment ({len(frame)}): status, fingerprints, trials</summary>"
                   + table(frame, verdicts=("status",), links={
                       "experiment": lambda row: site.page_href(row["experiment"])}) + "</details>")
    return Section("Provenance", body + '<p class="source">Read from every <code>*/provenance.json</code> and '
                   f"<code>*/config.yaml</code> under <code>{esc(site.results.as_posix())}/</code>.</p>", anchor="provenance",
                   summary=", ".join(f"{n} {s}" for s, n in counts.items()))


def _audit_section(site: Site) -> Section:
    frame = site.read_csv("audit.csv")
    if frame is None:
        return Section("Privacy audit", site.missing_file("audit.csv", "make audit writes it"), anchor="audit",
                       summary="missing", absent=True)
    kind = frame["kind"].astype(str)
    groups = {"mechanisms": kind == "mechanism", "ε caps": kind == "ε cap",
              "planted mutants": kind.str.startswith("mutant"),
              "careless inputs": kind == "careless input", "stated limitations": kind == "stated limitation"}
    lines = []
    for label, mask in groups.items():
        part = frame[mask]
        if len(part):
            agree = int((part.verdict == part.expected).sum())
            lines.append(f"<li>{len(part)} {label}: {agree} as expected "
                         f"({esc(', '.join(f'{n} {v}' for v, n in part.verdict.value_counts().items()))})</li>")
    ok = bool((frame.verdict == frame.expected).all())
    summary = "every verdict as expected" if ok else "some verdicts differ from what is expected"
    head = f'<p>{badge("private" if ok else "inconsistent", "v-good" if ok else "v-bad")} {esc(summary)}.</p>'
    mechanisms = frame[groups["mechanisms"] | groups["ε caps"] | groups["planted mutants"]]
    cols = ["mechanism", "kind", "privacy", "claimed_eps", "exact_loss", "eps_lower", "caught_by", "verdict",
            "expected"]
    body = (head + "<ul>" + "".join(lines) + "</ul>"
            + f"<details><summary>Mechanisms, ε caps and planted mutants ({len(mechanisms)})</summary>"
            + table(mechanisms, cols) + "</details>"
            + "<details><summary>Careless inputs and stated limitations</summary>"
            + table(frame[groups["careless inputs"] | groups["stated limitations"]], ["mechanism", "kind", "message",
                                                                                        "verdict", "expected"])
            + "</details>" + site.sources("audit.csv", "audit.md"))
    return Section("Privacy audit", body, anchor="audit",
                   summary=f"{int(groups['mechanisms'].sum())} mechanisms, {int(groups['planted mutants'].sum())} "
                           f"mutants: {summary}")


def _bench_section(site: Site) -> Section:
    text = site.read_text("bench.md")
    if text is None:
        return Section("Benchmarks", site.missing_file("bench.md", "make bench writes it"), anchor="bench",
                       summary="missing", absent=True)
    lines = text.splitlines()
    meta = [line[2:] for line in lines if line.startswith("- ") and ":" in line][:4]
    body = "\n".join(line for line in lines if line[2:] not in meta)
    body = re.sub(r"^# .*$", "", body, count=1, flags=re.M)
    body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)  # under the section's h2
    tables = text.count("\n|---")
    html_body = ("<p>" + esc("; ".join(meta)) + ". Ratios are measured side by side in one run; compare them, "
                 f"not the seconds across machines.</p><details><summary>Every benchmark table ({tables})</summary>"
                 + markdown_html(body) + "</details>" + site.sources("bench.md"))
    return Section("Benchmarks", html_body, anchor="bench", summary=meta[0] if meta else "")


def _other_runs_section(site: Site) -> Section | None:
    """Runs in their own folders (non-default settings, multirun jobs): each with its settings and verdicts,
    since the tables of the papers' sections hold only the folder's own cells."""
    others = [(relative, exp) for relative, exp in site.experiments.items() if exp.own_folder]
    if not others:
        return None
    items, counts = [], {}
    for relative, exp in others:
        verdicts = site.verdicts(exp)
        for row in verdicts.rows if verdicts else []:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        described = site.describe(exp)
        items.append(f"<li>{site.page_link(relative)}" + (f" <span class=\"note\">{esc(described)}</span>" if described
                                                          else "")
                     + (verdicts.sentences_html() if verdicts and verdicts.rows else "") + "</li>")
    body = ("<p>Runs whose settings differ from an experiment's own (each in a folder named from its overrides, "
            "inside that experiment's) and jobs of multiruns. Their numbers are not in the tables above, which "
            "hold each cell as its experiment defines it.</p><ul>" + "".join(items) + "</ul>")
    return Section("Other runs in this folder", body, anchor="other-runs",
                   summary=f"{len(others)} runs: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


register_section(70, _other_runs_section, title="Other runs in this folder", anchor="other-runs")
register_section(80, _audit_section, title="Privacy audit", anchor="audit")
register_section(90, _bench_section, title="Benchmarks", anchor="bench")
register_section(100, _provenance_section, title="Provenance", anchor="provenance")
