"""NumPy transcriptions of the algorithms, the references of the tests.

Eager and literal (no laziness, no cleverness), on small dense data, so that
the compiled kernels can be checked against them: ``adagrad`` (diagonal
AdaGrad, McMahan et al.'s FTRL-Proximal), ``full_matrix``, ``multinomial``,
``prox`` (the structured penalties' proximal operators, global AdaGrad),
``implicit_ftrl``, ``pairwise_auc``, ``rda`` (RDA+), and ``losses``, the
losses of ``sklearn_adaprox._loss`` that all of them use.

A package inside ``tests/``, imported as ``reference``: pytest puts
``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml), so the tests
import it in either of pytest's import modes (``prepend``, the default, and
``importlib``) and never import the checkout as ``sklearn_adaprox`` in
place of the installed package.
"""
