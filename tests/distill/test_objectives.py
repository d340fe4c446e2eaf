"""Tests of minirl_lm/distill/objectives.py: forward KL, reverse KL and GKD's generalized JSD.

Gradients against central differences in float64 (h = 1e-6: truncation ~h^2 |f'''| ~ 1e-12,
rounding ~eps |f| / h ~ 1e-10, so atol 1e-8 has room); GKD against TRL 1.16.0's formula as
written, re-implemented in NumPy (no torch).
"""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.ops import log_softmax
from minirl_lm.distill.objectives import forward_kl, generalized_jsd, jsd_terms, reverse_kl
from quiet import raises

B, T, V = 2, 3, 5


def _case(seed=0):
    rng = np.random.default_rng(seed)
    zs = rng.standard_normal((B, T, V))  # (B, T, V)
    zt = 2.0 * rng.standard_normal((B, T, V))
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])  # a hole in row 1
    return zs, zt, mask


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _trl_generalized_jsd(student_logits, teacher_logits, labels_mask, beta, temperature):
    """TRL 1.16.0 `trl/experimental/gkd/gkd_trainer.py:238-322` `generalized_jsd_loss`, as
    written: logits / temperature (271-272), log_softmax (275-276); beta == 0:
    `F.kl_div(student_log_probs, teacher_log_probs, log_target=True)` (279); beta == 1: the
    arguments swapped (281); else the mixture `logsumexp([s + log1p(-beta), t + log(beta)])`
    (286-289), `jsd = beta * kl_div(m, t) + (1 - beta) * kl_div(m, s)` (293-297); `jsd[mask]`
    (300-302); "batchmean": `jsd.sum() / mask.sum().clamp_min(1)` (315-316). PyTorch's
    `kl_div(input, target, log_target=True)` is `exp(target) * (target - input)` elementwise."""

    def kl_div(inp, target):
        return np.exp(target) * (target - inp)

    s = np.log(_softmax(student_logits / temperature))
    t = np.log(_softmax(teacher_logits / temperature))
    if beta == 0:
        jsd = kl_div(s, t)
    elif beta == 1:
        jsd = kl_div(t, s)
    else:
        m = np.logaddexp(s + np.log1p(-beta), t + np.log(beta))
        jsd = beta * kl_div(m, t) + (1 - beta) * kl_div(m, s)
    jsd = jsd[labels_mask.astype(bool)]
    return jsd.sum() / max(labels_mask.sum(), 1)


@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_generalized_jsd_is_trls_formula(beta, temperature):
    zs, zt, mask = _case()
    loss, _ = generalized_jsd(zs, zt, mask, beta=beta, temperature=temperature)
    assert loss == pytest.approx(_trl_generalized_jsd(zs, zt, mask, beta, temperature), rel=1e-12)


def test_trl_beta_convention_ends_are_forward_then_reverse():
    zs, zt, mask = _case(1)
    assert generalized_jsd(zs, zt, mask, beta=0.0)[0] == forward_kl(zs, zt, mask)[0]
    assert generalized_jsd(zs, zt, mask, beta=1.0)[0] == reverse_kl(zs, zt, mask)[0]
    p, t = _softmax(zs), _softmax(zt)
    fwd = (t * (np.log(t) - np.log(p))).sum(-1)  # KL(t || p) per position
    assert forward_kl(zs, zt, mask)[0] == pytest.approx((mask * fwd).sum() / mask.sum(), rel=1e-12)
    # the interior vanishes at the ends like beta KL(t || p) and (1 - beta) KL(p || t)
    small, big = generalized_jsd(zs, zt, mask, beta=1e-6)[0], generalized_jsd(zs, zt, mask, beta=1 - 1e-6)[0]
    assert small / 1e-6 == pytest.approx(forward_kl(zs, zt, mask)[0], rel=1e-4)
    assert big / 1e-6 == pytest.approx(reverse_kl(zs, zt, mask)[0], rel=1e-4)


@pytest.mark.parametrize(
    "f",
    [
        lambda zs, zt, m: forward_kl(zs, zt, m),
        lambda zs, zt, m: reverse_kl(zs, zt, m),
        lambda zs, zt, m: generalized_jsd(zs, zt, m, beta=0.3),
        lambda zs, zt, m: generalized_jsd(zs, zt, m, beta=0.5, temperature=1.5),
        lambda zs, zt, m: forward_kl(zs, zt, m, temperature=0.5),
        lambda zs, zt, m: reverse_kl(zs, zt, m, temperature=2.0),
    ],
)
def test_gradients_match_finite_differences(f):
    zs, zt, mask = _case(2)
    _, g = f(zs, zt, mask)
    fd = fd_grad(lambda z: f(z, zt, mask)[0], zs)
    np.testing.assert_allclose(g, fd, rtol=0, atol=1e-8)
    assert (g[mask == 0] == 0).all()
    np.testing.assert_allclose(g.sum(axis=-1), 0.0, atol=1e-15)  # softmax: each row sums to 0


