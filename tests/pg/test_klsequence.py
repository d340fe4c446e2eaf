"""TRL's bias-corrected KL with the broadcast sequence ratio (klsequence.py).

Gradient against central finite differences (float64, h = 1e-6, O(1) losses: atol 1e-8; smooth,
no gate). Against TRL's lines re-derived in NumPy. Its expectation under pi_old, exactly, by
enumerating every two-token response of a small tree, against the per-token version's."""

import itertools

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.ops import AGGS
from minirl_lm.pg.kl import kl_penalty_is
from minirl_lm.pg.klsequence import kl_penalty_is_sequence
from quiet import names


def batch(rng, B=6, T=5):
    lengths = rng.integers(1, T + 1, B)
    lengths[0] = 0
    mask = (np.arange(T)[None] < lengths[:, None]).astype(float)
    mask[2, 1] = 0.0  # a hole
    logp = -rng.uniform(0.1, 2.0, (B, T))
    return logp, logp + rng.uniform(-0.4, 0.4, (B, T)), logp + rng.uniform(-0.6, 0.6, (B, T)), mask


@pytest.mark.parametrize("agg", AGGS)
def test_gradient_matches_finite_differences(agg):
    logp, logp_old, logp_ref, mask = batch(np.random.default_rng(0))
    _, g = kl_penalty_is_sequence(logp, logp_old, logp_ref, mask, agg, 7)
    fd = fd_grad(lambda x: kl_penalty_is_sequence(x, logp_old, logp_ref, mask, agg, 7)[0], logp)
    np.testing.assert_allclose(g, fd, atol=1e-8, rtol=0)
    assert (g[mask == 0] == 0).all()


def trl_seq_kl(logp, logp_old, logp_ref, mask):
    """TRL 1.16.0 trl/trainer/grpo_trainer.py:3085-3105 (importance_sampling_level="sequence",
    use_bias_correction_kl=True), the KL term of per_token_loss with beta = 1, aggregated as
    loss_type="dapo" (:3168-3174: the batch's tokens)."""
    log_ratio = logp - logp_old
    log_importance_weights = ((log_ratio * mask).sum(-1) / np.maximum(mask.sum(-1), 1.0))[:, None]
    coef_1 = np.exp(log_importance_weights)
    per_token_kl = np.exp(logp_ref - logp) - (logp_ref - logp) - 1
    per_token_kl = per_token_kl * coef_1
    return (per_token_kl * mask).sum() / max(mask.sum(), 1.0)


def test_against_trl_and_at_rho_one():
    logp, logp_old, logp_ref, mask = batch(np.random.default_rng(1))
    loss, g = kl_penalty_is_sequence(logp, logp_old, logp_ref, mask)
    assert abs(loss - trl_seq_kl(logp, logp_old, logp_ref, mask)) < 1e-14
    np.testing.assert_allclose(g, fd_grad(lambda x: trl_seq_kl(x, logp_old, logp_ref, mask), logp), atol=1e-8)
    # s = 1: the same loss as the per-token version; the gradient adds the ratio's row term
    l1, g1 = kl_penalty_is_sequence(logp, logp, logp_ref, mask)
    l2, g2 = kl_penalty_is(logp, logp, logp_ref, mask)
    assert abs(l1 - l2) < 1e-15 and np.abs(g1 - g2).max() > 1e-3
    assert kl_penalty_is_sequence(logp, logp_old, logp_ref, mask)[0] == loss
    names("logp_ref", "shape", lambda: kl_penalty_is_sequence(logp, logp_old, logp_ref[:, :2], mask))


def test_its_expectation_under_pi_old_is_biased_where_the_per_token_one_is_not():
    """Two tokens from V = 2 at each state; under pi_old, E[sum_t rho_t k3_t] is the k3 of pi at
    each state pi_old visits (its target, exact), E[s sum_t k3_t] is not."""
    rng = np.random.default_rng(2)
    V = 2
    lp = {s: np.log(rng.dirichlet(np.ones(V))) for s in ("", "0", "1")}  # pi
    lo = {s: np.log(rng.dirichlet(np.ones(V))) for s in lp}  # pi_old
    lr = {s: np.log(rng.dirichlet(np.ones(V))) for s in lp}  # pi_ref
    mask = np.ones((1, 2))
    e_tok = e_seq = target = 0.0
    for y in itertools.product(range(V), repeat=2):
        states = ("", str(y[0]))
        arr = lambda d: np.array([[d[s][t] for s, t in zip(states, y)]])  # noqa: E731
        p_old = np.exp(arr(lo).sum())
        e_tok += p_old * kl_penalty_is(arr(lp), arr(lo), arr(lr), mask, "seq_sum")[0]
        e_seq += p_old * kl_penalty_is_sequence(arr(lp), arr(lo), arr(lr), mask, "seq_sum")[0]
    for s, reach in (("", 1.0), ("0", np.exp(lo[""][0])), ("1", np.exp(lo[""][1]))):
        u = lp[s] - lr[s]
        target += reach * (np.exp(lp[s]) * (np.exp(-u) + u - 1)).sum()  # E_pi[k3 | s]
    assert abs(e_tok - target) < 1e-14
    assert abs(e_seq - target) > 1e-3


def test_max_len_reaches_the_constant_aggregation():
    # s = 1 (logp = logp_old); k3 = e^-1 on the first token, 0 on the second; w = 1 / (B max_len)
    logp, mask = np.array([[-1.0, -1.0, 0.0]]), np.array([[1.0, 1.0, 0.0]])
    loss, _ = kl_penalty_is_sequence(logp, logp, [[-2.0, -1.0, 0.0]], mask, "constant", 5)
    assert loss == pytest.approx(np.exp(-1.0) / 5, rel=1e-14)
