"""The DPO family (`dpo_family_loss`): every loss type's gradient against finite differences, its
value against TRL's definition re-implemented from the source, the stationary points each loss
type's derivation states, the options each loss accepts, and the overflow named."""

import math

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.direct.dpo import dpo_loss
from minirl_lm.direct.family import LOSS_TYPES, MARGIN, RESPONSE, dpo_family_loss
from minirl_lm.direct.family_div import DIVERGENCES
from quiet import raises, silent

FD_TOL = 1e-8  # central differences, h = 1e-6, float64: error ~ h^2 f''' + 1e-16 |f| / h ~ 1e-10 |f|
EPS = {"robust": 0.1, "exo_pair": 1e-3}  # label_smoothing where a loss takes one
CASES = [(t, d) for t in MARGIN for d in DIVERGENCES] + [(t, "reverse_kl") for t in RESPONSE]


def _pairs(seed=0, P=7, scale=1.5):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=P) * scale - 4.0 for _ in range(4)]


def _call(lc, lr, lrc, lrr, loss_type, div="reverse_kl", beta=0.7, w=None, tau=0.3, alpha=0.5):
    return dpo_family_loss(
        lc,
        lr,
        lrc,
        lrr,
        beta,
        loss_type,
        label_smoothing=EPS.get(loss_type, 0.0),
        tau=tau,
        divergence=div,
        alpha=alpha,
        weights=w,
    )


