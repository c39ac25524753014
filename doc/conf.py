"""Sphinx configuration of the sklearn_adaprox documentation site.

Build (from the repository root, with the package installed and the
``doc`` extra: ``pip install -e ".[doc]"``)::

    python -m sphinx -W --keep-going -n doc doc/_build/html

The build runs every example of ``examples/`` (sphinx-gallery), the demo
(``python -m sklearn_adaprox``) and renders the benchmark result files
(``sphinxext/adaprox_docs.py``).  It needs no network access: the
intersphinx inventories are in ``_intersphinx/``.
"""
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "sphinxext"))

import sklearn_adaprox  # noqa: E402

project = "sklearn_adaprox"
author = "the sklearn_adaprox developers"
copyright = "the sklearn_adaprox developers, BSD-3-Clause"
release = sklearn_adaprox.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # MathJax from the package, copied into the site: formulas render
    # without a network (the build and CI machines are offline)
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "adaprox_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_intersphinx",
    "benchmarks/results",
    "sphinxext",
    "_generated/*.md",  # included into pages, not pages of their own
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.codeobj.json",
    "auto_examples/*.md5",
]

# ----------------------------------------------------------------------
# MyST: the guide pages are Markdown, with $...$ math and heading anchors
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# ----------------------------------------------------------------------
# API reference: autosummary pages, numpydoc docstrings
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_typehints = "none"
toc_object_entries_show_parents = "hide"  # "fit()", not "AdaGradClassifier.fit()"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"  # only the words below become links
numpydoc_xref_aliases = {
    # scikit-learn's glossary, as scikit-learn's own reference links them
    "array-like": ":term:`sklearn:array-like`",
    "sparse matrix": ":term:`sklearn:sparse matrix`",
    "estimator": ":term:`sklearn:estimator`",
    "transformer": ":term:`sklearn:transformer`",
    "ndarray": "numpy.ndarray",
    "dtype": "numpy.dtype",
    "float64": "numpy.float64",
    "float32": "numpy.float32",
    "RandomState": "numpy.random.RandomState",
    "path-like": "os.PathLike",
}
numpydoc_validation_checks = set()  # tests/test_docstrings.py validates

# ----------------------------------------------------------------------
# intersphinx, offline: vendored inventories, links to the online sites
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", str(HERE / "_intersphinx" / "python-objects.inv")),
    "numpy": ("https://numpy.org/doc/stable/", str(HERE / "_intersphinx" / "numpy-objects.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy/", str(HERE / "_intersphinx" / "scipy-objects.inv")),
    "sklearn": ("https://scikit-learn.org/stable/", str(HERE / "_intersphinx" / "sklearn-objects.inv")),
}
intersphinx_timeout = 1

# ----------------------------------------------------------------------
# nitpicky (-n): every reference to the package's own objects must
# resolve; a type named in prose that has no page anywhere is let through
nitpick_ignore_regex = [
    (r"py:.*", r"(?!sklearn_adaprox).*"),
]

# ----------------------------------------------------------------------
# gallery: every example runs at each build; an error fails the build
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "reset_argv": "adaprox_docs.gallery_argv",
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("sklearn_adaprox",),
    "reference_url": {"sklearn_adaprox": None},
    "backreferences_dir": "api/generated/backreferences",
    "min_reported_time": 0,
    "download_all_examples": False,
    "show_memory": False,
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "capture_repr": ("_repr_html_",),
    "image_scrapers": ("matplotlib",),
}
warnings.filterwarnings("ignore", category=UserWarning,
                        message="Matplotlib is currently using agg")

# ----------------------------------------------------------------------
# HTML: the theme of scikit-learn's own site
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_adaprox {release}"
html_static_path = ["_static"]
html_css_files = ["adaprox.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 6,
    # pages made of wide tables get the whole width
    "secondary_sidebar_items": {
        "**": ["page-toc"],
        "choosing": [],
        "parameter_mapping": [],
    },
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# no left sidebar where it would be empty or squeeze wide tables
html_sidebars = {"index": [], "benchmarks": [], "parameter_mapping": []}
html_show_sourcelink = False
html_copy_source = False
