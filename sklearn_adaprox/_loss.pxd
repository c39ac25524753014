# Loss layer shared by every kernel of sklearn_adaprox.
#
# A loss is a function of a label (or target) y and a margin p = <w, x> + b.
# Classification losses take y in {-1, +1}; regression losses take a real y.
# Every method is ``noexcept nogil`` so kernels can call it in their inner loop;
# the ``py_*`` def-methods of the implementation are thin hooks for tests.


# max(x, 0) as glibc's fmax(x, 0.0) gives it (x where x > 0, else +0.0; a
# NaN gives 0; fmax(0.0, x) differs only in giving -0.0 for x = -0.0, the
# same number), inline: GCC calls libm for fmax (its NaN rule is not that of
# the SSE max instruction), a call per use that the per-row paths of the
# kernels paid several times a row (implicit FTRL: four on dense rows).
cdef inline double positive_part(double x) noexcept nogil:
    return x if x > 0.0 else 0.0


cdef class Loss:
    # loss value l(y, p)
    cdef double loss(self, double y, double p) noexcept nogil
    # derivative dl/dp (a subgradient where l is not differentiable)
    cdef double dloss(self, double y, double p) noexcept nogil
    # second derivative d2l/dp2 where it exists (0 on the flat and linear pieces)
    cdef double ddloss(self, double y, double p) noexcept nogil
    # dloss and ddloss at one point into d[0] and dd[0] (the Newton solve
    # of solve_prox reads both at each of its points)
    cdef void derivatives(self, double y, double p, double* d,
                          double* dd) noexcept nogil
    # Implicit (proximal) step along the feature direction: the scalar c with
    #     x* = w + c * s = argmin_x  step * l(y, <x, s>) + 0.5 * ||x - w||^2,
    # given p = <w, s> (plus any fixed offset such as the intercept) and
    # sq_norm = ||s||^2.  Equivalently c = -step * l'(y, p + c * sq_norm).
    # step <= 0 gives 0 and sq_norm <= 0 the explicit -step * l'(y, p) for
    # every loss; the other cases are solve_prox's.
    cdef double prox_step(self, double y, double p, double sq_norm,
                          double step) noexcept nogil
    # prox_step for step > 0 and sq_norm > 0: closed form where one exists,
    # a safeguarded 1-D Newton solve otherwise.
    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil


cdef class MultinomialLoss:
    # Loss of the class scores p[0..n_classes) for the class index y; writes
    # its gradient d loss / d p into grad and returns the loss value.
    cdef double loss_gradient(self, const double* p, Py_ssize_t n_classes,
                              Py_ssize_t y, double* grad) noexcept nogil
