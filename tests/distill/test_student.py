"""Tests of minirl_lm/distill/student.py: the tied student, the exact expected gradients and
their fixed points.

Exact claims exactly: each expected gradient (through the engine's draw_moments) against the
derivative, by central differences in float64 (h = 1e-6, atol 1e-8), of the sequence-level
divergence it claims, computed independently by the engine's tree_sum over the prefix tree; the
reward form against the loss form to rounding; the fixed points against closed forms.
"""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.distill.student import (
    OBJECTIVES,
    expected_gradient,
    fixed_point,
    tied_backward,
    tied_probs,
)
from minirl_lm.exact.tree import children, tree_sum
from quiet import raises

MDP = TokenMDP(["ab", "b"], V=3, eos=0, max_len=3)  # S = 14, 15 responses per prompt


def _teacher(seed=0):
    z = 1.5 * np.random.default_rng(seed).standard_normal((MDP.S, MDP.V))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _depth_tie():
    return np.array([len(prefix) for _, prefix in MDP.all_states()])  # (S,) groups by depth


def _seq_kl(theta, tie, teacher, reverse):
    """E_x KL over whole responses, by the prefix tree (eq. tree_sum), prompts uniform."""
    child, roots = children(MDP)
    pi = tied_probs(theta, tie)
    q, f = (pi, np.log(pi) - np.log(teacher)) if reverse else (teacher, np.log(teacher) - np.log(pi))
    return tree_sum(child, roots, q, f).mean()


def _seq_tv(p, t):
    ro = MDP.all_responses()
    qp = np.exp((ro.mask * np.log(p)[ro.states, ro.tokens]).sum(axis=1))
    qt = np.exp((ro.mask * np.log(t)[ro.states, ro.tokens]).sum(axis=1))
    return 0.5 * np.abs(qp - qt).sum() / MDP.N


@pytest.mark.parametrize("tie", [np.arange(MDP.S), _depth_tie()], ids=["full", "depth"])
def test_sequence_gradients_by_the_tree(tie):
    teacher = _teacher()
    theta = np.random.default_rng(1).standard_normal((tie.max() + 1, MDP.V))
    # forward: maximum likelihood on the teacher's samples is grad E_x KL(T || pi)
    g = expected_gradient("forward_kl", theta, tie, teacher, MDP)
    np.testing.assert_allclose(g, fd_grad(lambda th: _seq_kl(th, tie, teacher, False), theta), atol=1e-8)
    # reverse with the return to go is grad E_x KL(pi || T)
    g = expected_gradient("reverse_kl_to_go", theta, tie, teacher, MDP)
    np.testing.assert_allclose(g, fd_grad(lambda th: _seq_kl(th, tie, teacher, True), theta), atol=1e-8)
    # the per-token reward (prime-rl, slime) is not: it drops the occupancy's part
    g_tok = expected_gradient("reverse_kl", theta, tie, teacher, MDP)
    assert np.abs(g_tok - g).max() > 1e-3


def test_reward_form_equals_loss_form_exactly():
    teacher = _teacher(2)
    for tie in (np.arange(MDP.S), _depth_tie()):
        theta = np.random.default_rng(3).standard_normal((tie.max() + 1, MDP.V))
        reward = expected_gradient("reverse_kl", theta, tie, teacher, MDP)
        loss = expected_gradient("gkd", theta, tie, teacher, MDP, beta=1.0)
        np.testing.assert_allclose(reward, loss, rtol=0, atol=1e-15)
        assert np.abs(reward).max() > 1e-2


def test_gkd_expected_gradient_is_the_occupancy_weighted_loss():
    # gkd at beta = 0.5: sum_s d_pi(s) G(s), d_pi the student's visits (a tree_sum of an indicator)
    from minirl_lm.distill.objectives import generalized_jsd

    teacher = _teacher(4)
    theta = np.random.default_rng(5).standard_normal((MDP.S, MDP.V))
    tie = np.arange(MDP.S)
    pi = tied_probs(theta, tie)
    child, roots = children(MDP)
    d = np.array(
        [tree_sum(child, roots, pi, np.eye(MDP.S)[s][:, None] * np.ones(MDP.V)).mean() for s in range(MDP.S)]
    )
    _, G = generalized_jsd(theta[:, None], np.log(teacher)[:, None], np.ones((MDP.S, 1)), beta=0.5)
    want = d[:, None] * G[:, 0] * MDP.S  # undo the mean over the S positions
    np.testing.assert_allclose(expected_gradient("gkd", theta, tie, teacher, MDP, beta=0.5), want, atol=1e-15)
    assert expected_gradient("gkd", theta, tie, teacher, MDP) == pytest.approx(
        expected_gradient("gkd", theta, tie, teacher, MDP, beta=0.5)
    )


