"""select/rejection.py: which responses are kept, the ML loss on them with its finite-difference
check, and the exact expected update (engine and closed form) against a brute-force sum over
every ordered tuple of draws, to 1e-12: eqs. (rft_identity), (rft_finite_k), (rft_group),
(raft_top1)."""

import itertools

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.pg.advantages import no_baseline
from minirl_lm.pg.reinforce import reinforce_loss
from minirl_lm.select.bestofn import best_of_n
from minirl_lm.select.rejection import accepted, closed_form_update, expected_update, rejection_loss
from minirl_lm.tasks import reference_theta, reward_table
from quiet import raises

PI = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.25, 0.0], [0.3, 0.3, 0.2, 0.2]])
BINARY = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])  # p = 0.4, 0, 0
GRADED = np.array([[1.0, 2.0, 2.0, 0.0], [0.0, 1.0, 1.0, 3.0], [0.5, 0.5, 0.5, 0.5]])  # ties


def test_accepted_rules():
    r = np.array([0.0, 1.0, 1.0, 0.3, 0.2, 0.3])
    assert accepted(r, 3).tolist() == [0, 1, 1, 0, 0, 0]
    assert accepted(r, 3, threshold=0.25).tolist() == [0, 1, 1, 1, 0, 1]
    assert accepted(r, 3, "best").tolist() == [0, 1, 0, 1, 0, 0]  # the first of the tied best
    assert accepted(np.zeros(4), 2, "best").tolist() == [1, 0, 1, 0]  # one a group, always


@pytest.mark.parametrize("norm", ["accepted", "group"])
def test_rejection_loss_gradient_matches_finite_differences(norm):
    rng = np.random.default_rng(0)
    logp = -rng.random((6, 3))  # (B, T)
    mask = np.array([[1, 1, 0], [1, 0, 1], [1, 1, 1], [1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=float)  # holes
    a = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 1.0])  # group 1 (K = 2) has none accepted
    loss, d = rejection_loss(logp, mask, a, 2, norm)
    g = fd_grad(lambda z: rejection_loss(z, mask, a, 2, norm)[0], logp)
    # the loss is linear: central differences are exact to rounding, ~1e-16 |L| / h
    assert np.abs(g - d).max() < 1e-9
    assert np.all(d[2:4] == 0) and np.all(d[mask == 0] == 0)
    c = 0.5 if norm == "accepted" else 0.5  # groups 0 (two kept) and 2 (one kept): 1/A or 1/K
    assert np.allclose(d[0], -mask[0] * c / 3) and np.allclose(
        d[5], -mask[5] * (1.0 if norm == "accepted" else 0.5) / 3
    )
    assert loss == pytest.approx(float((d * logp).sum()), abs=0)


def test_norm_group_is_reinforce_without_baseline():
    rng = np.random.default_rng(1)
    logp = -rng.random((8, 1))
    r = (rng.random(8) < 0.4).astype(float)
    d = rejection_loss(logp, np.ones((8, 1)), accepted(r, 4), 4, "group")[1]
    assert np.array_equal(d, reinforce_loss(logp, no_baseline(r.reshape(2, 4)).ravel(), np.ones((8, 1)))[1])


def brute_update(pi, r, K, rule, norm, threshold=1.0):
    """E[-dL/dtheta] by every ordered K-tuple of draws, through accepted and rejection_loss."""
    N, Y = pi.shape
    out = np.zeros((N, Y))
    for n in range(N):
        for tup in itertools.product(range(Y), repeat=K):
            prob = np.prod(pi[n, list(tup)])
            if prob == 0:
                continue
            a = accepted(r[n, list(tup)], K, rule, threshold)
            logp = np.log(pi[n, list(tup)])[:, None]  # (K, 1)
            _, d = rejection_loss(logp, np.ones((K, 1)), a, K, norm)
            for k, y in enumerate(tup):  # -dL/dtheta = -sum_k d_k (e_y - pi), one group of N
                out[n] -= prob * d[k, 0] * (np.eye(Y)[y] - pi[n]) / N
    return out


@pytest.mark.parametrize("K", [1, 2, 3, 4])
@pytest.mark.parametrize("rule", ["verified", "best"])
@pytest.mark.parametrize("norm", ["accepted", "group"])
def test_expected_update_equals_every_ordered_tuple(K, rule, norm):
    for r in (BINARY, GRADED):
        b = brute_update(PI, r, K, rule, norm)
        assert np.abs(expected_update(PI, r, K, rule, norm) - b).max() < 1e-12
        if rule == "best" or r is BINARY:  # the closed forms: a 0/1 verifier, or best-of-K
            assert np.abs(closed_form_update(PI, r, K, rule, norm) - b).max() < 1e-12


