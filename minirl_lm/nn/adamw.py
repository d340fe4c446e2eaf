r"""AdamW by hand: Adam's moment estimates with the weight decay decoupled from them.

For each parameter array `p` with gradient `g`, at step `n = 1, 2, ...`:

    m <- beta1 m + (1 - beta1) g,   u <- beta2 u + (1 - beta2) g^2           eq. (adam_moments)
    mhat = m / (1 - beta1^n),   uhat = u / (1 - beta2^n)                     eq. (adam_bias)
    p <- p - lr (mhat / (sqrt(uhat) + eps) + weight_decay p)                 eq. (adamw)

(Kingma and Ba 2015; Loshchilov and Hutter 2019: the decay multiplies `lr` but not the
adaptive scale. PyTorch's `AdamW` decays first, `p <- p (1 - lr wd)`, then takes the Adam step
from the decayed `p`; the two agree to first order in `lr wd`, and exactly at `wd = 0`.)

A step computes every new moment and parameter first and writes them only when all are finite:
a step that raises (a bad gradient, a parameter made read-only since, a square `g^2` or an update
beyond float64) changes neither the parameters nor the optimizer's state.
"""

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, POSITIVE, array, boundary, finite, number
from minirl_lm.nn.layer import Arrays

__all__ = ["AdamW"]

UNIT = number(0.0, 1.0)  # a moment's decay in [0, 1]
OPTIONS = dict(lr=NONNEGATIVE, beta1=UNIT, beta2=UNIT, eps=POSITIVE, weight_decay=NONNEGATIVE)


def _parameters(params, name, dims):
    """A non-empty dict of float64 arrays, finite and writable: updated in place, so not copied."""
    if not isinstance(params, dict) or not params:
        got = "an empty dict" if isinstance(params, dict) else type(params).__name__
        raise TypeError(f"{name}: expected a non-empty dict of float64 arrays, got {got}")
    for k, v in params.items():
        if (bad := _unfit(v)) is not None:
            kind = TypeError if bad.startswith("a ") else ValueError
            raise kind(f"{name}: expected finite, writable float64 arrays (updated in place), got {bad} at {k!r}")
    return params


def _unfit(v):
    """What makes `v` no parameter array, or None."""
    if not (isinstance(v, np.ndarray) and v.dtype == np.float64):
        return f"a {v.dtype} array" if isinstance(v, np.ndarray) else f"a {type(v).__name__}"
    if not v.flags.writeable:
        return "read-only values"
    if not np.isfinite(v).all():
        return "NaN or inf"


def _gradients(grads, name, dims):
    """A dict of finite real arrays of any shape. A finite float64 ndarray is taken as it is (the
    step only reads it: no copy on the training loop's path); anything else, a subclass included
    (an `np.matrix` would turn `g * g` into a matrix product), is read by `array`."""
    if not isinstance(grads, dict):
        raise TypeError(f"{name}: expected a dict of arrays with the keys of params, got {type(grads).__name__}")
    return {
        k: g
        if type(g) is np.ndarray and g.dtype == np.float64 and np.isfinite(g).all()
        else array(_any_shape(g), empty=True)(g, f"{name}: {k!r}", {})
        for k, g in grads.items()
    }


def _any_shape(g):
    """Shape letters for whatever number of axes `g` has (the array kind says what a ragged or
    non-numeric value is)."""
    try:
        return " ".join(f"A{i}" for i in range(np.ndim(g)))
    except (ValueError, TypeError):
        return "A0"


def _fit(self, grads):
    """`grads` has the keys and shapes of the parameters, which are still writable and finite."""
    if set(grads) != set(self.params):
        return f"grads: expected the keys {sorted(self.params)}, got {sorted(grads)}"
    for k, p in self.params.items():
        if grads[k].shape != p.shape:
            return f"grads: expected shape {p.shape} at {k!r}, got {grads[k].shape}"
        if not p.flags.writeable:
            return f"params: expected finite, writable float64 arrays, got read-only values at {k!r}"


class AdamW:
    """The optimizer's state for one dict of parameters, updated in place by `step`.

    Args:
        params: dict of writable, finite float64 arrays (a model's ``params``), updated in place.
        lr: step size >= 0.
        beta1: the first moment's decay, in [0, 1].
        beta2: the second moment's decay, in [0, 1].
        eps: > 0, added to the root of the second moment.
        weight_decay: >= 0, decoupled.
    """

    @boundary(params=_parameters, **OPTIONS, returns=None)
    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.u = {k: np.zeros_like(v) for k, v in params.items()}
        self.n = 0

    @boundary(grads=_gradients, where=[_fit], returns=None)  # checked before it commits
    def step(self, grads):
        """One AdamW step.

        Args:
            grads: dict with the keys of ``params``, each array of its parameter's shape.

        Raises:
            ValueError: a bad gradient (named), or a moment or parameter beyond float64 (named
                after the method, with the range of the gradients and parameters); nothing is
                written then.
        """
        b1, b2, n = self.beta1, self.beta2, self.n + 1
        c1, c2 = 1.0 - b1**n, 1.0 - b2**n
        m, u, delta = {}, {}, {}
        for k, p in self.params.items():
            g = grads[k]
            m[k] = b1 * self.m[k] + (1.0 - b1) * g  # eq. (adam_moments)
            u[k] = b2 * self.u[k] + (1.0 - b2) * g * g  # eq. (adam_moments)
            step = (m[k] / c1) / (np.sqrt(u[k] / c2) + self.eps)  # eq. (adam_bias)
            delta[k] = self.lr * (step + self.weight_decay * p)  # eq. (adamw): p <- p - delta
        ranges = {"grads": Arrays(grads), "params": Arrays(self.params)}  # read only for a message
        finite(
            tuple(u.values()) + tuple(delta.values()), "AdamW.step", [f"u[{k!r}]" for k in u] + list(delta), ranges
        )
        for k, p in self.params.items():
            p -= delta[k]  # in place: the caller's arrays
        self.m, self.u, self.n = m, u, n