@pytest.mark.parametrize(
    "objective, beta", [(o, 0.5) for o in OBJECTIVES] + [("gkd", 0.0), ("gkd", 0.1), ("gkd", 0.9), ("gkd", 1.0)]
)
def test_the_tabular_student_reaches_the_teacher(objective, beta):
    teacher = _teacher(6)
    tie = np.arange(MDP.S)
    theta, steps = fixed_point(objective, np.zeros((MDP.S, MDP.V)), tie, teacher, MDP, beta=beta)
    assert steps < 10000
    assert _seq_tv(tied_probs(theta, tie), teacher) < 1e-8


def test_limited_fixed_points_in_closed_form():
    teacher = _teacher(7)
    tie = _depth_tie()
    G = tie.max() + 1
    child, roots = children(MDP)
    # forward KL: each tied row is the teacher's rows averaged by the teacher's own visits
    theta, _ = fixed_point("forward_kl", np.zeros((G, MDP.V)), tie, teacher, MDP)
    d = np.array(
        [tree_sum(child, roots, teacher, np.eye(MDP.S)[s][:, None] * np.ones(MDP.V)).mean() for s in range(MDP.S)]
    )
    for g in range(G):
        rows = tie == g
        want = (d[rows, None] * teacher[rows]).sum(axis=0) / d[rows].sum()
        np.testing.assert_allclose(tied_probs(theta, tie)[rows][0], want, atol=1e-12)
    # the sequence-level reverse KL's fixed point is a stationary point of E_x KL(pi || T)
    theta, steps = fixed_point("reverse_kl_to_go", np.zeros((G, MDP.V)), tie, teacher, MDP)
    assert steps < 10000
    grad = fd_grad(lambda th: _seq_kl(th, tie, teacher, True), theta)
    assert np.abs(grad).max() < 1e-8
    assert _seq_tv(tied_probs(theta, tie), teacher) > 0.05  # the limited student cannot match


def test_prompt_blind_student_on_one_token_answers():
    mdp = TokenMDP(["p", "q", "r"], V=4, eos=None, max_len=1)  # S = 3 states, one per prompt
    t = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.05, 0.05, 0.45, 0.45]])
    tie = np.zeros(3, np.int64)
    fwd, _ = fixed_point("forward_kl", np.zeros((1, 4)), tie, t, mdp)
    rev, _ = fixed_point("reverse_kl", np.zeros((1, 4)), tie, t, mdp)
    np.testing.assert_allclose(tied_probs(fwd, tie)[0], t.mean(axis=0), atol=1e-12)  # the mixture
    geo = np.exp(np.log(t).mean(axis=0))
    np.testing.assert_allclose(tied_probs(rev, tie)[0], geo / geo.sum(), atol=1e-12)  # the geometric mean


def test_tied_probs_and_backward():
    theta = np.array([[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]])
    tie = np.array([1, 0, 1])
    p = tied_probs(theta, tie)
    np.testing.assert_allclose(p[0], p[2])
    np.testing.assert_allclose(p[1], np.exp(theta[0]) / np.exp(theta[0]).sum(), rtol=1e-15)
    d = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(tied_backward(d, tie, 2), [d[1], d[0] + d[2]])
    np.testing.assert_array_equal(tied_backward(d, tie, 3)[2], 0.0)
    # a row spanning more than float64's range: probability 0, no warning
    np.testing.assert_array_equal(tied_probs(np.array([[1e308, -1e308]]), np.array([0])), [[1.0, 0.0]])


