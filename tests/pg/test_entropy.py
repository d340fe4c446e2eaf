"""TODO docstring"""

import numpy as np
import pytest
from gradcheck import fd_grad

from minirl_lm.pg.entropy import entropy_bonus, entropy_grad_table, entropy_table

# ---- folded from tests/test_framework_estimators.py ------------------------------------------

def masks(rng, B, T, empty=True):
    L = rng.integers(1, T + 1, size=B)
    if empty:
        L[0] = 0
    L[-1] = T
    return (np.arange(T)[None, :] < L[:, None]).astype(float), L


def test_entropy_gradient_by_finite_differences():
    rng = np.random.default_rng(10)
    theta = rng.normal(size=(4, 5))
    theta[1, 2] = -np.inf
    g = entropy_grad_table(theta)
    for s in range(4):
        fin = np.isfinite(theta[s])
        f = lambda x: entropy_table(np.where(fin, x, -np.inf)[None])[0]
        fd = fd_grad(f, np.where(fin, theta[s], 0.0))
        np.testing.assert_allclose(g[s][fin], fd[fin], rtol=0, atol=1e-9)
    assert g[1, 2] == 0.0


def test_entropy_matches_verl_entropy_from_logits():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(6, 7)) * 3
    m = logits.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(1))
    p = np.exp(logits - lse[:, None])
    want = lse - (p * logits).sum(1)                           # logsumexp - sum softmax * logits
    np.testing.assert_allclose(entropy_table(logits), want, rtol=1e-13)


@pytest.mark.parametrize("agg", ["token_mean", "seq_sum", "seq_mean_token_mean", "constant"])
def test_entropy_bonus_backward_by_finite_differences(agg):
    rng = np.random.default_rng(12)
    S, V = 5, 4
    theta = rng.normal(size=(S, V))
    mask, _ = masks(rng, 4, 3)
    states = rng.integers(0, S, size=mask.shape)
    loss, dtheta = entropy_bonus(theta, states, mask, agg)
    fd = fd_grad(lambda x: entropy_bonus(x, states, mask, agg)[0], theta)
    np.testing.assert_allclose(dtheta, fd, rtol=0, atol=1e-9)
    H = entropy_table(theta)                                   # TRL: mean per-token entropy
    if agg == "token_mean":
        assert abs(-loss - (H[states] * mask).sum() / mask.sum()) < 1e-15


def test_entropy_bonus_edges():
    theta = np.zeros((2, 3))
    loss, d = entropy_bonus(theta, np.zeros((2, 2), int), np.zeros((2, 2)))
    assert loss == 0.0 and not d.any()                         # nothing visited
    assert np.allclose(entropy_table(theta), np.log(3))
    assert entropy_table(np.array([[0.0, -np.inf]]))[0] == 0.0
    with pytest.raises(ValueError, match="^theta"):
        entropy_table(np.array([[-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="^states"):
        entropy_bonus(theta, np.full((1, 1), 5), np.ones((1, 1)))
