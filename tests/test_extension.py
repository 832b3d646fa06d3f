"""The extension guide, checked: a mechanism and a paper plugged in with no file of the repository edited.

docs/extending.md, "Adding a mechanism" and "Adding a paper", lists the files one writes; here they
are written in a temporary directory laid out like the repository — a toy label-LDP
mechanism for Table I (its class, its audit recipe, ``conf/table1/mechanism/toy.yaml``)
and a toy paper (a package registering an experiment kind, its ``paper.py``, a
component, and its config folder ``conf/toy_paper/experiment/toy_mean.yaml``) — and
reached through ``LABELDP_SIM_CONF_PATH`` (the two config folders) and ``LABELDP_SIM_PLUGINS`` (the two
modules, whose classes register by their names).  Both run from
the command line, are validated from their declared parameters, reach the trial
store; the mechanism is in the privacy audit's registry and the plug-ins' code is
in the fingerprint.  Everything runs in subprocesses, so this session's registries
(which the audit and component tests iterate) never see the toys.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from labeldp_sim.harness.config import CONF_DIR

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    # ------------------------------------------------------------------ a mechanism: class + YAML
    "toy_mech.py": '''
        """A toy label-LDP mechanism, plugged in from outside the repository."""

        import numpy as np

        from labeldp_sim.harness.components import Interval
        from labeldp_sim.privacy.protocols import (LABEL_LOCAL, LOG_ODDS_LIMIT, CubeSumMechanism, audit_recipe,
                                                   epsilon_parameter)


        class ShareRR(CubeSumMechanism):
            """Binary randomized response spending a share s of ε: keep y w.p. e^(sε)/(e^(sε)+1).

            Privacy: a report's probability under two labels differs by a factor e^(sε) <= e^ε.
            """

            name = "toy"
            privacy = LABEL_LOCAL
            max_epsilon = LOG_ODDS_LIMIT
            parameters = {"epsilon": epsilon_parameter(LOG_ODDS_LIMIT, "the keep probability rounds to 1"),
                          "share": Interval(float, 0, 1, closed="right", note="the share of ε spent")}
            audit_cases = audit_recipe(__name__, "toy_audit")

            def __init__(self, epsilon, share=1.0):
                super().__init__(epsilon)
                self.check_parameters(share=share)
                e = np.exp(share * self.epsilon)
                self.keep = e / (e + 1)

            def transition_matrix(self):
                return np.array([[self.keep, 1 - self.keep], [1 - self.keep, self.keep]])

            def _report(self, y, rng, *, K, cells=None, n_cells=None):
                return np.where(rng.random(len(y)) >= self.keep, 1 - y, y)

            def aggregate(self, reports, cells, n_cells, K):
                return np.bincount(cells * K + reports, minlength=n_cells * K).reshape(n_cells, K)

            def _sample_aggregate(self, data, N, rng, K=None):
                counts = data.label_counts(K)
                kept = rng.binomial(counts, self.keep)
                return kept + (counts - kept)[:, ::-1]


        def toy_audit(eps):
            """The audit's rows for ShareRR: one real case and one careless input."""
            from labeldp_sim.privacy.audit import LABEL_NB, AuditCases, Careless, Case, Recipe, builds, matrix_loss

            def exact(mech):
                return matrix_loss(mech.transition_matrix()), "log-ratio of the 2x2 transition matrix"

            def draw(mech, side, n, rng):
                return np.asarray(mech.report(np.full(n, side), rng, K=2), dtype=np.int64)

            return AuditCases([Case("toy", ShareRR(eps), Recipe(LABEL_NB, "y = 0 vs y' = 1", exact, draw))],
                              careless=[Careless("toy: share 2", ShareRR, builds(eps, share=2.0), "share",
                                                 "a share of the budget above 1")])
        ''',
    "conf/table1/mechanism/toy.yaml": '''
        # a toy label-LDP mechanism: binary RR at half the budget
        name: toy
        share: 0.5
        ''',
    # ------------------------------------------------------------------ a paper: package + conf
    "toy_paper/__init__.py": '''
        """A toy paper: one experiment kind and one component."""

        from labeldp_sim.harness.kinds import register

        from . import components  # noqa: F401  (importing registers its components by name)
        from .kind import ToyKind

        register(ToyKind())
        ''',
    "toy_paper/paper.py": '''
        PRESENTATION_MODULES = ("__init__.py", "paper.py", "kind.py")
        ''',
    "toy_paper/components.py": '''
        from labeldp_sim.harness.components import Component, Interval


        class ShrunkMean(Component):
            """The sample mean shrunk towards 0."""

            group, name = "toy.estimator", "shrunk_mean"
            parameters = {"shrink": Interval(float, 0, 1, note="the factor applied to the mean")}

            def __init__(self, shrink=1.0):
                self.shrink = shrink

            def estimate(self, x):
                return self.shrink * float(x.mean())
        ''',
    "toy_paper/trials.py": '''
        import pandas as pd
        from joblib import delayed

        from labeldp_sim.harness.points import keyed_rng
        from labeldp_sim.harness.runner import Plan
        from labeldp_sim.harness.store import Column, Schema

        from .components import ShrunkMean

        TOY_TRIALS = Schema("toy_trials", (Column("experiment", "TEXT"), Column("config_key", "TEXT"),
                                           Column("seed_key", "TEXT"), Column("n", "INTEGER"),
                                           Column("error", "REAL")),
                            key=("experiment", "config_key", "seed_key"))


        def toy_records(seed, n, shrink, keys):
            rows = []
            for key in keys:
                x = keyed_rng(seed, "toy", key).normal(1.0, 1.0, n)
                rows.append({"seed_key": key, "n": n, "error": (ShrunkMean(shrink).estimate(x) - 1.0) ** 2})
            return pd.DataFrame(rows)


        class ToyPlan(Plan):
            schema = TOY_TRIALS

            def wanted(self):
                return [(f"r{r}",) for r in range(self.spec.reps)]

            def tasks(self, todo):
                s = self.spec
                return [delayed(toy_records)(s.seed, s.n, s.shrink, [key for (key,) in todo])]
        ''',
    "toy_paper/kind.py": '''
        from dataclasses import dataclass

        from labeldp_sim.harness.components import build
        from labeldp_sim.harness.config import config_node, validate_common
        from labeldp_sim.harness.errors import check, is_int
        from labeldp_sim.harness.kinds import ExperimentKind, JobSpec, code_packages


        @dataclass(kw_only=True)
        class ToySpec(JobSpec):
            n: int
            reps: int
            shrink: float


        class ToyKind(ExperimentKind):
            name = node = "toy"
            results_subdir = "toy"

            def validate(self, cfg):
                basics = validate_common(cfg, "toy")
                node = config_node(cfg, "toy", ("n", "reps", "estimator"), required=("n", "reps", "estimator"))
                for key in ("n", "reps"):
                    check(is_int(node[key]) and 1 <= node[key] <= 10_000, f"toy.{key}", node[key],
                          "integers in [1, 10000]")
                estimator = build("toy.estimator", node["estimator"])
                return ToySpec.of(basics, cfg, code_packages(__package__, [type(estimator)]), n=node["n"], reps=node["reps"],
                                  shrink=estimator.shrink)

            def plan(self, spec):
                from .trials import ToyPlan

                return ToyPlan(spec)

            def analyse(self, spec, trials):
                return {"mse": float(trials.error.mean())}

            def write(self, spec, trials, analysis, out):
                trials.to_csv(out / "trials.csv", index=False)

            def announce(self, spec, analysis, out):
                print(f"{spec.name}: toy mean squared error {analysis['mse']:.4f}")
        ''',
    "conf/toy_paper/experiment/toy_mean.yaml": '''
        # @package _global_
        kind: toy
        experiment_name: toy_mean
        toy:
          n: 64
          reps: 3
          estimator:
            name: shrunk_mean
            shrink: 0.5
        ''',
}

# a Table I cell, small: 3 N-points and 2 ε-points at d = 1, 2 replicates each
TINY_CELL = ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=2", "grid.sweeps.N.values=[1000,2000,4000]",
             "grid.sweeps.eps.values=[0.5,1.0]", "grid.sweeps.eps.N=1000", "runner.backend=sequential"]

AUDIT_CHECK = '''
import json
from labeldp_sim.app import load_audits
from labeldp_sim.privacy.audit.registry import audited_classes, collect
from labeldp_sim.privacy.audit.runner import run_careless, run_case