def test_defaults_and_errors():
    teacher, tie = _teacher(), np.arange(MDP.S)
    theta = np.zeros((MDP.S, MDP.V))
    a = fixed_point("gkd", theta, tie, teacher, MDP)
    b = fixed_point("gkd", theta, tie, teacher, MDP, beta=0.5, lr=0.5, max_steps=10000, tol=1e-12)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert fixed_point("forward_kl", theta, tie, teacher, MDP, max_steps=2)[1] == 2
    msg = raises(ValueError, lambda: expected_gradient("kl", theta, tie, teacher, MDP))
    assert msg.startswith("objective: expected one of")
    assert raises(ValueError, lambda: expected_gradient("gkd", theta, tie[:3], teacher, MDP)).startswith("tie:")
    assert raises(ValueError, lambda: expected_gradient("gkd", theta[:, :2], tie, teacher, MDP)).startswith(
        "theta:"
    )
    zero = teacher.copy()
    zero[0] = [1.0, 0.0, 0.0]
    assert raises(ValueError, lambda: expected_gradient("gkd", theta, tie, zero, MDP)).startswith("teacher:")
    assert raises(ValueError, lambda: fixed_point("gkd", theta, tie, teacher, MDP, lr=2.0)).startswith("lr:")
    assert raises(TypeError, lambda: expected_gradient("gkd", theta, tie, teacher, "mdp")).startswith("mdp:")
    assert raises(ValueError, lambda: tied_backward(np.zeros((2, 2)), np.array([0, 2]), 2)).startswith("tie:")
    assert raises(ValueError, lambda: tied_backward(np.zeros((2, 2)), [0, 0], 0)).startswith("G: ")
    assert raises(TypeError, lambda: tied_backward(np.zeros((2, 2)), [0, 0], True)).startswith("G: ")
    assert raises(ValueError, lambda: tied_probs([[0.0, 1.0]], np.zeros(0, np.int64))).startswith("tie: ")
    assert raises(ValueError, lambda: tied_probs([[0.0, 1.0]], [0, 1])) == (
        "tie: expected group ids < 1 (theta's rows), got max 1"
    )
    lazy = TokenMDP(["a"], V=2, eos=None, max_len=1, ids="lazy", capacity=4)
    msg = raises(ValueError, lambda: expected_gradient("gkd", [[0.0, 0.0]], [0], [[0.5, 0.5]], lazy))
    assert msg == "mdp: expected ids='enumerate' (every state listed), got 'lazy'"
    for kw in (dict(max_steps=0), dict(tol=0.0)):
        assert raises(ValueError, lambda: fixed_point("gkd", theta, tie, teacher, MDP, **kw)).startswith(
            f"{[*kw][0]}: "
        )


def test_one_step_is_the_natural_gradient_step_and_rows_end_at_max_zero():
    teacher, tie = _teacher(8), _depth_tie()
    theta0 = np.random.default_rng(9).standard_normal((tie.max() + 1, MDP.V))
    for objective, beta, curv in (("forward_kl", 0.5, 1.0), ("gkd", 0.3, 0.3 * 0.7), ("gkd", 1.0, 1.0)):
        grad = expected_gradient(objective, theta0, tie, teacher, MDP, beta=beta)
        sampler = teacher if objective == "forward_kl" else tied_probs(theta0, tie)
        child, roots = children(MDP)
        d = np.array(
            [
                tree_sum(child, roots, sampler, np.eye(MDP.S)[s][:, None] * np.ones(MDP.V)).mean()
                for s in range(MDP.S)
            ]
        )
        visits = np.bincount(tie, d)  # (G,) the sampler's visits to each tied row
        pi = tied_probs(theta0, np.arange(tie.max() + 1))
        want = theta0 - 0.25 / curv * grad / (pi * visits[:, None])
        want -= want.max(axis=1, keepdims=True)
        got, steps = fixed_point(objective, theta0, tie, teacher, MDP, beta=beta, lr=0.25, max_steps=1)
        assert steps == 1
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        theta, _ = fixed_point(objective, theta0, tie, teacher, MDP, beta=beta)
        assert (theta.max(axis=1) == 0.0).all()


def test_steps_to_the_fixed_point_are_pinned():
    # the step count of a fixed run: a change of the step rule or of the stop changes it
    mdp = TokenMDP(["p", "q", "r"], V=4, eos=None, max_len=1)
    t = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.05, 0.05, 0.45, 0.45]])
    tie = np.zeros(3, np.int64)
    got = {o: fixed_point(o, np.zeros((1, 4)), tie, t, mdp, beta=0.5)[1] for o in OBJECTIVES}
    loose = {o: fixed_point(o, np.zeros((1, 4)), tie, t, mdp, beta=0.5, tol=1e-6)[1] for o in OBJECTIVES}
    assert all(loose[o] < got[o] for o in OBJECTIVES)
    assert got == {"forward_kl": 38, "reverse_kl": 37, "reverse_kl_to_go": 37, "gkd": 49}, got


