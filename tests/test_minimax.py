"""Law-free mode (SPEC §5a): the admitted family, the selection, and the negative control."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from labeldp_sim.harness.cli import compose_job
from omegaconf import OmegaConf
from scipy import integrate
from scipy.stats import qmc

from labeldp_sim.papers.table1 import theory
from labeldp_sim.harness.cli import run_experiment, validate_job
from labeldp_sim.papers.table1.families import HolderBump
from labeldp_sim.papers.table1.families.geometry import linear_edge_geometry, linf_box_integral
from labeldp_sim.harness.components import components
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.kinds import JobSpec
from labeldp_sim.papers.table1.estimators import Estimator, knn_mean
from labeldp_sim.papers.table1.experiment import mechanism_key
from labeldp_sim.papers.table1.law_free.search import LawFreeSpec
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.table1.tuning import CommonDraws, geometric_grid
from labeldp_sim.papers.table1.law_free.fit import cross_fit


def _compose(overrides):
    return compose_job(list(overrides))


# --------------------------------------------------------------------------- the admitted family


@pytest.mark.parametrize("beta", [1.0, 0.6])
@pytest.mark.parametrize("d", [1, 2])
def test_linf_box_integral_matches_quadrature(d, beta):
    rng = np.random.default_rng(3)
    for _ in range(4):
        a = rng.uniform(-0.5, 0.4, d)
        b = np.minimum(a + rng.uniform(0.05, 0.6, d), 0.5)
        phi = lambda *u: max(0.0, 0.5 - max(abs(v) for v in u)) ** beta  # noqa: E731
        # split at 0 so the quadrature sees no kink inside a piece
        pieces = [[(lo, hi) for lo, hi in ((a[i], min(b[i], 0.0)), (max(a[i], 0.0), b[i])) if hi > lo]
                  for i in range(d)]
        want = 0.0
        for ranges in np.array(np.meshgrid(*[np.arange(len(p)) for p in pieces], indexing="ij")).reshape(d, -1).T:
            want += integrate.nquad(phi, [pieces[i][j] for i, j in enumerate(ranges)],
                                    opts={"epsabs": 1e-12, "epsrel": 1e-10, "limit": 200})[0]
        got = linf_box_integral(a[None, :], b[None, :], beta)[0]
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("d,G,G_est", [(1, 5, 64), (1, 64, 5), (2, 5, 16), (2, 16, 5), (2, 7, 7)])
def test_linear_edge_geometry_integrates_each_bump(d, G, G_est):
    fam = HolderBump(d=d, shape="linear_edge")
    bumps = fam.bump_cubes(G)
    cells, W = linear_edge_geometry(d, G, G_est, bumps, 1.0)
    whole = linf_box_integral(np.full((1, d), -0.5), np.full((1, d), 0.5), 1.0)[0]
    np.testing.assert_allclose(np.asarray(W.sum(axis=0)).ravel(), whole * G ** -d, rtol=1e-12)
    # each cube's share against a Monte-Carlo integral of the sampled g (5 standard errors)
    inst = fam.draw(np.random.default_rng(0), G)
    X = np.random.default_rng(1).random((400_000, d))
    g, _ = inst.g_and_class(X)
    from labeldp_sim.papers.table1.families import cube_index

    idx = cube_index(X, G_est)
    model = inst.cell_model(G_est)
    mc = np.bincount(idx, weights=g, minlength=G_est ** d)[model.cells] / len(X)
    se = np.sqrt(np.bincount(idx, weights=g ** 2, minlength=G_est ** d)[model.cells] / len(X) ** 2)
    exact = model.regret.max(axis=1) + (model.regret.max(axis=1) == 0) * 0  # W total per relevant cube
    total = np.asarray(W.sum(axis=1)).ravel() * inst.height
    assert np.all(np.abs(mc - total) <= 5 * se + 1e-12)
    assert exact.shape == total.shape


@pytest.mark.parametrize("d", [1, 2])
def test_margin_ratio_closed_form_matches_sampling(d):
    fam = HolderBump(d=d, shape="linear_edge", C_M=4.0)
    G = 8
    inst = fam.draw(np.random.default_rng(2), G)
    X = np.random.default_rng(5).random((1_000_000, d))
    g, _ = inst.g_and_class(X)
    h, m = 1.0 / G, len(inst.bumps)
    for t in inst.height * np.array([0.01, 0.1, 0.3, 0.5]):
        p_mc = np.mean((g > 0) & (g <= t))
        s = min((t / inst.height) ** (1 / fam.beta), 0.5)
        p_exact = m * h ** d * (1 - (1 - 2 * s) ** d)
        se = np.sqrt(p_exact * (1 - p_exact) / len(X))
        assert abs(p_mc - p_exact) <= 5 * se
        assert p_exact / t ** fam.gamma <= fam.margin_ratio(G) * (1 + 1e-9)
    assert fam.admitted(G)


def test_margin_admission_refuses_a_raised_bump_count():
    # C_M h^(γβ−d) = 0.5 < 1: (47) asks for half a bump; the raised single bump breaks C_γ
    fam = HolderBump(d=1, gamma=1.0, C_M=0.5, shape="linear_edge")
    assert not fam.admitted(4)
    assert fam.margin_ratio(4) == pytest.approx(2 * fam.margin_constant)
    ok = HolderBump(d=2, gamma=1.0, C_M=4.0, shape="linear_edge")
    assert all(ok.admitted(int(G)) for G in geometric_grid(1, 64, 2))


def test_law_free_refuses_gamma_beta_above_one():
    cmd = [sys.executable, "-m", "labeldp_sim", "experiment=cls_nonprivate", "mode=law_free", "paths.results_dir=/nonexistent/x",
           "distribution.gamma=1.5", "law_free.d=[2]"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "distribution.gamma" in out.stderr and "gamma*beta <= 1" in out.stderr


def test_law_free_bad_keys_are_one_line(tmp_path):
    for override, key in (("law_free.reps=7", "law_free.reps"), ("law_free.per_octave=1", "law_free.per_octave"),
                          ("mode=lawless", "mode"), ("law_free.T_range=[2,1]", "law_free.T_range")):
        out = subprocess.run([sys.executable, "-m", "labeldp_sim", "experiment=reg_label_cdp", override,
                              f"paths.results_dir={tmp_path}"], capture_output=True, text=True)
        assert out.returncode == 2, override
        assert out.stderr.startswith(f"labeldp-sim: error: {key}:") and out.stderr.count("\n") == 1


def test_law_free_knn_refuses_sweeps_too_big_per_sample(tmp_path):
    """The law-tied kNN grid reaches N = 1e9 on the marginal law; the Monte-Carlo law-free search draws every
    sample (the exact path draws none)."""
    out = subprocess.run([sys.executable, "-m", "labeldp_sim", "experiment=reg_label_ldp", "mode=law_free",
                          "law_free.sweeps=null", "law_free.d=[1]", "runner.path=sufficient",
                          f"paths.results_dir={tmp_path}"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith("labeldp-sim: error: law_free.sweeps:") and out.stderr.count("\n") == 1


def test_geometric_grid_two_per_octave():
    grid = geometric_grid(1, 2048, 2)
    assert grid[0] == 1 and grid[-1] == 2048
    # two points per octave, except where no integer lies between neighbours
    assert np.all((np.diff(grid) == 1) | (np.diff(np.log2(grid)) <= 0.5 + 0.1))


# --------------------------------------------------------------------------- estimators' law-free path


def test_every_estimator_states_its_tuning():
    fields = {f.name for f in dataclasses.fields(Point)}
    estimators = components("estimator")
    assert {cls.__name__ for cls in estimators.values()} >= {"CubeArgmax", "CubeMean", "KNNMean"}
    for cls in estimators.values():
        assert issubclass(cls, Estimator) and cls.tuning in fields


def _small_spec(tmp_path, experiment, extra):
    cfg = _compose([f"experiment={experiment}", "mode=law_free", f"paths.results_dir={tmp_path}",
                    "law_free.d=[1]", "law_free.reps=4", *extra])
    return validate_job(cfg)


def _row(spec, point, columns, G):
    draws = CommonDraws(spec.seed, point, 0, G, spec.n_test)
    instance = spec.distributions[point.d].draw(draws.instance, G)
    return spec.estimator.tuned_risks(instance, point, columns, draws)


SMALL = {
    "heavy_label_cdp": ["law_free.G_max={1:16}", "law_free.T_range=[1,4]", "law_free.sweeps.eps.values=[0.000001]"],
    "heavy_label_ldp": ["law_free.G_max={1:16}", "law_free.T_range=[1,4]", "law_free.n_test=64", "~law_free.sweeps.eps",
                        "law_free.sweeps.N.values=[2000]"],
    "cls_label_ldp": ["law_free.G_max={1:16}", "+law_free.sweeps={N:{values:[5000],eps:1.0}}"],
}


@pytest.mark.parametrize("experiment", sorted(SMALL))
def test_tuned_risks_follow_their_columns_not_their_order(tmp_path, experiment):
    """Common random numbers: a column's risk is the same whichever other columns share its row."""
    spec = _small_spec(tmp_path, experiment, SMALL[experiment])
    point = spec.points[0]
    columns = spec.oracle_columns(point) + [spec.law_column(point)]
    G = int(spec.inst_grids[point.id][1])
    risks = np.array(_row(spec, point, columns, G))
    order = np.random.default_rng(0).permutation(len(columns))
    np.testing.assert_array_equal(risks[order], _row(spec, point, [columns[i] for i in order], G))
    np.testing.assert_array_equal(risks[-1:], _row(spec, point, columns[-1:], G))


