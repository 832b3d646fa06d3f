"""Benchmark section: the Dask backend (a LocalCluster) against loky, two workers each.

Both run the same sweep through the runner's own code path (``execute``: tasks,
results stored by the driver as they arrive), from a fresh trial store each
time, with ``runner.n_jobs=2``:

* **start-up**, counted apart: for Dask, the time until a LocalCluster's two
  one-thread worker processes have joined its scheduler (``dask_client``),
  and the time to close them; for loky, the time its reusable executor takes
  to spawn two workers and run a first task on each;
* **steady throughput**: trials per second of the sweep once the workers are
  up and have imported the package (one warm-up sweep each), the median of
  three sweeps.  Dask's sweeps join the already started LocalCluster by its
  address (``runner.dask.scheduler``), which is how a run reaches a running
  cluster, so they pay the connection and the scattering of shared arguments
  but not the cluster's start-up.

Each sweep is run at the default chunk (250 trials per task) and at a tenth of
it, which multiplies the tasks, and so each backend's cost per task, by ten.
Whether every run gave the same numbers is reported too.  Timings only:
nothing here is asserted.  ``python benchmarks/bench_backends.py`` prints the
section.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

from labeldp_sim.harness.cli import compose_job
from joblib import Parallel, delayed

from labeldp_sim.harness.cluster import dask_client
from labeldp_sim.harness.config import DaskSettings, RunnerSettings
from labeldp_sim.papers.table1.experiment import build_experiment
from labeldp_sim.papers.table1.sweep import SweepPlan, run_sweep

N_JOBS = 2
REPEATS = 3
CHUNKS = (250, 25)
# cls_label_ldp at d = 1: 11 grid points (N and ε axes) of a label-LDP cell
SWEEP = ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=1000", "runner.progress=false",
         f"runner.n_jobs={N_JOBS}"]
WARM_UP = ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=4", "runner.progress=false",
           f"runner.n_jobs={N_JOBS}"]


def _experiment(overrides: list, results_dir: Path):
    cfg = compose_job([*overrides, f"paths.results_dir={results_dir}"])
    return build_experiment(cfg)


def _shape(chunk: int, scratch: Path) -> tuple[int, int]:
    """Grid points and tasks of the sweep at ``chunk``."""
    plan = SweepPlan(_experiment([*SWEEP, f"runner.chunk={chunk}"], scratch / "shape"))
    return len(plan.exp.points), len(plan.tasks(plan.wanted()))


def _sweep_seconds(overrides: list, results_dir: Path):
    """Seconds of one sweep from an empty store, and its trials' numbers."""
    exp = _experiment(overrides, results_dir)
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the runner's reuse line
        trials = run_sweep(exp)
    seconds = time.perf_counter() - start
    return seconds, trials[["seed_key", "excess_risk", "regret_fraction"]].to_numpy().tolist()


def _steady(backends: dict, scratch: Path) -> dict:
    """name -> chunk -> (median seconds of the sweep, trials, numbers of each sweep).

    One warm-up sweep per backend first; then the backends take turns, sweep by
    sweep, so that a change in the machine's load falls on both alike.
    """
    for name, overrides in backends.items():
        _sweep_seconds([*WARM_UP, *overrides], scratch / f"{name}-warm-up")
    runs: dict = {name: {chunk: [] for chunk in CHUNKS} for name in backends}
    for chunk in CHUNKS:
        for i in range(REPEATS):
            for name, overrides in backends.items():
                runs[name][chunk].append(_sweep_seconds([*SWEEP, *overrides, f"runner.chunk={chunk}"],
                                                        scratch / f"{name}-{chunk}-{i}"))
    return {name: {chunk: (statistics.median(s for s, _ in done), len(done[0][1]), [n for _, n in done])
                   for chunk, done in by_chunk.items()}
            for name, by_chunk in runs.items()}


def _loky_start_up() -> float:
    """Seconds for loky to spawn its workers and run a first task on each, from none running."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    start = time.perf_counter()
    Parallel(n_jobs=N_JOBS, backend="loky")(delayed(os.getpid)() for _ in range(N_JOBS))
    return time.perf_counter() - start


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as scratch:
        scratch = Path(scratch)
        loky_start = _loky_start_up()
        settings = RunnerSettings(n_jobs=N_JOBS, backend="dask", chunk=CHUNKS[0], progress=False,
                                  reuse=True, dask=DaskSettings())
        start = time.perf_counter()
        with dask_client(settings) as client:
            dask_start = time.perf_counter() - start
            joined = ["runner.backend=dask", f"runner.dask.scheduler={client.scheduler.address}"]
            results = _steady({"loky": ["runner.backend=loky"], "dask": joined}, scratch)
            closing = time.perf_counter()
        dask_close = time.perf_counter() - closing
        shapes = {chunk: _shape(chunk, scratch) for chunk in CHUNKS}
    loky, dask = results["loky"], results["dask"]
    numbers = [n for result in (loky, dask) for chunk in CHUNKS for n in result[chunk][2]]
    same = all(n == numbers[0] for n in numbers[1:])
    lines = ["## Runner backends: Dask LocalCluster vs loky",
             "",
             f"Trials per second of one `cls_label_ldp` sweep at d = 1 ({loky[CHUNKS[0]][1]:,} trials, "
             f"{shapes[CHUNKS[0]][0]} grid points) through the runner, {N_JOBS} workers each, the driver "
             f"storing every result as it arrives; median of {REPEATS} sweeps after a warm-up, the two "
             "backends taking turns, with the workers' start-up counted apart (Dask's sweeps join the "
             "LocalCluster already started, by its address).",
             "",
             "| backend | start-up (s) | chunk | tasks | sweep (s) | trials/s | Dask / loky |",
             "|---|---|---|---|---|---|---|"]
    for chunk in CHUNKS:
        tasks = shapes[chunk][1]
        for name, result, start_up in (("loky", loky, loky_start), ("dask", dask, dask_start)):
            seconds, trials, _ = result[chunk]
            ratio = (loky[chunk][0] / seconds) if name == "dask" else 1.0
            lines.append(f"| {name} | {start_up:.2f} | {chunk} | {tasks} | {seconds:.2f} | "
                         f"{trials / seconds:,.0f} | {ratio:.2f} |")
    few, many = CHUNKS
    extra_tasks = shapes[many][1] - shapes[few][1]
    per_task = {name: 1000 * (result[many][0] - result[few][0]) / extra_tasks
                for name, result in (("loky", loky), ("dask", dask))}
    lines += ["",
              f"Dask / loky is the ratio of the throughputs (above 1: Dask is faster). The cost of one "
              f"more task (chunk {many} against {few}, the store's transaction per task included): "
              f"{per_task['loky']:.1f} ms with loky, {per_task['dask']:.1f} ms with Dask. Closing the "
              f"LocalCluster took {dask_close:.2f} s. Every run gave the same numbers: "
              f"{'yes' if same else 'NO'}."]
    return lines


if __name__ == "__main__":
    import bench_args

    bench_args.parse(__doc__, "benchmarks/bench_backends.py")
    print("\n".join(run()))
