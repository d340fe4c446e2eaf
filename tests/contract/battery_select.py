"""The bad-input battery's table, part select: best-of-N and rejection sampling
(minirl_lm/select/). See battery.py."""

import numpy as np
from battery_data import ADV, LOGP, MASK, PROBS, F, const

from minirl_lm.select import bestofn, rejection

REWARD = lambda: np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]])  # noqa: E731 (N, Y), ties in row 1
TABLE_ARGS = dict(pi=("prob", PROBS), reward=("float", REWARD))
WEIGHTS = ("prob", lambda: np.array([0.5, 0.5]))
UPDATE = dict(
    **TABLE_ARGS,
    K=("int1", const(2)),
    rule=("option", const("best")),
    norm=("option", const("group")),
    threshold=("real", const(0.5)),
)

TABLE = [
    # bestofn.py
    F(bestofn.best_of_n, **TABLE_ARGS, N=("int1", const(3))),
    F(bestofn.best_of_n_reward, **TABLE_ARGS, N=("int1", const(3)), weights=WEIGHTS),
    F(bestofn.win_rate, **TABLE_ARGS, N=("int1", const(3)), weights=WEIGHTS),
    F(bestofn.best_of_n_kl, **TABLE_ARGS, N=("int1", const(3)), weights=WEIGHTS),
    F(bestofn.kl_bound, N=("int1", const(3))),
    F(bestofn.kl_ceiling, **TABLE_ARGS, weights=WEIGHTS),
    F(bestofn.matched_optimum, **TABLE_ARGS, kl=("nonneg", const(0.3)), weights=WEIGHTS),
    # rejection.py
    F(
        rejection.accepted,
        reward=("float", ADV),
        K=("int1", const(2)),
        rule=("option", const("verified")),
        threshold=("real", const(0.5)),
    ),
    F(
        rejection.rejection_loss,
        logp=("float", LOGP),
        mask=("mask", MASK),
        accept=("mask1", lambda: np.array([1.0, 0.0])),
        K=("int1", const(2)),
        norm=("option", const("accepted")),
    ),
    F(rejection.expected_update, **UPDATE),
    F(rejection.closed_form_update, **UPDATE),
]
