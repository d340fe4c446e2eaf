r"""AdamW by hand: Adam's moment estimates with the weight decay decoupled from them.

For each parameter array `p` with gradient `g`, at step `n = 1, 2, ...`:

    m <- beta1 m + (1 - beta1) g,   u <- beta2 u + (1 - beta2) g^2           eq. (adam_moments)
    mhat = m / (1 - beta1^n),   uhat = u / (1 - beta2^n)                     eq. (adam_bias)
    p <- p - lr (mhat / (sqrt(uhat) + eps) + weight_decay p)                 eq. (adamw)

(Kingma and Ba 2015; Loshchilov and Hutter 2019: the decay multiplies `lr` but not the
adaptive scale. PyTorch's `AdamW` decays first, `p <- p (1 - lr wd)`, then takes the Adam step
from the decayed `p`; the two agree to first order in `lr wd`, and exactly at `wd = 0`.)
"""

import numpy as np

from minirl_lm.nn.checks import adamw_args, adamw_grads


class AdamW:
    """The optimizer's state for one dict of parameters, updated in place by `step`.

    Args:
        params: dict of float64 arrays (a model's ``params``), updated in place.
        lr: step size >= 0.
        beta1: the first moment's decay, in [0, 1].
        beta2: the second moment's decay, in [0, 1].
        eps: > 0, added to the root of the second moment.
        weight_decay: >= 0, decoupled.
    """

    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = adamw_args(
            params, lr, beta1, beta2, eps, weight_decay
        )
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.u = {k: np.zeros_like(v) for k, v in params.items()}
        self.n = 0

    def step(self, grads):
        """One AdamW step.

        Args:
            grads: dict with the keys of ``params``, each array of its parameter's shape.
        """
        grads = adamw_grads(self.params, grads)  # checked whole before the first write
        self.n += 1
        b1, b2 = self.beta1, self.beta2
        c1, c2 = 1.0 - b1**self.n, 1.0 - b2**self.n
        for k, p in self.params.items():
            g = grads[k]
            self.m[k] = b1 * self.m[k] + (1.0 - b1) * g  # eq. (adam_moments)
            self.u[k] = b2 * self.u[k] + (1.0 - b2) * g * g  # eq. (adam_moments)
            step = (self.m[k] / c1) / (np.sqrt(self.u[k] / c2) + self.eps)  # eq. (adam_bias)
            p -= self.lr * (step + self.weight_decay * p)  # eq. (adamw)
