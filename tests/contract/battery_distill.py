"""The bad-input battery's table, part distill: distillation from a teacher (minirl_lm/distill/).
See battery.py."""

import numpy as np
from battery_data import IDS, LOGITS, LOGP, LOGP2, MASK, MDP, F, const

from minirl_lm.distill import objectives, samples, student

TEACHER = lambda: np.array([[0.2, 0.3, 0.5]] * 3 + [[0.6, 0.3, 0.1]] * 3)  # noqa: E731 (S = 6, V = 3)
THETA = lambda: np.linspace(-1.0, 1.0, 6).reshape(2, 3)  # noqa: E731 (G = 2 rows, V = 3)
TIE = IDS(2, (6,))  # (S,) = (6,) groups of MDP's states
TEACHER_LOGITS = lambda: np.random.default_rng(3).standard_normal((2, 3, 4))  # noqa: E731 (B, T, V)
EXACT = dict(
    objective=("option", const("gkd")),
    theta=("float", THETA),
    tie=("ids2", TIE),
    teacher=("prob", TEACHER),
    mdp=("tree_mdp", MDP),
    beta=("unit", const(0.5)),
)

TABLE = [
    # objectives.py
    *[
        F(f, student_logits=("float", LOGITS), teacher_logits=("float", TEACHER_LOGITS), mask=("mask", MASK), **t)
        for f, t in (
            (objectives.forward_kl, dict(temperature=("pos", const(1.5)))),
            (objectives.reverse_kl, dict(temperature=("pos", const(0.5)))),
            (objectives.generalized_jsd, dict(beta=("unit", const(0.3)), temperature=("pos", const(2.0)))),
        )
    ],
    # samples.py
    F(samples.teacher_nll, logp=("float", LOGP), mask=("mask", MASK)),
    F(
        samples.reverse_kl_reward,
        logp=("float", LOGP),
        logp_teacher=("float", LOGP2),
        mask=("mask", MASK),
        to_go=("flag", const(True)),
    ),
    # student.py
    F(student.tied_probs, theta=("float", THETA), tie=("ids2", TIE)),
    F(student.tied_backward, dlogits=("float", TEACHER), tie=("ids2", TIE), G=("int1", const(2))),
    F(student.expected_gradient, **EXACT),
    F(
        student.fixed_point,
        **EXACT,
        lr=("eps", const(0.5)),
        max_steps=("int1", const(3)),
        tol=("pos", const(1e-9)),
    ),
]