load_audits()
every = collect()  # the whole registry: the configs' classes loaded, every class with its recipe
toy = [cls for cls in audited_classes() if cls.__name__ == "ShareRR"]
rows = collect(classes=toy)
print(json.dumps({"modules": [cls.__module__ for cls in toy], "all": [c.name for c in every.cases],
                  "verdicts": [run_case(c, draws=20_000).verdict for c in rows.cases],
                  "careless": [run_careless(c).verdict for c in rows.careless]}))
'''

VALIDATION_CHECK = '''
import json, sys
from labeldp_sim.app import load_papers
from labeldp_sim.harness.cli import validate_argv
from labeldp_sim.harness.errors import ConfigError

load_papers()
refused = []
for argv in json.loads(sys.argv[1]):
    try:
        validate_argv(argv)
        refused.append(None)
    except ConfigError as err:
        refused.append([err.key, str(err)])
print(json.dumps(refused))
'''

FINGERPRINT_CHECK = '''
import json
from pathlib import Path
from labeldp_sim.harness.provenance import code_fingerprint

fp = code_fingerprint.__wrapped__  # uncached: the files change in between
seen = {"paper": fp(("toy_paper",)), "mechanism": fp(("table1", "toy_mech")), "table1": fp(("table1",))}
for name in ("toy_paper/kind.py", "toy_paper/trials.py", "toy_mech.py"):
    with open(name, "a") as f:
        f.write("# edited\\n")
    seen[name] = {"paper": fp(("toy_paper",)), "mechanism": fp(("table1", "toy_mech"))}
