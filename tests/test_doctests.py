"""The ``Examples`` sections of the public docstrings run and print what
they show.

Every public class and function (``tests/_public_api.py``) and the public
methods this package defines are searched for doctests; each estimator must
have at least one, and every example must pass.
"""
import doctest
import inspect

import pytest

from _public_api import ESTIMATORS, own_public_members, public_objects

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _docstring_tests():
    finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)
    for qualname, obj in public_objects():
        objects = [(qualname, obj)]
        if inspect.isclass(obj):
            objects += [(f"{qualname}.{m}", getattr(obj, m)) for m in own_public_members(obj)]
        for name, member in objects:
            if isinstance(member, property):
                member = member.fget
            module = inspect.getmodule(member) or inspect.getmodule(obj)
            for test in finder.find(member, name, module=module, globs={}):
                if test.examples:
                    yield name, test


TESTS = list(_docstring_tests())


def test_every_estimator_has_an_example():
    with_examples = {name for name, _ in TESTS}
    for estimator in ESTIMATORS:
        assert f"sklearn_adaprox.{estimator}" in with_examples


@pytest.mark.parametrize("test", [t for _, t in TESTS], ids=[n for n, _ in TESTS])
def test_docstring_examples(test):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    runner.run(test, out=report.append)
    assert runner.tries == len(test.examples)
    assert runner.failures == 0, "".join(report)
