"""labeldp-sim: empirical minimax rates of learning under label and user-level differential privacy.

One harness, shared wings, one package per paper (docs/layout.md), low layers first::

    harness/    plug-in contract, experiment kinds, points, seeds, runner, trial store, cluster,
                config validation, provenance, interrupts, CLI (knows no paper)
    stats/      log-log slope fits, sliding windows and their verdicts (imports nothing of the package)
    privacy/    mechanism protocols (abstract, no pass-through), laws of counts and choices,
                RAPPOR, the privacy audit
    report/     figures and the HTML report (results/index.html), its headless check
    papers/     table1/     papers/000: Table I rate cells, law-tied sweeps and the law-free search
                kclass/     papers/002: K-class label-LDP mechanisms and experiments
                userlevel/  papers/003: user-level LDP mean estimation, SO, classification, regression
    app.py      the papers (found on disk) and plug-ins plugged into the harness

Importing the package loads no paper: :func:`labeldp_sim.app.load_papers` (which
``labeldp-sim`` calls) registers every paper's experiment kinds.  The objects
work without Hydra::

    import numpy as np
    from labeldp_sim.papers.table1.families import HolderBump

    instance = HolderBump(d=2).draw(np.random.default_rng(0), G=8)
    X, y = instance.sample(10_000, np.random.default_rng(1))
"""

# First: in a labeldp-sim process, a Ctrl-C or SIGTERM while numpy, pandas and Hydra load gives
# one line and exit 130 (143), not a traceback (labeldp_sim.harness.interrupts; standard library only)
from labeldp_sim.harness import interrupts as _interrupts

_interrupts.install_for_cli()

from labeldp_sim.harness import __version__  # noqa: E402
from labeldp_sim.harness.errors import ConfigError  # noqa: E402
# the Python API (docs/python.md); it imports Hydra and the papers only when called
from labeldp_sim.api import Result, compose, run  # noqa: E402

__all__ = ["ConfigError", "Result", "compose", "run", "__version__"]
