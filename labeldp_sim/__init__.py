"""labeldp-sim: empirical minimax rates of learning under label and user-level differential privacy.

One harness, one package per paper::

    core/       points, seeds, trial store, runner, fits, plots, validation, CLI (knows no paper)
    privacy/    mechanism protocols (abstract, no pass-through), RAPPOR, the audit
    table1/     papers/000: Table I rate cells, law-tied sweeps and the law-free search
    kclass/     papers/002: K-class label-LDP mechanisms and experiments
    userlevel/  papers/003: user-level LDP mean estimation, SO, classification, regression

Importing the package registers every paper's experiment kinds (:mod:`labeldp_sim.app`).
The objects work without Hydra::

    import numpy as np
    from labeldp_sim.table1.families import HolderBump

    instance = HolderBump(d=2).draw(np.random.default_rng(0), G=8)
    X, y = instance.sample(10_000, np.random.default_rng(1))
"""

# First: in a labeldp-sim process, a Ctrl-C or SIGTERM while numpy, pandas and Hydra load gives
# one line and exit 130 (143), not a traceback (labeldp_sim.core.interrupts; standard library only)
from .core import interrupts as _interrupts

_interrupts.install_for_cli()

from .core.errors import ConfigError  # noqa: E402

__version__ = "0.2.0"

__all__ = ["ConfigError", "__version__"]

from .app import load_papers  # noqa: E402  (after __version__: the papers' modules may read it)

load_papers()
