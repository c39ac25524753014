"""Every public docstring is valid numpydoc (after scikit-learn's own test).

numpydoc's validator runs on every public class and function of the public
modules (``tests/_public_api.py``) and on the public methods and properties
this package defines; any error it reports that is not excused below fails
the test, with the full list in the message.
"""
import importlib
import inspect

import pytest
# numpydoc is in the ``test`` extra: no skip when it is missing, this test
# must run wherever the suite does.
from numpydoc.validate import validate

from _public_api import ESTIMATORS, PUBLIC_MODULES, own_public_members, public_objects

# Codes excused everywhere, as scikit-learn does:
# - GL01, GL02: where the summary starts and the closing quotes sit are
#   layout, not content (one-line docstrings of properties are fine).
# - RT02: "the first line of Returns should contain only the type"; we name
#   returned values (``self : object``, ``proba : ndarray ...``) so that the
#   text can refer to them, which numpydoc renders well.
IGNORED_EVERYWHERE = {"GL01", "GL02", "RT02"}

# Codes excused for methods, properties and non-estimator objects only:
# - ES01 (extended summary), SA01 (See Also), EX01 (Examples): a one-line
#   summary is the whole story of many methods and helpers, whose usage the
#   user guide and the estimators' own examples show.  The estimator classes
#   themselves must have all three.
IGNORED_OUTSIDE_ESTIMATORS = {"ES01", "SA01", "EX01"}


def _targets():
    estimators = {f"sklearn_adaprox.{name}" for name in ESTIMATORS}
    for qualname, obj in public_objects():
        yield qualname, qualname in estimators
        if inspect.isclass(obj):
            for member in own_public_members(obj):
                yield f"{qualname}.{member}", False


TARGETS = list(_targets())


def test_the_targets_cover_the_public_api():
    names = {name for name, _ in TARGETS}
    for estimator in ESTIMATORS:
        assert f"sklearn_adaprox.{estimator}" in names
        for method in ("fit", "partial_fit"):
            assert f"sklearn_adaprox.{estimator}.{method}" in names
    for name in ("datasets.load_a9a", "datasets.make_sparse_zipf",
                 "stream.fit_stream", "stream.SvmlightStream",
                 "stream.JsonLinesStream", "stream.CsvStream",
                 "stream.SvmlightStream.iter_pass"):
        assert f"sklearn_adaprox.{name}" in names
    # inherited from scikit-learn: its docstring, its test
    assert "sklearn_adaprox.AdaGradClassifier.get_params" not in names


@pytest.mark.parametrize("name, is_estimator", TARGETS, ids=[t[0] for t in TARGETS])
def test_docstring_is_valid_numpydoc(name, is_estimator):
    result = validate(name)
    ignored = IGNORED_EVERYWHERE | (set() if is_estimator else IGNORED_OUTSIDE_ESTIMATORS)
    errors = [f"{code}: {message}" for code, message in result["errors"]
              if code not in ignored]
    assert not errors, f"{name}:\n" + "\n".join(errors)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_module_has_a_summary(module_name):
    # numpydoc's validator does not take modules; the API page shows their
    # docstrings, so check the part it relies on: a one-line summary.
    doc = importlib.import_module(module_name).__doc__
    assert doc and doc.strip()
    summary = doc.strip().splitlines()[0]
    assert summary.endswith("."), summary