def test_knn_tuned_risks_are_the_knn_mean_of_one_sample(tmp_path):
    """The law-free kNN row is the estimator's own kNN mean on the instance stream's sample."""
    spec = _small_spec(tmp_path, "heavy_label_ldp", SMALL["heavy_label_ldp"])
    point = spec.points[0]
    columns = spec.oracle_columns(point)[::5] + [spec.law_column(point)]
    G = int(spec.inst_grids[point.id][1])
    got = _row(spec, point, columns, G)
    draws = CommonDraws(spec.seed, point, 0, G, spec.n_test)
    instance = spec.distributions[point.d].draw(draws.instance, G)
    X, y = instance.sample(point.N, draws.instance)
    queries = qmc.Sobol(d=1, scramble=True, seed=draws.instance).random_base2(int(np.log2(spec.n_test)))
    for column, risk in zip(columns, got):
        Z = column.mechanism.report(y, draws.noise(0, column.slot))
        assert risk == np.mean((knn_mean(X, Z, queries, column.tuning) - instance.eta(queries)) ** 2)


def test_law_free_points_stay_where_they_were_asked_for(tmp_path):
    """The law-free build does not snap: each point keeps its requested N and ε and rounds the law's G there;
    the law-tied build of the same grid moves ε so that h = 1/G exactly, with the same G."""
    spec = _small_spec(tmp_path, "heavy_label_cdp", SMALL["heavy_label_cdp"])
    tied = validate_job(_compose(["experiment=heavy_label_cdp", f"paths.results_dir={tmp_path}", "grid.d=[1]",
                                  "grid.sweeps.eps.values=[0.000001]", f"grid.sweeps.eps.N={spec.points[0].N}"]))
    for free, snapped in zip(spec.points, tied.points, strict=True):
        dist = spec.distributions[free.d]
        law = spec.cell.bandwidth(free.N, free.eps, dist.beta, free.d, dist.h_scale, dist.p)
        assert (free.N, free.eps) == (int(free.N_requested), free.eps_requested) and free.N == snapped.N
        assert free.G == snapped.G == max(1, round(1 / law)) and free.h == 1 / free.G
        assert snapped.eps != free.eps  # the law-tied point moved
        mech = spec.mechanism_at(free, free.T)
        assert mech.epsilon == free.eps and mech.T == free.T and spec.law_column(free).mechanism is mech