def test_the_identity_grad_log_p():
    # eq. (rft_finite_k): the mean over accepted falls short of grad log p by P(none accepted)
    p = (PI[0] * BINARY[0]).sum()
    grad_log_p = PI[0] * (BINARY[0] - p) / p
    for K in (1, 2, 5, 20):
        e = expected_update(PI[:1], BINARY[:1], K)[0]
        assert np.abs(e - (1 - (1 - p) ** K) * grad_log_p).max() < 1e-12
    assert np.abs(closed_form_update(PI[:1], BINARY[:1], 500)[0] - grad_log_p).max() < 1e-12  # K -> inf
    assert np.abs(expected_update(PI[:1], BINARY[:1], 3, norm="group")[0] - p * grad_log_p).max() < 1e-15  # grad p
    assert np.all(expected_update(PI, BINARY, 3)[2] == 0)  # p = 0: no step


def test_raft_top1_steps_towards_best_of_k():
    th = reference_theta()
    pi = np.exp(th) / np.exp(th).sum(axis=1, keepdims=True)
    r = reward_table("gold") + reward_table("sloppy")
    e = expected_update(pi, r, 4, "best")
    assert np.abs(e - (best_of_n(pi, r, 4) - pi) / 4).max() < 1e-14


def test_errors_name_the_argument():
    assert (
        raises(ValueError, lambda: accepted(np.zeros(5), 2))
        == "K: expected a group size dividing the 5 rows of reward, got 2"
    )
    assert raises(ValueError, lambda: rejection_loss(np.zeros((2, 1)), np.ones((2, 1)), [0.5, 1.0], 2)) == (
        "accept: expected only 0 and 1, got value 0.5"
    )
    assert raises(
        ValueError, lambda: rejection_loss(np.zeros((4, 2)), np.ones((4, 2)), [1, 0, 0, 1], 3, "group")
    ) == ("K: expected a group size dividing the 4 rows of mask, got 3")
    assert raises(ValueError, lambda: accepted([], 1, "best", 1.0)).startswith("reward: expected a non-empty")
    pi = np.full((1, 9), 1 / 9)
    assert expected_update(np.full((1, 4), 0.25), np.zeros((1, 4)), 12, "best", "group").shape == (
        1,
        4,
    )  # C(15, 12) = 455
    assert raises(ValueError, lambda: expected_update(pi, np.zeros((1, 9)), 13, "best", "group")) == (
        "K: expected at most 200000 groups of K a prompt, got C(9 + 13 - 1, 13) = 203490"
    )
    assert closed_form_update(pi, np.zeros((1, 9)), 13, "best", "group").shape == (1, 9)  # nothing enumerated
    assert raises(ValueError, lambda: expected_update(PI, BINARY, 120)).startswith(
        "K: expected at most 200000 groups"
    )
    assert raises(ValueError, lambda: closed_form_update(PI, BINARY, 2, "top")).startswith("rule: expected one of")


def test_the_relations_read_alone():
    from minirl_lm.select.rejection import _few_multisets, _groups_of_k

    assert _groups_of_k(2, reward=np.zeros((4,))) is None and _groups_of_k(4, mask=np.zeros((4, 1))) is None
    assert _groups_of_k(3, mask=np.zeros((4, 1))) == "K: expected a group size dividing the 4 rows of mask, got 3"
    assert _groups_of_k(3, reward=np.zeros((5,))).endswith("the 5 rows of reward, got 3")
    assert _few_multisets(np.zeros((1, 9)), 12) is None  # C(20, 12) = 125970
    assert _few_multisets(np.zeros((1, 9)), 13).endswith("C(9 + 13 - 1, 13) = 203490")
    # exactly GROUPS_MAX multisets (the one such group) hold 4e10 scores: the second bound refuses it
    assert _few_multisets(np.zeros((1, 200_000)), 1).startswith("K: expected at most 20000000 scores")
    assert _few_multisets(np.zeros((1, 200_001)), 1).endswith("C(200001 + 1 - 1, 1) = 200001")
    assert _few_multisets(np.zeros((1, 10**6)), 10**6).endswith(">= 1000001")  # stopped early: no big integer
    # the memory of the enumeration: Y = 10**4 responses, K = 1: 10**4 multisets, but 10**8 scores
    assert _few_multisets(np.zeros((1, 10**4)), 1) == (
        "K: expected at most 20000000 scores of a prompt's groups at once (M * K * Y, "
        "M = C(10000 + 1 - 1, 1)), got 10000 * 1 * 10000 = 100000000"
    )
    assert _few_multisets(np.zeros((1, 9)), 12) is None  # 125970 * 12 * 9 = 13.6e6
