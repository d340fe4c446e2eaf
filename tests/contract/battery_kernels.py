"""The bad-input battery's table, part kernels: the public, validated entry points of
minirl_lm/kernels/. See battery.py."""

import numpy as np
from battery_data import K_IDS, LOGITS, LOGP, MASK, POLICY, B, F, T, V, const

from minirl_lm import kernels

TABLE = [
    # kernels (the public, validated entry points)
    F(kernels.exp_array, x=("kx", lambda: np.linspace(-5.0, 5.0, 4))),
    F(kernels.exp32_array, x=("kx32", lambda: np.linspace(-5.0, 5.0, 4).astype(np.float32))),
    F(
        kernels.dense_logp,
        logits=("klogits", LOGITS),
        tokens=("kids4", K_IDS(4)),
        mask=("kmask", MASK),
        parallel=("flag", const(False)),
    ),
    F(
        kernels.dense_backward,
        logits=("klogits", LOGITS),
        tokens=("kids4", K_IDS(4)),
        mask=("kmask", MASK),
        w=("kw", LOGP),
        out=V(lambda: np.zeros((B, T, 4))),
        parallel=("flag", const(True)),
    ),
    F(
        kernels.tabular_logp,
        theta=("ktheta", POLICY_THETA := lambda: POLICY().theta.copy()),
        states=("kids6", K_IDS(6)),
        tokens=("kids3", K_IDS(3)),
        mask=("kmask", MASK),
    ),
    F(
        kernels.tabular_logp_per_token,
        theta=("ktheta", POLICY_THETA),
        states=("kids6", K_IDS(6)),
        tokens=("kids3", K_IDS(3)),
        mask=("kmask", MASK),
    ),
    F(
        kernels.tabular_backward,
        theta=("ktheta", POLICY_THETA),
        states=("kids6", K_IDS(6)),
        tokens=("kids3", K_IDS(3)),
        mask=("kmask", MASK),
        w=("kw", LOGP),
    ),
    F(
        kernels.tabular_backward_per_token,
        theta=("ktheta", POLICY_THETA),
        states=("kids6", K_IDS(6)),
        tokens=("kids3", K_IDS(3)),
        mask=("kmask", MASK),
        w=("kw", LOGP),
    ),
]
