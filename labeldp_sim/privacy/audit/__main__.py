"""``python -m labeldp_sim.privacy.audit``: refused, pointing to ``python -m labeldp_sim audit``.

The audit's mechanisms and recipes are registered by the papers, which the
application loads (``labeldp_sim.app``); the privacy package sits below the
papers and cannot load them, so run from here it would audit only a part.
"""

import sys

print("labeldp-sim: error: run the audit as `python -m labeldp_sim audit` (or `labeldp-sim audit`), "
      "which loads every paper's mechanisms first", file=sys.stderr)
sys.exit(2)
