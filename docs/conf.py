"""Sphinx configuration for the sb3-hir documentation (layout after Stable-Baselines3's docs)."""

from __future__ import annotations

import os
import sys

# autodoc imports the package from this checkout, not from wherever it happens to be installed.
sys.path.insert(0, os.path.abspath(".."))

import sb3_hir

project = "sb3-hir"
author = "sb3-hir developers"
copyright = "sb3-hir developers"
release = sb3_hir.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

# Markdown pages: ``{include}``, ``{toctree}`` and the other directives as fenced blocks; `(#anchor)` links to
# headings within a page.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# README.md links to these pages by their repository paths (docs/guide/...md), which work on a code host; every
# include of README.md here carries `:relative-docs: docs/`, which rewrites those links for the including page.

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
# Type hints name torch, gymnasium and imitation types that are not documented here: not an error.
nitpicky = False

html_theme = "furo"
html_title = f"sb3-hir {release}"
html_static_path: list[str] = []
pygments_style = "sphinx"
