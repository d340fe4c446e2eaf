"""f-DPO's scores (`family_div.f_score`) and TR-DPO's reference update (`sync_reference`): the
scores' derivatives and limits, the update against TRL's callback, impossible tokens, the errors."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.direct.family_div import DIVERGENCES, f_score, sync_reference
from quiet import raises

FD_TOL = 1e-8  # central differences in float64 (tests/gradcheck.py)


@pytest.mark.parametrize("div", DIVERGENCES)
@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.7])
def test_score_derivative_matches_finite_differences(div, alpha):
    h = np.linspace(-3.0, 2.0, 11)
    s, ds = f_score(h, div, alpha)
    fd = np.array([fd_grad(lambda x: float(f_score(x, div, alpha)[0][0]), h[i : i + 1])[0] for i in range(h.size)])
    assert np.abs(ds - fd).max() < FD_TOL


def test_scores_are_f_prime_of_the_ratio():
    # eq. (f_score): s(h) = f'(t), t = e^h, with each divergence's f'
    h = np.array([-1.2, 0.0, 0.4])
    t = np.exp(h)
    assert np.allclose(f_score(h, "reverse_kl", 0.5)[0], h, rtol=0, atol=0)
    assert np.abs(f_score(h, "forward_kl", 0.5)[0] - (1 - 1 / t)).max() < 1e-15
    assert np.abs(f_score(h, "js_divergence", 0.5)[0] - np.log(2 * t / (t + 1))).max() < 1e-15
    assert np.abs(f_score(h, "alpha_divergence", 0.3)[0] - (t**-0.7 - 1) / -0.7).max() < 1e-15
    assert (f_score(h, "alpha_divergence", 1.0 + 1e-7)[0] == h).all()  # TRL's fallback to reverse_kl


def test_sync_reference_is_trl_soft_update():
    """TRL 1.16.0 `trl/trainer/callbacks.py` lines 130-132, `SyncRefModelCallback._sync_target_model`:
    `target_param.data.mul_(1.0 - alpha).add_(copy_param.data, alpha=alpha)`, called every
    `ref_model_sync_steps` steps (line 151) with `ref_model_mixup_alpha`."""
    rng = np.random.default_rng(0)
    ref, theta = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    for alpha in (0.0, 0.6, 1.0):
        want = ref.copy() * (1.0 - alpha) + alpha * theta
        got = sync_reference(ref, theta, alpha)
        assert np.abs(got - want).max() < 1e-15
    assert (sync_reference(ref, theta, 0.0) == ref).all() and (sync_reference(ref, theta, 1.0) == theta).all()


def test_sync_reference_is_a_geometric_mixture_per_state_and_keeps_impossible_tokens():
    ref = np.array([[0.0, 1.0, -np.inf], [0.5, -np.inf, 0.2]])
    theta = np.array([[2.0, -1.0, -np.inf], [0.1, 0.3, 0.0]])
    new = sync_reference(ref, theta, 0.25)
    assert new[0, 2] == -np.inf and new[1, 1] == -np.inf  # -inf in either stays (weight > 0)
    assert sync_reference(ref, theta, 1.0)[1, 1] == 0.3  # a weight 0 drops it, no NaN
    kept = sync_reference(theta, ref, 0.0)  # the policy's -inf at weight 0: the reference, exactly
    assert (kept == theta).all() and kept[1, 1] == 0.3
    assert np.isfinite(sync_reference(ref, ref, 0.5)[0, :2]).all()
    p, q, m = TabularPolicy(ref).probs(), TabularPolicy(theta).probs(), TabularPolicy(new).probs()
    with np.errstate(divide="ignore"):
        geo = np.exp(0.75 * np.log(p[0]) + 0.25 * np.log(q[0]))
    assert np.abs(m[0] - geo / geo.sum()).max() < 1e-15
    assert ref[0, 0] == 0.0 and theta[0, 0] == 2.0  # inputs untouched


def test_sync_reference_errors():
    ref = np.zeros((2, 3))
    assert raises(ValueError, lambda: sync_reference(ref, np.zeros((3, 2)), 0.5)).startswith("theta:")
    assert (
        raises(ValueError, lambda: sync_reference(ref, ref, 1.5))
        == "mixup: expected a number >= 0 and <= 1, got 1.5"
    )
    assert raises(ValueError, lambda: sync_reference(ref + np.inf, ref, 0.5)).startswith("theta_ref:")
    # a row of -inf only is no policy, in an input or in the mix of two whose supports do not meet
    dead = np.array([[0.0, 0.0, 0.0], [-np.inf, -np.inf, -np.inf]])
    assert raises(ValueError, lambda: sync_reference(dead, ref, 0.5)).startswith(
        "theta_ref: expected a finite entry in every row"
    )
    a, b = np.array([[0.0, -np.inf]]), np.array([[-np.inf, 0.0]])
    assert raises(ValueError, lambda: sync_reference(a, b, 0.5)) == (
        "theta: expected a finite entry where theta_ref has one, in every row (the mix at mixup = 0.5 is -inf "
        "where either is), got row 0 with none in common"
    )
    assert sync_reference(a, b, 1.0).tolist() == [[-np.inf, 0.0]]  # the end points are the tables themselves
    assert sync_reference(a, b, 0.0).tolist() == [[0.0, -np.inf]]


def test_the_alpha_score_falls_back_to_reverse_kl_only_within_1e_6_of_alpha_1():
    h = np.array([-10.0, 3.0])
    a1 = 2e-6  # alpha - 1 beyond the fallback: the alpha score itself, not h
    s, ds = f_score(h, "alpha_divergence", 1.0 + a1)
    assert np.abs(s - np.expm1(a1 * h) / a1).max() < 1e-12 and not np.array_equal(s, h)
    assert np.abs(ds - np.exp(a1 * h)).max() < 1e-15 and not (ds == 1.0).all()


def test_f_score_declares_its_arguments_and_names_itself_for_an_overflow():
    assert raises(ValueError, lambda: f_score([0.0], "kl", 0.5)).startswith("divergence: expected one of ")
    assert raises(ValueError, lambda: f_score([[0.0]], "forward_kl")).startswith("h: expected shape ")
    msg = raises(ValueError, lambda: f_score([-800.0], "forward_kl"))  # e^800
    assert msg.startswith(
        "f_score: expected a finite s and ds_dh, got inf (beyond float64) from h in [-800, -800]"
    )


def test_sync_reference_reads_minus_inf_as_an_impossible_token_and_refuses_nan():
    ref = np.array([[0.0, -np.inf]])
    np.testing.assert_array_equal(sync_reference(ref, [[1.0, 2.0]], 0.5), [[0.5, -np.inf]])
    np.testing.assert_array_equal(sync_reference(ref, [[1.0, 2.0]], 1.0), [[1.0, 2.0]])  # weight 0 drops -inf
    assert raises(ValueError, lambda: sync_reference([[np.nan, 0.0]], ref, 0.5)).startswith(
        "theta_ref: expected no NaN"
    )
    assert raises(ValueError, lambda: sync_reference(ref, [[0.0, -np.inf, 0.0]], 0.5)) == (
        "theta: expected shape (1, 2), got (1, 3)"
    )
    assert raises(TypeError, lambda: sync_reference("x", ref, 0.5)).startswith(
        "theta_ref: expected a real-valued array"
    )


def test_the_mix_names_the_first_row_with_no_finite_entry_in_common():
    theta_ref = np.array([[0.0, 0.0], [0.0, -np.inf]])
    theta = np.array([[0.0, 0.0], [-np.inf, 0.0]])  # row 0 shares both entries, row 1 none
    assert raises(ValueError, lambda: sync_reference(theta_ref, theta, 0.5)) == (
        "theta: expected a finite entry where theta_ref has one, in every row (the mix at mixup = 0.5 "
        "is -inf where either is), got row 1 with none in common"
    )
