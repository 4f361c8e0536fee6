"""Sphinx configuration of the sdcflow docs (``sphinx-build -W --keep-going -b html docs OUT``).

The build needs no network: no intersphinx, no remote theme or image.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the working tree's sdcflow, installed or not

project = "sdcflow"
author = "sdcflow contributors"
copyright = "sdcflow contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.viewcode",
    "sdcflow_docs",
]

# The Python reference, one module a line (docs/_ext/sdcflow_docs.py renders each): the public
# modules whose import path is stable. A module of the numerical core joins with one line.
sdcflow_api_modules = [
    "sdcflow.api",
    "sdcflow.transformers",
    "sdcflow.measures",
    "sdcflow.errors",
    "sdcflow.working",
    "sdcflow.flows.outcome",
    "sdcflow.methods",
    "sdcflow.methods.blocks",
    "sdcflow.methods.recoding",
    "sdcflow.gates",
    "sdcflow.gates.anonymity",
    "sdcflow.gates.loss",
    "sdcflow.core.measures",
    "sdcflow.core.measures.anonymity",
    "sdcflow.core.measures.cluster_loss",
    "sdcflow.core.measures.complete",
    "sdcflow.core.measures.disclosure_risk",
    "sdcflow.core.measures.information_loss",
    "sdcflow.core.measures.risk",
    "sdcflow.core.suppression.local",
    "sdcflow.core.suppression.relaxation",
    "sdcflow.core.risk",
    "sdcflow.core.perturbation",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}  # .rst: autosummary (numpydoc)
root_doc = "index"
# _generated/*.md are fragments the pages include; _generated/api/ holds pages of their own
exclude_patterns = ["_build", "_generated/*.md", "_generated/extra", "_ext"]

# Every cross-reference must resolve (an error under -W). Without the network there is no
# intersphinx, so names of other packages cannot resolve: they are listed here, and only they.
nitpicky = True
nitpick_ignore = [
    ("py:func", "scipy.optimize.milp"),  # exact local suppression's solver (scipy, no inventory)
]

myst_enable_extensions = ["deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_show_inherited_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

html_theme = "alabaster"
html_title = "sdcflow"
html_extra_path = ["_generated/extra"]  # release.schema.json at the site's root
html_show_sourcelink = False