def test_overflow_names_the_function():
    theta = np.zeros((MDP.S, MDP.V))
    theta[:, 0], theta[:, 1] = 1e308, -1e308  # log pi = -inf on token 1: 1 / pi overflows
    tie = np.arange(MDP.S)
    msg = raises(ValueError, lambda: expected_gradient("gkd", theta, tie, _teacher(), MDP))
    assert (
        msg.startswith("expected_gradient: expected a finite gradient, got ")
        and "theta in [-1e+308, 1e+308]" in msg
    )
    msg = raises(ValueError, lambda: fixed_point("gkd", theta, tie, _teacher(), MDP, max_steps=1))
    assert msg.startswith("fixed_point: expected a finite theta, got "), msg
    # a step beyond float64 ends the run at once (not max_steps steps of NaN)
    msg = raises(ValueError, lambda: fixed_point("gkd", theta, tie, _teacher(), MDP, max_steps=10**7))
    assert msg.startswith("fixed_point: expected a finite theta"), msg


def test_the_declared_boundary_reads_alone():
    from minirl_lm.distill.student import _enumerated_mdp, _few_entries, _positive_teacher, _tie_in_groups

    assert _few_entries(np.zeros((1, 10)), 10**7) is None
    assert (
        _few_entries(np.zeros((1, 11)), 10**7)
        == "G: expected G * V <= 10**8 entries of the (G, V) gradient, got 10000000 * 11"
    )

    dims = {}
    assert _enumerated_mdp(MDP, "mdp", dims) is MDP and dims == {"S": MDP.S, "V": MDP.V}
    assert _tie_in_groups(np.array([0, 2]), G=3) is None
    assert _tie_in_groups(np.array([0, 2]), G=2) == "tie: expected group ids < 2 (G), got max 2"
    assert _tie_in_groups(np.array([0, 1]), theta=np.zeros((1, 3))).startswith("tie: expected group ids < 1")
    assert _positive_teacher(np.full((1, 2), 0.5)) is None
    assert (
        _positive_teacher(np.array([[1.0, 0.0]]))
        == "teacher: expected probabilities > 0 (every KL finite), got min 0.0"
    )


def test_an_object_without_the_members_is_named_a_token_mdp():
    msg = raises(
        TypeError, lambda: expected_gradient("gkd", np.zeros((2, 2)), [0, 1], np.full((2, 2), 0.5), "mdp")
    )
    assert msg == (
        "mdp: expected a TokenMDP (with S, V, N, ids, all_responses()), "
        "got str without S, V, N, ids, all_responses"
    )


def test_fixed_point_leaves_a_row_no_state_uses_at_max_zero():
    teacher, tie = _teacher(3), _depth_tie()  # groups 0, 1, 2
    theta0 = np.random.default_rng(4).standard_normal((tie.max() + 1, MDP.V))
    want, steps = fixed_point("reverse_kl", theta0, tie, teacher, MDP)
    got, got_steps = fixed_point("reverse_kl", np.vstack([theta0, [[1.0, 2.0, 3.0]]]), tie, teacher, MDP)
    assert np.array_equal(got[:-1], want) and got_steps == steps
    assert got[-1].tolist() == [-2.0, -1.0, 0.0]  # never visited: only shifted to max 0


def test_fixed_point_ignores_a_shift_of_each_row_even_by_1e308():
    teacher, tie = _teacher(3), _depth_tie()
    zero = np.zeros((tie.max() + 1, MDP.V))
    want, steps = fixed_point("reverse_kl", zero, tie, teacher, MDP)
    got, got_steps = fixed_point("reverse_kl", zero + np.array([[1e308], [-1e308], [5.0]]), tie, teacher, MDP)
    assert np.array_equal(got, want) and got_steps == steps


def test_fixed_point_stops_when_no_logit_moves_by_more_than_tol():
    # a tabular student from uniform: the first forward-KL step moves row s by lr (V t_s - 1),
    # [0.9, -0.3, -0.3, -0.3] and [-0.48, 0.16, 0.16, 0.16]: the largest move within a row is 1.2,
    # though the two rows' steps span 1.38 (a shift of a row is no move)
    mdp = TokenMDP(["p", "q"], V=4, eos=None, max_len=1)
    t = np.array([[0.7, 0.1, 0.1, 0.1], [0.01, 0.33, 0.33, 0.33]])
    zero, tie = np.zeros((2, 4)), np.arange(2)
    first, _ = fixed_point("forward_kl", zero, tie, t, mdp, max_steps=1)
    move = np.ptp(first, axis=1).max()
    assert move == pytest.approx(1.2, rel=1e-12) and np.ptp(first - first.mean(axis=1, keepdims=True)) > 1.2
    assert fixed_point("forward_kl", zero, tie, t, mdp, tol=move)[1] == 1
    assert fixed_point("forward_kl", zero, tie, t, mdp, tol=np.nextafter(move, 0.0))[1] == 2
