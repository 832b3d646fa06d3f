"""The report: the figures every paper draws (:mod:`.figures`), ``results/index.html`` and its
pages (:mod:`.site`, :mod:`.sections`, :mod:`.html`, the stylesheet and script in ``assets/``),
and the headless-browser check of a built site (:mod:`.site_check`).  It reads the harness's
outputs and knows no paper: papers add their sections through :func:`.site.register_section`."""
