"""``python -m labeldp_sim.privacy.audit``: the same as ``labeldp-sim audit``."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
