"""The bad-input battery's table, part exact: the engine (minirl_lm/exact/). See battery.py."""

import numpy as np
from battery_data import IDS, LOGP, MASK, MDP, PROBS, F, V, const

from minirl_lm.exact import batch, groups, scores, tree

PROBS6 = lambda: np.full((6, 3), 1.0 / 3.0)  # noqa: E731 (S = 6 states, V = 3)
Q2 = lambda: np.array([0.25, 0.75])  # noqa: E731 (B,) one draw over the rows
CHILD = lambda: np.array([[-1, 1, 2], [-1, -1, -1], [-1, -1, -1], [-1, 4, 5], [-1, -1, -1], [-1, -1, -1]])  # noqa: E731
ROOTS = lambda: np.array([0, 3])  # noqa: E731
GROUP = dict(
    Y=("ids3", IDS(3)),  # (M, K) = (2, 3)
    coefs=V(lambda: [np.ones((2, 3, 1))]),
    bases=V(lambda: [np.arange(6.0).reshape(3, 1, 2)]),
)
BATCH = dict(
    P=V(lambda: [np.array([0.5, 0.5]), np.array([1.0])]),
    stats=V(
        lambda: [
            np.array([[2.0, 2.0], [1.0, 0.0], [1.0, 0.0], [3.0, 2.0]]),
            np.array([[2.0], [1.0], [1.0], [1.0]]),
        ]
    ),
    parts=V(lambda: [(np.eye(2), np.eye(2), np.eye(2)), (np.ones((1, 2)),) * 3]),
)

TABLE = [
    # scores.py
    F(
        scores.token_scores,
        probs=("prob", PROBS),
        states=("ids2", IDS(2)),
        tokens=("ids3", IDS(3)),
        mask=("mask", MASK),
    ),
    F(
        scores.row_updates,
        probs=("prob", PROBS),
        states=("ids2", IDS(2)),
        tokens=("ids3", IDS(3)),
        mask=("mask", MASK),
        coef=("float", LOGP),
    ),
    F(
        scores.draw_moments,
        q=("prob", Q2),
        coef=("float", LOGP),
        probs=("prob", PROBS6),
        states=("ids6", IDS(6)),
        tokens=("ids3", IDS(3)),
        mask=("mask", MASK),
    ),
    # groups.py
    F(groups.multisets, R=("int1", const(3)), K=("int1", const(2))),
    F(groups.group_law, p=("prob", PROBS), K=("int1", const(2))),
    F(groups.group_moments, P=("float", Q2), **GROUP, second=("flag", const(True))),
    F(groups.group_updates, **GROUP),
    F(
        groups.ordered_groups,
        logq=("float_neginf", lambda: np.log([0.5, 0.5, 0.25, 0.75])),
        prompt=V(lambda: np.array([0, 0, 1, 1])),
        K=("int1", const(2)),
    ),
    F(
        groups.iid_moments,
        p=("prob", lambda: np.array([0.2, 0.3, 0.5])),
        R=("float", lambda: np.array([1.0, 0.0, -1.0])),
        Sc=("float", lambda: np.arange(6.0).reshape(3, 2)),
        c=("float", lambda: np.eye(2)),
    ),
    # batch.py
    F(
        batch.batch_moments,
        **BATCH,
        kind=("option", const("batch_std")),
        token_mean=("flag", const(False)),
        eps=("pos", const(1e-8)),
        second=("flag", const(True)),
        kernel=("flag", const(False)),
    ),
    # tree.py
    F(tree.children, mdp=("tree_mdp", MDP)),
    F(
        tree.tree_sum,
        child=V(CHILD),
        roots=("ids6", lambda: np.array([0, 3])),
        q=("prob", PROBS6),
        f=("float", PROBS6),
    ),
    F(
        tree.tree_product,
        child=V(CHILD),
        roots=("ids6", lambda: np.array([0, 3])),
        q=("prob", PROBS6),
        h=("float", PROBS6),
    ),
]
