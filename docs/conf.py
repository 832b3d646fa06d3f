"""Sphinx configuration of the labeldp-sim documentation site (``make docs``).

Sphinx + pydata-sphinx-theme + numpydoc + MyST Markdown, the stack of numpy,
scipy, scikit-learn and statsmodels.  The configuration and component
references are generated at build time from the code (``docs/_ext/labeldp_reference.py``);
the API reference from the docstrings (autodoc, autosummary, numpydoc).
Warnings are errors (``sphinx-build -W --keep-going``).
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version as _version
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# the checkout's package first (an editable install points here too), then the local extension
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

project = "labeldp-sim"
author = "labeldp-sim contributors"
copyright = "labeldp-sim contributors"
try:
    release = _version("labeldp-sim")
except PackageNotFoundError:  # building from a checkout that is not installed
    release = "0+unknown"
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "labeldp_reference",  # docs/_ext: the configuration and component references, from the code
]
# No intersphinx: the build must work without network (CI and offline machines).

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: `#heading` anchors for cross-page links (page.md#a-heading), ::: fences for directives
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# autodoc / autosummary: no stub files written into docs/ (the summary tables link to the
# autodoc entries on the same page); members in source order
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_default_options = {"show-inheritance": True}

# numpydoc: no automatic member tables (each would need its own stub pages)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"labeldp-sim {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list = []
html_show_sourcelink = False


# --- two source fixes, kept here so that the pages read right on GitHub and in the site -----------

# The pages open with "[← README](../README.md)", the right link on GitHub; the site's counterpart of
# the README is its front page (index.md), so the link goes there (README.md lies outside docs/,
# where Sphinx has no document).
_README_LINK = re.compile(r"\]\(\.\./README\.md(#[^)\s]*)?\)")

def _readme_links(app, docname, source):
    source[0] = _README_LINK.sub("](index.md)", source[0])


def setup(app):
    app.connect("source-read", _readme_links)
