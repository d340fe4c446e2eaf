"""The bad-input battery's table, part scale: scale (minirl_lm/scale/). See battery.py."""

import numpy as np
from battery_data import IDS, LOSS_FN, W_UNEMBED, F, H, const

from minirl_lm.scale import bigvocab

TABLE = [
    # bigvocab.py
    F(
        bigvocab.chunked_logp,
        h=("float", H),
        W=("float", W_UNEMBED),
        tokens=("ids4", IDS(4, (4,))),
        mask=("mask1", lambda: np.array([1.0, 1.0, 0.0, 1.0])),
        chunk=("int1", const(2)),
    ),
    F(
        bigvocab.chunked_loss_grad,
        h=("float", H),
        W=("float", W_UNEMBED),
        tokens=("ids4", IDS(4, (4,))),
        loss_fn=("loss_fn", const(LOSS_FN)),
        mask=("mask1", lambda: np.array([1.0, 1.0, 0.0, 1.0])),
        chunk=("int1", const(2)),
    ),
]