@pytest.mark.parametrize("loss_type, div", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_matches_finite_differences(loss_type, div, weighted):
    lc, lr, lrc, lrr = _pairs(1)
    w = np.random.default_rng(2).random(lc.size) if weighted else None
    loss, (dc, dr) = _call(lc, lr, lrc, lrr, loss_type, div, w=w)
    fc = fd_grad(lambda x: _call(x, lr, lrc, lrr, loss_type, div, w=w)[0], lc)
    fr = fd_grad(lambda x: _call(lc, x, lrc, lrr, loss_type, div, w=w)[0], lr)
    assert max(np.abs(dc - fc).max(), np.abs(dr - fr).max()) < FD_TOL * max(1.0, abs(loss))


# ---------------------------------------------------------------- TRL's definitions, in NumPy


def _logsig(x):
    return -np.logaddexp(0.0, -x)


def _sig(x):
    return np.exp(_logsig(x))


def trl_loss(lc, lr, lrc, lrr, beta, loss_type, ls, tau, div, alpha):
    """TRL 1.16.0 `trl/trainer/dpo_trainer.py` `DPOTrainer._compute_loss`, re-implemented from the
    source as written: log-ratios at lines 1350-1351, the f-divergence scores at 1353-1381 (the
    alpha exponent clamped at 80, float32's value, line 1375), `delta_score` at 1383; the loss
    types: sigmoid 1387-1388, hinge 1390-1391, exo_pair 1406-1417, nca_pair 1419-1426, robust
    1428-1431, bco_pair 1433-1436, sppo_hard 1438-1445, apo_zero 1467-1473, apo_down 1475-1481,
    discopop 1483-1493 (`discopop_tau`); the mean over the batch at 1528."""
    ch, rj = lc - lrc, lr - lrr
    if div == "reverse_kl":
        cs, rs = ch, rj
    elif div == "forward_kl":
        cs, rs = 1 - np.exp(-ch), 1 - np.exp(-rj)
    elif div == "js_divergence":
        cs, rs = math.log(2) + _logsig(ch), math.log(2) + _logsig(rj)
    elif abs(alpha - 1.0) < 1e-6:
        cs, rs = ch, rj
    else:
        coef = 1.0 / (alpha - 1.0)
        cs = (np.exp(np.minimum((alpha - 1.0) * ch, 80.0)) - 1.0) * coef
        rs = (np.exp(np.minimum((alpha - 1.0) * rj, 80.0)) - 1.0) * coef
    d = cs - rs
    if loss_type == "sigmoid":
        per = -_logsig(beta * d)
    elif loss_type == "hinge":
        per = np.maximum(1 - beta * d, 0.0)
    elif loss_type == "exo_pair":
        qw, log_qw = _sig(beta * d), _logsig(beta * d)
        ql, log_ql = _sig(-beta * d), _logsig(-beta * d)
        per = qw * (log_qw - np.log1p(-ls)) + ql * (log_ql - np.log(ls))
    elif loss_type == "nca_pair":
        c, r = beta * ch, beta * rj
        per = -_logsig(c) - 0.5 * _logsig(-c) - 0.5 * _logsig(-r)
    elif loss_type == "robust":
        clean = -(1 - ls) * _logsig(beta * d)
        flipped = -ls * _logsig(-beta * d)
        per = (clean - flipped) / (1 - 2 * ls)
    elif loss_type == "bco_pair":
        per = -_logsig(beta * ch) - _logsig(-beta * rj)
    elif loss_type == "sppo_hard":
        per = (ch - 0.5 / beta) ** 2 + (rj + 0.5 / beta) ** 2
    elif loss_type == "apo_zero":
        per = (1 - _sig(beta * ch)) + _sig(beta * rj)
    elif loss_type == "apo_down":
        per = _sig(beta * ch) + (1 - _sig(beta * (ch - rj)))
    else:  # discopop
        logits = d * beta
        m = _sig(logits / tau)
        per = -_logsig(logits) * (1 - m) + np.exp(-logits) * m
    return float(per.mean())


@pytest.mark.parametrize("loss_type, div", CASES)
def test_equals_trl_definition(loss_type, div):
    lc, lr, lrc, lrr = _pairs(3, P=9, scale=1.0)
    for beta, alpha in ((0.1, 0.5), (2.0, 1.0), (0.7, 0.3)):
        ls = EPS.get(loss_type, 0.0)
        ours = dpo_family_loss(
            lc, lr, lrc, lrr, beta, loss_type, label_smoothing=ls, tau=0.05, divergence=div, alpha=alpha
        )[0]
        assert abs(ours - trl_loss(lc, lr, lrc, lrr, beta, loss_type, ls, 0.05, div, alpha)) < 1e-12 * max(
            1.0, abs(ours)
        )


# ---------------------------------------------------------------- the derivations' statements


def test_sigmoid_with_reverse_kl_is_dpo_and_robust_at_zero_is_dpo():
    lc, lr, lrc, lrr = _pairs(4)
    want = dpo_loss(lc, lr, lrc, lrr, 0.7)
    for lt in ("sigmoid", "robust"):
        got = dpo_family_loss(lc, lr, lrc, lrr, 0.7, lt)
        assert abs(got[0] - want[0]) < 1e-15 and np.abs(got[1][0] - want[1][0]).max() < 1e-15


def test_robust_is_dpo_minus_a_linear_term():
    # eq. (rdpo) = softplus(-z) - eps/(1 - 2 eps) z: so its population optimum is sigma(z) = (p - eps)/(1 - 2 eps)
    lc, lr, lrc, lrr = _pairs(5)
    eps, beta = 0.2, 0.7
    z = beta * ((lc - lrc) - (lr - lrr))
    got = dpo_family_loss(lc, lr, lrc, lrr, beta, "robust", label_smoothing=eps)[0]
    assert abs(got - np.mean(np.logaddexp(0, -z) - eps / (1 - 2 * eps) * z)) < 1e-14
    p, eps = 0.8, 0.1  # a pair (a, b), a chosen with probability p: sigma(z) = (p - eps)/(1 - 2 eps) = 0.875
    z0 = math.log(0.875 / 0.125)
    g = lambda a, b: dpo_family_loss(
        np.array([a]), np.array([b]), np.zeros(1), np.zeros(1), 1.0, "robust", label_smoothing=eps
    )[1]
    assert abs(p * g(z0, 0.0)[0][0] + (1 - p) * g(0.0, z0)[1][0]) < 1e-15  # d/dh_a: a chosen, a rejected
    assert abs(p * g(0.5, 0.0)[0][0] + (1 - p) * g(0.0, 0.5)[1][0]) > 1e-2  # and not elsewhere


@pytest.mark.parametrize(
    "loss_type, z_star", [("hinge", None), ("exo_pair", math.log((1 - 1e-3) / 1e-3)), ("sppo_hard", None)]
)
def test_stationary_points_of_single_pairs(loss_type, z_star):
    one = lambda a, b: dpo_family_loss(
        np.array([a]),
        np.array([b]),
        np.zeros(1),
        np.zeros(1),
        1.0,
        loss_type,
        label_smoothing=EPS.get(loss_type, 0.0),
    )
    if loss_type == "hinge":  # the kink z = 1 and beyond: zero gradient; below it, -beta
        assert one(1.0, 0.0)[1][0][0] == 0.0 and one(3.0, 0.0)[1][0][0] == 0.0
        assert one(0.5, 0.0)[1][0][0] == -1.0 and one(0.5, 0.0)[0] == 0.5
    elif loss_type == "exo_pair":  # the margin log((1-eps)/eps): KL to (1 - eps, eps) is 0
        loss, (dc, dr) = one(z_star, 0.0)
        assert abs(loss) < 1e-15 and abs(dc[0]) < 1e-15
    else:  # SPPO: h_c = 1/(2 beta), h_r = -1/(2 beta)
        loss, (dc, dr) = one(0.5, -0.5)
        assert loss == 0.0 and dc[0] == 0.0 and dr[0] == 0.0


def test_apo_losses_push_the_way_their_names_say():
    a = lambda lt, c, r: dpo_family_loss(np.array([c]), np.array([r]), np.zeros(1), np.zeros(1), 1.0, lt)[1]
    dc, dr = a("apo_zero", 0.3, -0.2)
    assert dc[0] < 0 < dr[0]  # chosen up, rejected down
    dc, dr = a("apo_down", 0.3, -0.2)
    assert dr[0] > 0 and dc[0] > -dr[0] + 0  # rejected down; chosen pulled down by its own term
    assert a("apo_down", 0.0, 0.0)[0][0] == 0.0  # sigma'(0) - sigma'(0)


def test_discopop_is_finite_far_out_where_the_product_is():
    big = np.array([-400.0, 400.0])
    loss, (dc, dr) = silent(lambda: _call(big, -big, np.zeros(2), np.zeros(2), "discopop", tau=0.05))
    assert np.isfinite(loss) and np.isfinite(dc).all()


def test_defaults_are_pinned():
    lc, lr, lrc, lrr = _pairs(6)
    a = dpo_family_loss(lc, lr, lrc, lrr, 0.5, "discopop")
    b = dpo_family_loss(
        lc,
        lr,
        lrc,
        lrr,
        0.5,
        "discopop",
        label_smoothing=0.0,
        tau=0.05,
        divergence="reverse_kl",
        alpha=0.5,
        weights=np.full(lc.size, 1 / lc.size),
    )
    assert a[0] == b[0] and all((x == y).all() for x, y in zip(a[1], b[1]))
    c = dpo_family_loss(lc, lr, lrc, lrr, 0.5, "sigmoid", divergence="alpha_divergence")  # alpha = 0.5 by default
    d = dpo_family_loss(lc, lr, lrc, lrr, 0.5, "sigmoid", divergence="alpha_divergence", alpha=0.5)
    assert c[0] == d[0] != a[0]
    assert set(LOSS_TYPES) == set(MARGIN) | set(RESPONSE) and len(LOSS_TYPES) == 10


# ---------------------------------------------------------------- errors


def test_options_outside_their_loss_are_rejected():
    lc, lr, lrc, lrr = _pairs(7)
    msg = raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "hinge", label_smoothing=0.1))
    assert msg == "label_smoothing: expected 0 with loss_type='hinge', got 0.1"
    msg = raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "robust", label_smoothing=0.5))
    assert msg == "label_smoothing: expected in [0, 0.5) with loss_type='robust', got 0.5"
    msg = raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "exo_pair"))
    assert msg == "label_smoothing: expected in (0, 0.5] with loss_type='exo_pair', got 0.0"
    msg = raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "bco_pair", divergence="forward_kl"))
    assert msg.startswith("divergence: expected 'reverse_kl' with loss_type='bco_pair'")
    assert raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "aot")).startswith("loss_type:")
    assert raises(ValueError, lambda: dpo_family_loss(lc, lr, lrc, lrr, 0.5, "discopop", tau=0.0)).startswith(
        "tau:"
    )


