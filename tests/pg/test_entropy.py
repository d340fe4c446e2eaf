"""The entropy bonus (minirl_lm/pg/entropy.py): the table gradient by finite differences, verl's
entropy_from_logits re-derived in NumPy (verl core_algos.py @ 1dda039b9c), the bonus's backward, its
edges and defaults, and silence at extreme logits."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.pg.entropy import LOGITS, entropy_bonus, entropy_grad_table, entropy_table
from quiet import names, silent

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
    want = lse - (p * logits).sum(1)  # logsumexp - sum softmax * logits
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
    H = entropy_table(theta)  # TRL: mean per-token entropy
    if agg == "token_mean":
        assert abs(-loss - (H[states] * mask).sum() / mask.sum()) < 1e-15


def test_entropy_bonus_edges():
    theta = np.zeros((2, 3))
    loss, d = entropy_bonus(theta, np.zeros((2, 2), int), np.zeros((2, 2)))
    assert loss == 0.0 and not d.any()  # nothing visited
    assert np.allclose(entropy_table(theta), np.log(3))
    assert entropy_table(np.array([[0.0, -np.inf]]))[0] == 0.0
    with pytest.raises(ValueError, match="^theta"):
        entropy_table(np.array([[-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="^states"):
        entropy_bonus(theta, np.full((1, 1), 5), np.ones((1, 1)))


# ---- defaults, shared pieces, and extreme logits -------------------------------------------


def test_entropy_bonus_default_aggregation_is_token_mean():
    rng = np.random.default_rng(3)
    theta = rng.normal(size=(3, 4))
    states = np.array([[0, 1, 2], [2, 2, 0]])
    mask = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    H = entropy_table(theta)
    loss, _ = entropy_bonus(theta, states, mask)
    assert loss == entropy_bonus(theta, states, mask, "token_mean")[0]
    np.testing.assert_allclose(loss, -(H[[0, 1, 2, 2]]).sum() / 4, rtol=1e-15)  # 4 real tokens
    seq, _ = entropy_bonus(theta, states, mask, "seq_sum")
    np.testing.assert_allclose(seq, -(H[[0, 1, 2, 2]]).sum() / 2, rtol=1e-15)  # B = 2
    const, _ = entropy_bonus(theta, states, mask, "constant", max_len=6)
    np.testing.assert_allclose(const, -(H[[0, 1, 2, 2]]).sum() / 12, rtol=1e-15)


def test_entropy_uses_the_shared_pieces():
    from minirl_lm.core import ops
    from minirl_lm.pg import entropy

    assert entropy.agg_weights is ops.agg_weights and entropy.AGGS is ops.AGGS
    assert entropy.log_softmax is ops.log_softmax


def test_logits_beyond_float64_apart_are_a_zero_probability_silently():
    # theta - max = -1e308 - 1e308 overflows to -inf: pi = 0 there, exactly as in the limit
    theta = np.array([[1e308, -1e308], [0.0, 0.0]])
    H = silent(lambda: entropy_table(theta))
    assert H[0] == 0.0 and abs(H[1] - np.log(2)) < 1e-15
    g = silent(lambda: entropy_grad_table(theta))
    assert (g[0] == 0).all() and np.isfinite(g).all()
    loss, d = silent(lambda: entropy_bonus(theta, [[0, 1]], [[1.0, 1.0]]))
    assert np.isfinite(loss) and np.isfinite(d).all() and (d[0] == 0).all()


def test_entropy_bad_input_named():
    names("theta", "expected shape (S, V), got (3,)", lambda: entropy_table(np.zeros(3)))
    names("theta", "expected a non-empty array", lambda: entropy_grad_table(np.zeros((2, 0))))
    names("theta", "expected a finite entry in every row", lambda: entropy_grad_table([[0.0], [-np.inf]]))
    names("theta", "(no +inf)", lambda: entropy_table([[np.inf, 0.0]]))
    names(
        "states", "expected shape (1, 2), got (1, 1)", lambda: entropy_bonus(np.zeros((2, 2)), [[0]], [[1.0, 1.0]])
    )
    names("agg", "expected one of", lambda: entropy_bonus(np.zeros((2, 2)), [[0]], [[1.0]], "mean"))
    names(
        "max_len",
        "expected >= the longest response",
        lambda: entropy_bonus(np.zeros((2, 2)), [[0, 1]], [[1.0, 1.0]], "constant", 1),
    )


def test_logits_kind_reads_a_table_with_impossible_tokens():
    x = [[0.0, -np.inf], [1, 2]]
    t = LOGITS(x, "theta", {})
    assert t.dtype == np.float64 and t.tolist() == [[0.0, -np.inf], [1.0, 2.0]]
    assert x[0][1] == -np.inf and t is not x  # a fresh copy
    dims = {}
    LOGITS(np.zeros((2, 3)), "theta", dims)
    assert dims == {"S": 2, "V": 3}  # fixes S and V for the later arguments
    with pytest.raises(ValueError, match=r"^theta_ref: expected shape \(2, 3\), got \(2, 2\)"):
        LOGITS(np.zeros((2, 2)), "theta_ref", dims)
    with pytest.raises(ValueError, match="^theta: expected no NaN"):
        LOGITS([[np.nan, -np.inf]], "theta", {})
    with pytest.raises(ValueError, match=r"^theta: expected finite values or -inf \(no \+inf\)"):
        LOGITS([[np.inf, -np.inf]], "theta", {})
    with pytest.raises(TypeError, match="^theta: expected a real-valued array"):
        LOGITS("table", "theta", {})


def test_a_state_id_equal_to_the_number_of_rows_is_named():
    theta, mask = np.zeros((3, 2)), np.ones((1, 2))  # S = 3 rows, V = 2
    with pytest.raises(ValueError) as e:
        entropy_bonus(theta, [[0, 3]], mask)
    assert str(e.value) == "states: expected ids < 3 (the rows of theta), got max 3"
