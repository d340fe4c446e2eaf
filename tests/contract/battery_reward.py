"""The bad-input battery's table, part reward: reward models (minirl_lm/reward/). See battery.py."""

import numpy as np
from battery_data import ADV, EPISODES, IDS, MASK, MT, PROBS, F, R, const
from battery_kinds import BAD, bad_ids

from minirl_lm.reward import bt, prm

BAD.setdefault("ids44", bad_ids(44))  # state ids of MT(): S = 44


def PHI():
    return np.arange(12.0).reshape(2, 3, 2) / 10.0  # (N, Y, F)


def PAIR_W():
    return np.array([0.5, 0.5])  # (P,)


def LABELS():
    return np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # (B, T) in [0, 1]


def P_STEP():
    return np.full((44, 5), 0.5)  # (S, V) of MT()


_linear = dict(
    phi=("float", PHI),
    prompt=("ids2", IDS(2, (2,))),
    chosen=("ids3", IDS(3, (2,))),
    rejected=("ids3", lambda: np.array([2, 0])),
    margin=("float", lambda: np.array([0.5, 0.0])),
    center=("nonneg", const(0.1)),
    weights=("float", PAIR_W),
    l2=("nonneg", const(0.5)),
)
_outcome = dict(
    phi=("float", PHI),
    prompt=("ids2", IDS(2, (2,))),
    response=("ids3", IDS(3, (2,))),
    label=("float", lambda: np.array([1.0, 0.0])),
    kind=("option", const("squared")),
    weights=("float", PAIR_W),
    l2=("nonneg", const(0.5)),
)

TABLE = [
    # bt.py
    F(
        bt.bt_margin_loss,
        r_chosen=("float", ADV),
        r_rejected=("float", lambda: ADV()[::-1]),
        margin=("float", lambda: np.array([0.5, 0.0])),
        center=("nonneg", const(0.1)),
        weights=("float", PAIR_W),
    ),
    F(
        bt.outcome_loss,
        r=("float", ADV),
        label=("float", lambda: np.array([1.0, 0.0])),
        kind=("option", const("squared")),
        weights=("float", PAIR_W),
    ),
    F(bt.one_hot_features, N=("int1", const(2)), Y=("int1", const(3))),
    F(bt.linear_bt_loss, w=("float", lambda: np.array([0.3, -0.2])), **_linear),
    F(bt.linear_outcome_loss, w=("float", lambda: np.array([0.3, -0.2])), **_outcome),
    F(bt.fit_bt, **_linear, iters=("int1", const(5))),
    F(bt.fit_outcome, **_outcome, iters=("int1", const(5))),
    F(
        bt.bt_pair_law,
        reward=("float", lambda: np.array([[1.0, 0.0, 0.5], [0.5, 2.0, 0.0]])),
        mu=("prob", PROBS),
        mu0=("prob", lambda: np.array([0.5, 0.5])),
    ),
    F(bt.error_off_constant, r_hat=("float", lambda: R() + 1.0), reward=("float", R)),
    # prm.py
    F(prm.prm_data, env=("mtenv", MT), ep=("episodes", EPISODES), outcome=("float", lambda: np.array([1.0, 0.0]))),
    F(
        prm.prm_loss,
        r_phi=("float", lambda: np.zeros((3, 3))),
        states=("ids3", IDS(3)),
        tokens=("ids3", IDS(3)),
        steps=("mask", MASK),
        labels=("float", LABELS),
        weights=("float", PAIR_W),
    ),
    F(
        prm.fit_prm,
        env=("mtenv", MT),
        states=("ids44", IDS(3)),
        tokens=("ids5", IDS(5)),
        steps=("mask", MASK),
        labels=("float", LABELS),
        weights=("float", PAIR_W),
        l2=("nonneg", const(0.5)),
    ),
    F(prm.process_rewards, env=("mtenv", MT), p_step=("float", P_STEP), mode=("option", const("direct"))),
    F(
        prm.process_env,
        env=("mtenv", MT),
        p_step=("float", P_STEP),
        mode=("option", const("direct")),
        extra=("float", lambda: np.zeros((44, 5))),
    ),
]