def test_an_overflow_names_the_function_and_the_range_of_its_inputs():
    one = np.array([-1.0])
    huge = np.array([-1e308])
    calls = [
        lambda: dpo_family_loss(huge, one, -huge, one, 0.5, "sigmoid"),  # h_c = -inf
        lambda: dpo_family_loss(one, one, one, one, 1e-308, "sppo_hard"),  # 1/(2 beta) = inf
        lambda: dpo_family_loss(np.array([-800.0]), one, one, one, 1.0, "sigmoid", divergence="forward_kl"),
    ]
    for call in calls:
        msg = raises(ValueError, call)
        assert msg.startswith("dpo_family_loss: expected a finite loss") and "(beyond float64) from " in msg, msg
        assert "seq_logp_c in [" in msg and "beta = " in msg and "tau = " in msg
    assert "beta = 1e-308" in raises(ValueError, calls[1])
    # DiscoPOP at the smallest tau: z / tau = inf, handled (the mixing weight is a step), finite
    assert np.isfinite(silent(lambda: dpo_family_loss(one, 2 * one, one, one, 1.0, "discopop", tau=5e-324))[0])


def test_family_weights_reach_the_gradient_and_the_divergence_message_lists_the_margin_losses():
    a = np.array([-1.0, -2.0])
    _, (dc, dr) = dpo_family_loss(a, a - 1, a, a, 1.0, "sigmoid", weights=np.array([1.0, 0.0]))
    _, (uc, _) = dpo_family_loss(a, a - 1, a, a, 1.0, "sigmoid")  # the default: 1/P each
    assert dc[1] == 0.0 and dc[0] == 2 * uc[0] and np.array_equal(dr, -dc)
    assert raises(
        ValueError, lambda: dpo_family_loss(a, a - 1, a, a, 1.0, "bco_pair", divergence="js_divergence")
    ) == (
        "divergence: expected 'reverse_kl' with loss_type='bco_pair' (an f-divergence only with "
        "sigmoid, hinge, robust, exo_pair, discopop), got 'js_divergence'"
    )