print(json.dumps(seen))
'''


def write_plugins(root: Path) -> Path:
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    return write_plugins(tmp_path_factory.mktemp("plugins"))


def run(root: Path, *args, script: str | None = None, **env) -> subprocess.CompletedProcess:
    """``python -m labeldp_sim *args`` (or ``python -c script *args``) in ``root``, the plug-ins on its paths."""
    variables = {**os.environ,
                 "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
                 "LABELDP_SIM_CONF_PATH": os.pathsep.join(str(root / "conf" / name) for name in ("table1", "toy_paper")),
                 "LABELDP_SIM_PLUGINS": "toy_paper,toy_mech", **env}
    command = [sys.executable, *(("-c", script) if script else ("-m", "labeldp_sim")), *args]
    return subprocess.run(command, cwd=root, env=variables, capture_output=True, text=True, timeout=300)


def one_line_error(proc: subprocess.CompletedProcess, key: str) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"labeldp-sim: error: {key}: got "), proc.stderr
    return lines[0]


def store_rows(results: Path, query: str) -> list:
    with sqlite3.connect(results / "trials.sqlite") as con:
        return con.execute(query).fetchall()


def test_the_toys_are_not_in_the_repository():
    """What the other tests add lives in tmp_path only: no repository file names it."""
    assert not list(CONF_DIR.rglob("toy*.yaml"))
    assert not (CONF_DIR / "toy_paper").exists()
    assert not (ROOT / "labeldp_sim" / "toy_paper").exists()


def test_toy_mechanism_runs_a_table1_cell_and_reaches_the_store(plugins, tmp_path):
    proc = run(plugins, *TINY_CELL, "mechanism=toy", f"paths.results_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "cls_label_ldp: 10 trials: 0 reused" in proc.stdout and "10 to compute" in proc.stdout
    trials = pd.read_csv(tmp_path / "cls_label_ldp" / "trials.csv")
    assert len(trials) == 10 and set(trials.mechanism) == {"toy"}
    assert store_rows(tmp_path, "SELECT mechanism, COUNT(*) FROM rate_trials_v1 GROUP BY mechanism") == [("toy", 10)]


def test_toy_mechanism_bad_parameter_is_one_line(plugins, tmp_path):
    """Refused from its declared ``share: Interval(float, 0, 1, closed="right")``, before any computation."""
    proc = run(plugins, *TINY_CELL, "mechanism=toy", "mechanism.share=2", f"paths.results_dir={tmp_path / 'out'}")
    assert "allowed: finite numbers in (0, 1] (the share of ε spent)" in one_line_error(proc, "mechanism.share")
    assert not (tmp_path / "out").exists()


def test_toy_mechanism_is_in_the_audit_registry(plugins):
    proc = run(plugins, script=AUDIT_CHECK)
    assert proc.returncode == 0, proc.stderr
    audit = json.loads(proc.stdout.strip().splitlines()[-1])
    assert audit["modules"] == ["toy_mech"] and "toy" in audit["all"] and "rappor" in audit["all"]
    assert audit["verdicts"] == ["private"] and audit["careless"] == ["refused"]


def test_toy_paper_runs_and_reaches_the_store(plugins, tmp_path):
    proc = run(plugins, "experiment=toy_mean", f"paths.results_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "toy_mean: 3 trials: 0 reused" in proc.stdout and "toy mean squared error" in proc.stdout
    assert len(pd.read_csv(tmp_path / "toy" / "toy_mean" / "trials.csv")) == 3
    provenance = json.loads((tmp_path / "toy" / "toy_mean" / "provenance.json").read_text())
    assert store_rows(tmp_path, "SELECT COUNT(*) FROM toy_trials_v1") == [(3,)]
    assert store_rows(tmp_path, "SELECT experiment, code_fingerprint FROM runs") == [
        ("toy_mean", provenance["code_fingerprint"])]


def test_toy_paper_bad_value_is_one_line(plugins, tmp_path):
    proc = run(plugins, "experiment=toy_mean", "toy.estimator.shrink=3", f"paths.results_dir={tmp_path / 'out'}")
    one_line_error(proc, "toy.estimator.shrink")  # the toy component's declared Interval
    assert not (tmp_path / "out").exists()


def test_every_bad_value_names_its_key(plugins, tmp_path):
    """The command lines validated in one process (the one-line exit-2 path is shown above)."""
    cell, paper = [*TINY_CELL, f"paths.results_dir={tmp_path}"], ["experiment=toy_mean", f"paths.results_dir={tmp_path}"]
    cases = [([*cell, "mechanism=toy"], None),
             ([*cell, "mechanism=toy", "mechanism.share=0"], "mechanism.share"),
             ([*cell, "mechanism=toy", "mechanism.colour=red"], "mechanism.colour"),  # not declared
             ([*cell, "mechanism=toys"], "mechanism"),                                # no config directory has it
             ([*paper], None),
             ([*paper, "toy.reps=0"], "toy.reps"),                                    # the kind's own validator
             ([*paper, "+toy.colour=red"], "toy.colour"),
             ([*paper, "grid.reps=3"], "grid.reps")]                                  # another kind's key
    proc = run(plugins, json.dumps([argv for argv, _ in cases]), script=VALIDATION_CHECK)
    assert proc.returncode == 0, proc.stderr
    refused = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [r and r[0] for r in refused] == [key for _, key in cases], refused
    assert "toy" in refused[3][1]  # the options listed include the plug-in's


@pytest.mark.parametrize("variable, value, says", [
    ("LABELDP_SIM_PLUGINS", "toy_paper,no_such_paper", "no module no_such_paper"),
    ("LABELDP_SIM_PLUGINS", "toy-paper", "not a module name"),
    ("LABELDP_SIM_CONF_PATH", "no/such/dir", "not a directory"),
    ("LABELDP_SIM_CONF_PATH", "conf/table1/mechanism", "holds toy.yaml at its top"),
])
def test_a_bad_plugin_variable_is_one_line(plugins, tmp_path, variable, value, says):
    proc = run(plugins, "experiment=toy_mean", f"paths.results_dir={tmp_path / 'out'}", **{variable: value})
    assert says in one_line_error(proc, variable)
    assert not (tmp_path / "out").exists()


def test_a_conf_dir_may_not_hide_an_option_of_conf(plugins, tmp_path):
    """Hydra reads conf/table1/ first: an extra directory's rr.yaml would silently lose, so it is refused."""
    shutil.copytree(plugins / "conf" / "table1", tmp_path / "table1")
    (tmp_path / "table1" / "mechanism" / "rr.yaml").write_text("name: toy\nshare: 0.5\n")
    proc = run(plugins, "experiment=toy_mean", LABELDP_SIM_CONF_PATH=str(tmp_path / "table1"))
    assert "mechanism/rr.yaml is already in" in one_line_error(proc, "LABELDP_SIM_CONF_PATH")


def test_plugin_code_is_fingerprinted(tmp_path):
    """A plug-in is fingerprinted like a paper: its modules count, those its paper.py declares do not."""
    proc = run(write_plugins(tmp_path), script=FINGERPRINT_CHECK)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["mechanism"] != seen["table1"]                      # a plug-in mechanism's module is hashed
    assert seen["toy_paper/kind.py"]["paper"] == seen["paper"]      # declared presentation-only
    assert seen["toy_paper/trials.py"]["paper"] != seen["paper"]    # computes trials
    assert seen["toy_paper/trials.py"]["mechanism"] == seen["mechanism"]
    assert seen["toy_mech.py"]["mechanism"] != seen["mechanism"]
