"""Where a run writes (docs/cli.md, "Where a run writes"): a run whose overrides change a number
gets a folder of its own, named from them as Hydra names ``hydra.job.override_dirname``, and
leaves its experiment's canonical folder and the shared tables byte for byte as they were;
``paths.results_dir`` keeps the canonical layout in the folder it names."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra._internal.config_loader_impl import get_overrides_dirname
from hydra.core.override_parser.overrides_parser import OverridesParser

import labeldp_sim
from labeldp_sim.harness import cli
from labeldp_sim.harness.config import job_kind
from labeldp_sim.harness.kinds import get_kind
from labeldp_sim.harness.run_folders import NAME_MAX, folder_name, names_no_folder

EXPERIMENT = "cls_label_ldp"
# the smallest Table I run (a few seconds): every one of these but runner.backend changes a number
TINY = ["grid.d=[1]", "grid.reps=2", "grid.sweeps.N.values=[1000,2000,4000]", "grid.sweeps.eps.values=[0.5,1.0]",
        "grid.sweeps.eps.N=1000", "runner.backend=sequential", "runner.progress=false"]
TINY_NAME = ",".join(sorted(line for line in TINY if not line.startswith("runner.")))


def _files(folder: Path) -> dict:
    """The bytes of every file of ``folder`` (not of its subfolders; lock files aside)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.name.endswith(".lock")}


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def _jobs(*argv):
    return cli.validate_argv([*argv])[1]


def _out(job) -> Path:
    return get_kind(job_kind(job.cfg)).for_spec(job.cfg, job.spec).output_dir(job.spec, job.subdir)


def test_a_run_that_changes_a_number_writes_a_folder_of_its_own(tmp_path, monkeypatch, capsys, quick_plots):
    monkeypatch.chdir(tmp_path)
    results = Path("results")
    canonical = results / EXPERIMENT
    cli.main([f"experiment={EXPERIMENT}", *TINY, "paths.results_dir=results"])  # the canonical layout
    assert (canonical / "fit.csv").is_file() and (results / "table1.md").is_file()
    before = _files(canonical)
    shared = _files(results)
    shared.pop("run.log"), shared.pop("trials.sqlite")
    capsys.readouterr()

    cli.main([f"experiment={EXPERIMENT}", "seed=7", *TINY, "runner.n_jobs=1"])
    name = f"{TINY_NAME},seed=7"
    own = canonical / name
    assert {"fit.csv", "summary.csv", "trials.csv", "config.yaml", "provenance.json"} <= set(_files(own))
    assert _files(canonical) == before  # the canonical files, byte for byte
    after = _files(results)
    assert {k: after[k] for k in shared} == shared  # the shared tables too
    assert not (own / "table1.md").exists()
    out = capsys.readouterr().out
    assert (f"{EXPERIMENT}: non-default settings ({' '.join(sorted([*TINY[:5], 'seed=7']))}): writing {own}/; "
            f"{canonical}/ is left as it is (paths.results_dir=DIR gives the run a results folder of its own)") in out
    assert f"{EXPERIMENT}: wrote {own} (trials in {results / 'trials.sqlite'}; log in {results / 'run.log'})" in out
    assert out.index("non-default settings") < out.index("trials:")  # said before computing
    assert not list(results.glob("*/*/trials.sqlite"))  # one store, shared

    # the canonical run again leaves the folder of its own as it is
    mine = _tree(own)
    cli.main([f"experiment={EXPERIMENT}", *TINY, "paths.results_dir=results"])
    assert _tree(own) == mine


def test_run_settings_keep_the_canonical_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in ([f"experiment={EXPERIMENT}"],
                 [f"experiment={EXPERIMENT}", "runner.n_jobs=1", "runner.backend=sequential", "runner.chunk=7",
                  "runner.progress=false", "runner.reuse=false", "runner.dask.startup_timeout=5", "runner=default"],
                 [f"experiment={EXPERIMENT}", "mode=law_free", "runner.n_jobs=1"]):
        job, = _jobs(*argv)
        assert job.subdir is None and job.own == [], argv
        assert _out(job).parts[-1] == EXPERIMENT and _out(job).parts[0] == "results"
    # a multirun over experiments and run settings: each job in its canonical folder
    jobs = _jobs("-m", "experiment=cls_label_ldp,cls_label_cdp", "runner.n_jobs=1,2")
    assert [job.subdir for job in jobs] == [None] * 4
    # the fit's settings change the verdicts written in fit.csv: a folder of its own
    job, = _jobs(f"experiment={EXPERIMENT}", "fit.tol=0.1", "fit.min_points=4", "runner.n_jobs=1")
    assert job.subdir == "fit.min_points=4,fit.tol=0.1"
    assert _out(job) == Path("results") / EXPERIMENT / "fit.min_points=4,fit.tol=0.1"
    # law-free: under results/minimax/
    job, = _jobs(f"experiment={EXPERIMENT}", "mode=law_free", "seed=3")
    assert _out(job) == Path("results") / "minimax" / EXPERIMENT / "seed=3"


