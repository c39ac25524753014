"""The public objects of sklearn_adaprox, as the API reference lists them.

Shared by the docstring and doctest tests and by ``doc/conf.py``, which
writes the API reference from the same list: a public module's public objects are its ``__all__`` when it
has one, else its names without a leading underscore that are functions or
classes defined in that module (not imported into it).
"""
import importlib
import inspect

PUBLIC_MODULES = ("sklearn_adaprox", "sklearn_adaprox.datasets", "sklearn_adaprox.stream",
                  "sklearn_adaprox.distributed")

ESTIMATORS = (
    "AdaGradClassifier",
    "RDAPlusClassifier",
    "PairwiseAUCClassifier",
    "ImplicitFTRLClassifier",
    "ImplicitFTRLRegressor",
)


def public_names(module_name):
    """Sorted public names of one module (functions and classes)."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    return sorted(
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module_name
    )


def public_objects():
    """``(qualified name, object)`` of every public function and class."""
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            yield f"{module_name}.{name}", getattr(module, name)


def own_public_members(cls):
    """Public methods and properties of ``cls`` defined by this package.

    Members inherited from scikit-learn (``get_params``, ``score``,
    ``set_fit_request``, ...) are left out: their docstrings are
    scikit-learn's, checked by scikit-learn's own docstring test.
    """
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if not owner.__module__.startswith("sklearn_adaprox"):
            continue
        member = vars(owner)[name]
        if isinstance(member, property) or callable(getattr(cls, name)):
            yield name
