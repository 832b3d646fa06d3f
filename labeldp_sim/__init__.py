"""labeldp-sim: empirical minimax rates of learning under label differential privacy.

The objects work without Hydra::

    import numpy as np
    from labeldp_sim import HolderBump, RAPPOR, CubeArgmax

    instance = HolderBump(d=2).draw(np.random.default_rng(0), G=8)
    X, y = instance.sample(10_000, np.random.default_rng(1))
"""

from .distributions import CellModel, HolderBump, SmoothMargin
from .errors import ConfigError
from .estimators import CubeArgmax
from .mechanisms import JointRAPPOR, ExponentialMechanism, Mechanism, NoPrivacy, RAPPOR
from .theory import CELLS, get_cell

__version__ = "0.1.0"

__all__ = ["CellModel", "HolderBump", "SmoothMargin", "ConfigError", "CubeArgmax", "JointRAPPOR",
           "ExponentialMechanism", "Mechanism", "NoPrivacy", "RAPPOR", "CELLS", "get_cell",
           "__version__"]
