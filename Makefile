# labeldp-sim: `make sweep` and `make test` are all a fresh clone needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

# The default suite (experiments/default.txt): the five classification cells of Table I.
SUITE ?= experiments/default.txt
EXPERIMENTS ?= $(shell cat $(SUITE))
ARGS ?=

# The law-free suite (experiments/minimax.txt): the fifteen Table I cells, SPEC §5a.
# `make minimax CELLS="reg_label_cdp cls_nonprivate"` runs a subset.
MINIMAX_SUITE ?= experiments/minimax.txt
CELLS ?= $(shell cat $(MINIMAX_SUITE))
comma := ,
empty :=
space := $(empty) $(empty)
MINIMAX_CELLS ?= $(subst $(space),$(comma),$(strip $(CELLS)))

.PHONY: install sweep minimax report report-check test test-slow bench audit docs clean clean-results

# (Re)create the virtual environment when it is missing or pyproject.toml changed.
$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

sweep: $(STAMP)
	@for e in $(EXPERIMENTS); do \
	  echo "== $$e"; \
	  $(BIN)/python -m labeldp_sim experiment=$$e $(ARGS) || exit $$?; \
	done
	@$(BIN)/python -m labeldp_sim report

minimax: $(STAMP)
	$(BIN)/python -m labeldp_sim -m experiment=$(MINIMAX_CELLS) mode=law_free $(ARGS)
	@$(BIN)/python -m labeldp_sim report

# results/index.html and one page per experiment, from the files in results/ (seconds; no trial recomputed)
report: $(STAMP)
	$(BIN)/python -m labeldp_sim report

# every page of results/ in headless Chromium (links, images, console, widths, heights, verdicts on
# the first screen); refreshes the docs' screenshots: the index, a law-free and a law-tied page
report-check: report
	$(BIN)/python -m labeldp_sim.report.site_check results/index.html \
		--screenshot docs/report-index.png --screenshot-height 1400 \
		--page-screenshot site/exp-minimax--reg_label_cdp.html=docs/report-law-free.png \
		--page-screenshot site/exp-reg_label_cdp.html=docs/report-law-tied.png

# on every core (pytest-xdist; worksteal: an idle worker takes queued tests from a busy one, so the
# long tests do not finish last on one worker): no test shares a file, a port or a store with another
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist worksteal

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n auto -m slow

audit: $(STAMP)
	$(BIN)/python -m labeldp_sim audit

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

# the documentation site: docs/_build/html/index.html (Sphinx, pydata-sphinx-theme, numpydoc, MyST; the
# `docs` extra of pyproject.toml). Warnings are errors; the configuration and component references
# are generated from the code at each build (docs/_ext/labeldp_reference.py).
DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +

clean-results:
	rm -rf results/*/ results/table1.md results/table1.csv results/exponents_*.png results/exponents_*.svg results/index.html results/trials.sqlite* results/memo.sqlite*
