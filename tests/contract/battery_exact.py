"""The bad-input battery's table, part exact: the engine (minirl_lm/exact/). See battery.py."""

import numpy as np
from battery_data import IDS, LOGP, MASK, MDP, PROBS, F, const
from battery_kinds import BAD, bad_float

from minirl_lm.exact import batch, groups, scores, tree


def _in_list(bad):
    """A list of arrays: not a list, empty, and each bad array of `bad` in its first place."""
    return lambda v: (
        [("str", "x"), ("None", None), ("empty list", [])]
        + [(f"first {label}", [x, *v[1:]]) for label, x in bad(v[0]) if x is not None and not isinstance(x, str)]
    )


def _bad_parts(v):
    first = [(label, [(x, *v[0][1:]), *v[1:]]) for label, x in bad_float(v[0][0]) if isinstance(x, np.ndarray)]
    return [("str", "x"), ("None", None), ("empty list", []), ("a pair", [v[0][:2], *v[1:]])] + first


def _bad_child(v):
    cycle = np.array(v)
    cycle[1, 0] = 0  # 0 -> 1 -> 0: the root a child
    shared = np.array(v)
    shared[1, 0] = 2  # state 2 the child of 0 and of 1
    return [
        ("str", "x"),
        ("None", None),
        ("float", np.asarray(v) + 0.5),
        ("-2", np.where(np.asarray(v) == -1, -2, v)),
        ("high", np.where(np.asarray(v) == 1, 6, v)),
        ("extra axis", np.asarray(v)[..., None]),
        ("a cycle", cycle),
        ("two parents", shared),
    ]


BAD["arrays"] = _in_list(bad_float)
BAD["prompt_probs"] = _in_list(BAD["prob"])
BAD["prompt_stats"] = _in_list(bad_float)
BAD["prompt_parts"] = _bad_parts
BAD["child"] = _bad_child

PROBS6 = lambda: np.full((6, 3), 1.0 / 3.0)  # noqa: E731 (S = 6 states, V = 3)
Q2 = lambda: np.array([0.25, 0.75])  # noqa: E731 (B,) one draw over the rows
CHILD = lambda: np.array([[-1, 1, 2], [-1, -1, -1], [-1, -1, -1], [-1, 4, 5], [-1, -1, -1], [-1, -1, -1]])  # noqa: E731
ROOTS = lambda: np.array([0, 3])  # noqa: E731
GROUP = dict(
    Y=("ids3", IDS(3)),  # (M, K) = (2, 3)
    coefs=("arrays", lambda: [np.ones((2, 3, 1))]),
    bases=("arrays", lambda: [np.arange(6.0).reshape(3, 1, 2)]),
)
BATCH = dict(
    P=("prompt_probs", lambda: [np.array([0.5, 0.5]), np.array([1.0])]),
    stats=(
        "prompt_stats",
        lambda: [
            np.array([[2.0, 2.0], [1.0, 0.0], [1.0, 0.0], [3.0, 2.0]]),
            np.array([[2.0], [1.0], [1.0], [1.0]]),
        ],
    ),
    parts=("prompt_parts", lambda: [(np.eye(2), np.eye(2), np.eye(2)), (np.ones((1, 2)),) * 3]),
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
        prompt=("tokids", lambda: np.array([0, 0, 1, 1])),
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
        child=("child", CHILD),
        roots=("ids6", lambda: np.array([0, 3])),
        q=("prob", PROBS6),
        f=("float", PROBS6),
    ),
    F(
        tree.tree_product,
        child=("child", CHILD),
        roots=("ids6", lambda: np.array([0, 3])),
        q=("prob", PROBS6),
        h=("float", PROBS6),
    ),
]