def test_law_free_is_built_from_its_own_settings_without_touching_the_config(tmp_path):
    """The searched family and the law-free dimensions are arguments of the law-tied steps, not a copy of
    the config: the composed config is left as typed, the spec is a JobSpec of its own, and the law's
    mechanism of each point comes from the one (ε, T) cache the oracle columns use."""
    cfg = _compose(["experiment=cls_label_ldp", "mode=law_free", f"paths.results_dir={tmp_path}",
                    "law_free.d=[1]", "law_free.reps=4", "law_free.C_M=8"])
    typed = OmegaConf.to_container(cfg, resolve=False)
    spec = validate_job(cfg)
    assert OmegaConf.to_container(cfg, resolve=False) == typed
    assert isinstance(spec, JobSpec) and isinstance(spec, LawFreeSpec)
    dist = spec.distributions[1]
    assert dist.shape == "linear_edge" and dist.C_M == 8
    for point in spec.points:
        law = spec.law_column(point).mechanism
        assert law is spec.built[mechanism_key(point.eps, point.T)] is spec.mechanisms[(point.id, None)]
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(["experiment=reg_label_ldp", "mode=law_free", f"paths.results_dir={tmp_path}",
                               "law_free.d=[1]", "law_free.sweeps.N.values=[1]"]))
    assert err.value.key == "law_free.sweeps.N.values"  # the kNN law's k > N, found while planning the points