def test_a_multirun_names_each_job_from_all_its_number_changing_overrides():
    jobs = _jobs("-m", f"experiment={EXPERIMENT}", "seed=1,2", "grid.reps=3", "runner.n_jobs=1")
    assert [job.subdir for job in jobs] == ["grid.reps=3,seed=1", "grid.reps=3,seed=2"]


@pytest.mark.parametrize("where", ["results_dir", "paths"])
def test_a_results_dir_keeps_the_canonical_layout(tmp_path, where):
    given = (f"paths.results_dir={tmp_path}" if where == "results_dir"
             else f"paths={{results_dir: {tmp_path}}}")
    job, = _jobs(f"experiment={EXPERIMENT}", "seed=7", *TINY, given)
    assert job.subdir is None and job.own == []
    assert _out(job) == tmp_path / EXPERIMENT
    # a multirun there: subfolders named from the swept overrides only, as before
    jobs = _jobs("-m", f"experiment={EXPERIMENT}", "seed=1,2", "grid.reps=3", given)
    assert [job.subdir for job in jobs] == ["seed=1", "seed=2"]


def test_the_folder_name_is_sorted_and_hydras():
    lines = ["seed=7", "+grid.reps_per_d.3=10", "distribution.beta=0.5", "~grid.sweeps.eps", "grid.d=[1,2]"]
    parsed = OverridesParser.create().parse_overrides(lines)
    hydra = get_overrides_dirname(parsed, exclude_keys=[], item_sep=",", kv_sep="=")
    assert folder_name(lines) == hydra == "+grid.reps_per_d.3=10,distribution.beta=0.5,grid.d=[1,2],seed=7,~grid.sweeps.eps"
    assert folder_name(list(reversed(lines))) == folder_name(lines)
    assert folder_name(["estimator.kernel=a/b"]) == "estimator.kernel=a_b"  # one path component
    assert folder_name([]) is None
    # the order typed does not matter, and the excluded keys name nothing
    one, = _jobs(f"experiment={EXPERIMENT}", "seed=7", "distribution.C_M=2", "runner.n_jobs=1")
    two, = _jobs("runner.n_jobs=2", "distribution.C_M=2", f"experiment={EXPERIMENT}", "seed=7")
    assert one.subdir == two.subdir == "distribution.C_M=2,seed=7"
    assert all(names_no_folder(key) for key in ("experiment", "mode", "kind", "paths.results_dir", "runner",
                                                "runner.n_jobs", "runner.dask.slurm.jobs", "hydra.verbose"))
    assert not any(names_no_folder(key) for key in ("seed", "fit.tol", "fit.min_points", "runner.path",
                                                    "mechanism", "distribution.beta", "grid.reps", "pathsx"))


def test_a_long_name_is_bounded_and_unique():
    values = ",".join(str(1000 + i) for i in range(200))
    long = folder_name([f"grid.sweeps.N.values=[{values}]", "seed=7"])
    other = folder_name([f"grid.sweeps.N.values=[{values},9999]", "seed=7"])
    assert len(long.encode()) <= NAME_MAX and len(other.encode()) <= NAME_MAX
    assert long.startswith("grid.sweeps.N.values=[1000,1001,") and long != other
    assert long == folder_name([f"grid.sweeps.N.values=[{values}]", "seed=7"])  # the same run, the same folder
    wide = folder_name(["distribution.name=" + "é" * 300])  # cut on a whole character
    assert len(wide.encode()) <= NAME_MAX and wide.startswith("distribution.name=éé")
    job, = _jobs(f"experiment={EXPERIMENT}", f"grid.sweeps.N.values=[{values}]")
    assert len(job.subdir.encode()) <= NAME_MAX


def test_the_api_writes_the_same_folders(tmp_path, monkeypatch, quick_plots):
    monkeypatch.chdir(tmp_path)
    own = labeldp_sim.run(EXPERIMENT, [*TINY, "seed=7"])
    assert own.directory == Path("results") / EXPERIMENT / f"{TINY_NAME},seed=7"
    assert (own.directory / "fit.csv").is_file() and not (Path("results") / EXPERIMENT / "fit.csv").exists()
    given = labeldp_sim.run(EXPERIMENT, [*TINY, "seed=7"], results_dir=tmp_path / "mine")
    assert given.directory == tmp_path / "mine" / EXPERIMENT and (given.directory / "fit.csv").is_file()