def test_zero_at_the_teacher_and_defaults():
    zs, zt, mask = _case(3)
    for f in (forward_kl, reverse_kl, generalized_jsd):
        loss, g = f(zt + 4.0, zt, mask)  # a shift of the logits: the same distribution
        assert abs(loss) < 1e-14 and np.abs(g).max() < 1e-14
    pairs = [
        (generalized_jsd(zs, zt, mask), generalized_jsd(zs, zt, mask, beta=0.5, temperature=1.0)),
        (forward_kl(zs, zt, mask), forward_kl(zs, zt, mask, temperature=1.0)),
        (reverse_kl(zs, zt, mask), reverse_kl(zs, zt, mask, temperature=1.0)),
    ]
    for (a, ga), (b, gb) in pairs:
        assert a == b and np.array_equal(ga, gb)
    assert generalized_jsd(zs, zt, mask)[0] != generalized_jsd(zs, zt, mask, beta=0.4)[0]


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_jsd_terms_is_the_divergence_on_log_probabilities(beta):
    zs, zt, mask = _case(4)
    ls, lt = log_softmax(zs / 2.0), log_softmax(zt / 2.0)
    loss, g = jsd_terms(ls, lt, mask / mask.sum(), 2.0, beta)  # weights: the token mean
    ref, g_ref = generalized_jsd(zs, zt, mask, beta=beta, temperature=2.0)
    assert loss == ref and np.array_equal(g, g_ref)
    loss2, g2 = jsd_terms(ls, lt, 2.0 * mask / mask.sum(), 2.0, beta)  # linear in the weights
    assert loss2 == pytest.approx(2.0 * loss, rel=1e-14) and np.allclose(g2, 2.0 * g, rtol=1e-14, atol=0)


def test_empty_mask_gives_zero_as_trl_clamps():
    zs, zt, _ = _case()
    loss, g = generalized_jsd(zs, zt, np.zeros((B, T)), beta=0.5)
    assert loss == 0.0 and (g == 0).all()


def test_holes_equal_compacted_rows():
    zs, zt, mask = _case(4)
    keep = mask.astype(bool)
    loss, g = reverse_kl(zs, zt, mask)
    loss_c, g_c = reverse_kl(zs[keep][None], zt[keep][None], np.ones((1, keep.sum())))
    assert loss == pytest.approx(loss_c, rel=1e-14)
    np.testing.assert_allclose(g[keep], g_c[0], rtol=1e-13)


def test_errors_name_the_argument():
    zs, zt, mask = _case()
    msg = raises(ValueError, lambda: generalized_jsd(zs, zt, mask, beta=1.5))
    assert msg == "beta: expected a number >= 0 and <= 1, got 1.5"
    assert raises(ValueError, lambda: forward_kl(zs, zt[:, :2], mask)).startswith("teacher_logits:")
    assert raises(ValueError, lambda: reverse_kl(zs, zt, mask, temperature=0.0)).startswith("temperature:")
    assert raises(ValueError, lambda: reverse_kl(zs, zt, mask[:, :2])).startswith("mask:")
    big = zs.copy()
    big[0, 0, 0] = 1e308
    assert raises(ValueError, lambda: forward_kl(big, zt, mask, temperature=1e-300)).startswith("forward_kl:")


@pytest.mark.parametrize(
    "f, what",
    [
        (lambda zs, zt, m: forward_kl(zs, zt, m, temperature=1e-300), "forward_kl"),
        (lambda zs, zt, m: reverse_kl(zs, zt, m, temperature=1e-300), "reverse_kl"),
        (lambda zs, zt, m: generalized_jsd(zs, zt, m, beta=0.5, temperature=1e-300), "generalized_jsd"),
        (lambda zs, zt, m: generalized_jsd(zs, zt, m, beta=0.0, temperature=1e-300), "generalized_jsd"),
    ],
)
def test_overflow_is_an_error_naming_the_function(f, what):
    zs, zt, mask = _case(5)
    zs[0, 0, 0] = 1e308  # / 1e-300 overflows to inf: inf - inf in the log-softmax
    msg = raises(ValueError, lambda: f(zs, zt, mask))
    assert msg.startswith(f"{what}: expected a finite loss and dloss_dlogits, got "), msg
    assert "student_logits in [" in msg and "temperature = 1e-300" in msg, msg