# --------------------------------------------------------------------------- selection


def test_cross_fit_is_unbiased_for_the_selected_entry():
    """Noisy matrices around a known min-max: the cross-fitted M lies within 4 se of the truth."""
    rng = np.random.default_rng(11)
    inst, tune = np.meshgrid(np.arange(9), np.arange(11), indexing="ij")
    truth = 1.0 + 0.02 * (tune - 5) ** 2 + 0.05 * inst * (tune > 4) + 0.05 * (8 - inst) * (tune <= 4)
    minimax = truth.max(axis=0).min()
    errors = []
    for trial in range(200):
        R = truth[None] + rng.normal(0, 0.3, (16, *truth.shape))
        M, se = cross_fit(R, np.arange(16))
        errors.append((M - minimax) / se)
    assert abs(np.mean(errors)) < 4 / np.sqrt(200) + 0.6  # a selected entry can sit below the true max


# --------------------------------------------------------------------------- negative control


def _law_free_run(tmp_path, experiment, extra):
    overrides = [f"experiment={experiment}", "mode=law_free", f"paths.results_dir={tmp_path}",
                 "runner.backend=sequential", "runner.progress=false", *extra]
    cfg = _compose(overrides)
    spec = validate_job(cfg)
    assert isinstance(spec, LawFreeSpec)
    return run_experiment(cfg, overrides, None, spec)


def _wrong_law(cell, factor):
    """The cell with its bandwidth law's privacy exponent multiplied by ``factor``."""
    terms = cell.bandwidth_terms

    def wrong(N, eps, b, d, p=None):
        first, *rest = terms(N, eps, b, d, p)
        return (first ** factor, *rest)

    return replace(cell, bandwidth_terms=wrong)


@pytest.mark.parametrize("experiment,factor,extra", [
    # Theorem 7's law for reg_label_cdp: (εN)^(-1/(2β+d)) instead of (εN)^(-1/(β+d)) at d = 1: ×2/3
    ("reg_label_cdp", 2 / 3, ["law_free.d=[1]", "law_free.reps=8", "law_free.G_max={1:1024,2:16}",
                              "law_free.sweeps.eps.values=[0.000001,0.00001,0.0001]",
                              "law_free.sweeps.eps.N=10000000000"]),
    # cls_label_ldp, d = 2 (4G bumps: less spread than d = 1's four): the law's exponent 1/4 -> 0.36,
    # cubes too fine, and the law-tied slope heads from -1/2 to -0.72.  Slow (25 s): reg_label_cdp
    # keeps the property in the default run
    pytest.param("cls_label_ldp", 1.45, ["law_free.d=[2]", "law_free.reps=8", "law_free.G_max={1:128,2:32}",
                                         "law_free.sweeps={N:{values:[100000,300000,1000000,3000000,10000000],"
                                         "eps:0.5}}"], marks=pytest.mark.slow),
])
def test_negative_control_law_tied_follows_the_law_law_free_does_not(tmp_path, monkeypatch, experiment,
                                                                     factor, extra):
    honest = _law_free_run(tmp_path / "honest", experiment, extra)
    monkeypatch.setitem(theory.CELLS, experiment, _wrong_law(theory.CELLS[experiment], factor))
    injected = _law_free_run(tmp_path / "injected", experiment, extra)

    def slope(run, quantity):
        fits = run["fits"]
        row = fits[(fits.quantity == quantity) & fits.primary].iloc[0]
        return row.slope, row.se, row.verdict

    # the law-tied slope follows the injected law ...
    tied, tied_se, _ = slope(honest, "law_tied")
    tied_bad, tied_bad_se, _ = slope(injected, "law_tied")
    assert abs(tied_bad - tied) > 0.1 and abs(tied_bad - tied) > 4 * np.hypot(tied_se, tied_bad_se)
    # ... the law-free matrices, M and its slope and verdict do not move at all
    oracle = lambda run: run["trials"][run["trials"].tuning == "oracle"].excess_risk.to_numpy()  # noqa: E731
    np.testing.assert_array_equal(oracle(honest), oracle(injected))
    np.testing.assert_array_equal(honest["points"].M.to_numpy(), injected["points"].M.to_numpy())
    np.testing.assert_equal(slope(honest, "M"), slope(injected, "M"))


