"""The boundary of the distillation part: one bundle call per public function of
`distill/objectives.py`, `distill/samples.py` and `distill/student.py` (student and teacher
logits, token log-probs, the tied student's table and the exact run's arguments), returning what
the math trusts. Built on `core/checks.py`; NumPy only."""

from minirl_lm.core.checks import (
    choice,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    nonempty,
    prob_table,
    same_shape,
)
from minirl_lm.core.validate import flag
from minirl_lm.exact.checks import children_args


def _logits(x, name):
    z = float_array(x, name, ndim=3)  # (B, T, V), finite: every token has some probability
    return nonempty(z, name)


_NO_BETA = object()  # forward_kl and reverse_kl take no beta


def logits_args(student_logits, teacher_logits, mask, beta=_NO_BETA, temperature=1.0):
    """`(B, T, V)` student and teacher logits, a `(B, T)` mask, `beta` in [0, 1] (None when the
    caller takes none), temperature > 0."""
    zs = _logits(student_logits, "student_logits")
    zt = _logits(teacher_logits, "teacher_logits")
    same_shape("student_logits", zs, "teacher_logits", zt)
    mask = mask_array(mask, "mask", shape=zs.shape[:2])
    beta = None if beta is _NO_BETA else float_scalar(beta, "beta", low=0.0, high=1.0)
    temperature = float_scalar(temperature, "temperature", low=0.0, low_open=True)
    return zs, zt, mask, beta, temperature


def nll_args(logp, mask):
    """`(B, T)` token log-probs of the teacher's samples under the student, and their mask."""
    logp = float_array(logp, "logp", ndim=2)
    mask = mask_array(mask, "mask", shape=logp.shape)
    return logp, mask


def reward_args(logp, logp_teacher, mask, to_go):
    """`(B, T)` student and teacher log-probs of the student's samples, a mask, the to-go flag."""
    logp = float_array(logp, "logp", ndim=2)
    logp_teacher = float_array(logp_teacher, "logp_teacher", ndim=2)
    same_shape("logp", logp, "logp_teacher", logp_teacher)
    mask = mask_array(mask, "mask", shape=logp.shape)
    return logp, logp_teacher, mask, flag(to_go, "to_go")


def tied_args(theta, tie):
    """A `(G, V)` finite table and `(S,)` group ids in `[0, G)`, every group used."""
    theta = nonempty(float_array(theta, "theta", ndim=2), "theta")
    tie = int_array(tie, "tie", ndim=1, low=0, high=theta.shape[0])
    nonempty(tie, "tie")
    return theta, tie


def backward_args(dlogits, tie, G):
    """`(S, V)` per-state gradients, `(S,)` group ids, the number of groups `G >= 1`."""
    dlogits = nonempty(float_array(dlogits, "dlogits", ndim=2), "dlogits")
    G = int_scalar(G, "G", low=1, high=10**7)
    tie = int_array(tie, "tie", shape=(dlogits.shape[0],), low=0, high=G)
    return dlogits, tie, G


def exact_args(objective, theta, tie, teacher, mdp, beta, objectives):
    """The exact run: an objective's name, the tied student `(theta, tie)`, the teacher's
    `(S, V)` table, an enumerated `TokenMDP` with `S` states and `V` tokens, GKD's beta."""
    objective = choice(objective, "objective", objectives)
    theta, tie = tied_args(theta, tie)
    mdp = children_args(mdp)
    S, V = mdp.S, mdp.V
    if tie.shape != (S,):
        raise ValueError(f"tie: expected one group id per state of mdp, shape ({S},), got {tie.shape}")
    if theta.shape[1] != V:
        raise ValueError(f"theta: expected V = {V} columns (the mdp's tokens), got {theta.shape[1]}")
    teacher = prob_table(teacher, "teacher", shape=(S, V))
    if (teacher <= 0).any():
        raise ValueError(f"teacher: expected probabilities > 0 (every KL finite), got min {teacher.min()}")
    beta = float_scalar(beta, "beta", low=0.0, high=1.0)
    return objective, theta, tie, teacher, mdp, beta


def fixed_args(objective, theta, tie, teacher, mdp, beta, lr, max_steps, tol, objectives):
    """`exact_args`, then the run's step size `lr` in (0, 1], `max_steps >= 1` and `tol > 0`."""
    out = exact_args(objective, theta, tie, teacher, mdp, beta, objectives)
    lr = float_scalar(lr, "lr", low=0.0, high=1.0, low_open=True)
    max_steps = int_scalar(max_steps, "max_steps", low=1, high=10**7)
    tol = float_scalar(tol, "tol", low=0.0, low_open=True)
    return out + (lr, max_steps, tol)