# --------------------------------------------------------------------------- issue 35: margin and the β sweep


@pytest.mark.parametrize("name, cell, beta", [("reg_label_cdp_beta025", "reg_label_cdp", 0.25),
                                              ("reg_full_cdp_beta075", "reg_full_cdp", 0.75)])
def test_the_theorem7_variants_are_their_cell_at_another_beta(tmp_path, name, cell, beta):
    spec = validate_job(_compose([f"experiment={name}", "mode=law_free", f"paths.results_dir={tmp_path}",
                                  "law_free.d=[1]"]))
    assert spec.name == name and spec.cell.name == cell and spec.distributions[1].beta == beta
    assert spec.tol == 0.02 and spec.window_points == 7  # law_free.tol and law_free.window_points


def test_law_free_verdicts_take_law_free_tol_and_refuse_fit_tol(tmp_path):
    base = ["experiment=reg_label_cdp", "mode=law_free", f"paths.results_dir={tmp_path}", "law_free.d=[1]"]
    assert validate_job(_compose(base + ["law_free.tol=0.03"])).tol == 0.03
    from labeldp_sim.harness.config import job_kind
    from labeldp_sim.harness.kinds import get_kind
    from labeldp_sim.harness.reads import check_overrides

    overrides = base + ["fit.tol=0.03"]
    cfg = _compose(overrides)
    spec = validate_job(cfg)
    with pytest.raises(ConfigError) as err:  # as the command line checks it, after validation
        check_overrides(cfg, get_kind(job_kind(cfg)).for_spec(cfg, spec), overrides, spec)
    assert err.value.key == "fit.tol" and "law_free.tol" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(base + ["law_free.window_points=3"]))
    assert err.value.key == "law_free.window_points"


def test_law_free_sweeps_per_d_replace_the_sweeps_at_their_d(tmp_path):
    """law_free.sweeps_per_d (cls_label_cdp: d = 3 at N = 10^17, ε to 1e-5): the other d keep the cell's
    sweeps; a bad value names its key under sweeps_per_d, and so does N past 2**53 on a path that counts."""
    base = [f"paths.results_dir={tmp_path}", "mode=law_free"]
    spec = validate_job(_compose(["experiment=cls_label_cdp", *base]))
    deepest = {d: (max(pt.N for pt in spec.points if pt.d == d), max(pt.eps for pt in spec.points if pt.d == d))
               for d in (1, 2, 3)}
    assert deepest == {1: (10 ** 15, 1e-7), 2: (10 ** 15, 1e-7), 3: (10 ** 17, 1e-5)}
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(["experiment=cls_label_cdp", *base, "law_free.sweeps_per_d={3: {eps: {values: [0]}}}"]))
    assert err.value.key == "law_free.sweeps_per_d.3.eps.values"
    deep = "law_free.sweeps_per_d={2: {eps: {values: [1e-10, 1e-9], N: 100000000000000000}}}"
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(["experiment=reg_label_cdp", *base, deep]))
    assert err.value.key == "law_free.sweeps_per_d.2.eps.N" and "2**53" in str(err.value)


def test_law_free_shifts_set_the_cube_classifiers_partition_per_d(tmp_path):
    """law_free.shifts = {1: 4, 2: 4, 3: 4} (cls_full_ldp), set per d; exact there; a value out of range
    names the key; a cell whose estimator has no partition to shift refuses the key.  Its ε sweep at
    N = 10^17 > 2**53 is accepted: the choice law takes N as a real exponent."""
    base = [f"paths.results_dir={tmp_path}", "mode=law_free"]
    spec = validate_job(_compose(["experiment=cls_full_ldp", *base]))
    assert [spec.estimator_at(d).shifts for d in (1, 2, 3)] == [4, 4, 4] and spec.exact
    assert max(pt.N for pt in spec.points) == 10 ** 17
    spec = validate_job(_compose(["experiment=cls_full_ldp", *base, "law_free.shifts={1: 1, 2: 2}"]))
    assert [spec.estimator_at(d).shifts for d in (1, 2, 3)] == [1, 2, 4]
    assert [validate_job(_compose(["experiment=cls_label_ldp", *base])).estimator_at(d).shifts
            for d in (1, 2, 3)] == [1, 1, 1]
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(["experiment=cls_full_ldp", *base, "law_free.shifts={3: 17}"]))
    assert err.value.key == "law_free.shifts.3" and "[1, 16]" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_job(_compose(["experiment=reg_label_cdp", *base, "law_free.shifts={3: 2}"]))
    assert err.value.key == "law_free.shifts" and "cube_argmax" in str(err.value)


@pytest.mark.parametrize("shifts", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("cap, per_octave", [(256, 3), (46, 3), (1000, 2), (1024, 4)])
def test_instance_grid_moves_counts_to_multiples_of_the_shifts(shifts, cap, per_octave):
    """CubeArgmax.instance_grid: the geometric grid with each value moved to the nearest multiple of the
    shift count that is at most the cap and within half a grid step, where there is one; else unchanged."""
    from labeldp_sim.papers.table1.estimators import CubeArgmax

    geometric = geometric_grid(1, cap, per_octave)
    moved = CubeArgmax(1.0, shifts).instance_grid(cap, per_octave)
    assert np.all(np.diff(moved) > 0) and moved[-1] <= cap and moved[0] == 1
    if shifts == 1:
        np.testing.assert_array_equal(moved, geometric)
    half_step = 2.0 ** (0.5 / per_octave)
    wanted = []
    for G in geometric:
        candidates = [m for m in range(shifts, cap + 1, shifts) if max(m / G, G / m) < half_step]
        # the nearest; a tie (G an odd multiple of shifts / 2) goes to the even quotient, as np.round
        wanted.append(min(candidates, key=lambda m: (abs(m - G), (m // shifts) % 2)) if candidates else G)
    np.testing.assert_array_equal(moved, np.unique(wanted))


def test_law_free_instance_grid_follows_the_shifts_per_d(tmp_path):
    """cls_full_cdp shifts its partition at d = 3 only: its instance counts there are the shifted
    estimator's grid (203 -> 204, 161 -> 160 at G <= 256), at d = 1, 2 the geometric grid."""
    spec = validate_job(_compose(["experiment=cls_full_cdp", f"paths.results_dir={tmp_path}", "mode=law_free"]))
    for pt in spec.points:
        cap = min(spec.G_max[pt.d], int(np.floor(pt.N ** (1.0 / pt.d) + 1e-9)))
        grid = spec.estimator_at(pt.d).instance_grid(cap, spec.per_octave)
        np.testing.assert_array_equal(spec.inst_grids[pt.id], [G for G in grid if spec.admitted[(pt.d, int(G))]])
    deep = [pt for pt in spec.points if pt.d == 3]
    assert {160, 204} <= set(spec.inst_grids[deep[-1].id]) and not {161, 203} & set(spec.inst_grids[deep[-1].id])
    shallow = [pt for pt in spec.points if pt.d == 2]
    assert 51 in set(spec.inst_grids[shallow[-1].id])
