"""GDPO (multireward.py): its per-reward invariances, exactly or to rounding, and TRL's lines.

Invariances to a shift or a scale of one reward hold in exact arithmetic; in float64 the
centring `R - mean` rounds differently, so they are checked to 1e-12 (advantages are O(1)). A
reward constant in its group adds exactly 0 (bitwise)."""

import numpy as np
import pytest

from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.multireward import gdpo
from quiet import names, silent


def rewards(seed, N=4, K=6, M=3):
    rng = np.random.default_rng(seed)
    r = np.stack([rng.integers(0, 2, (N, K)), rng.normal(size=(N, K)), rng.uniform(0, 5, (N, K))], axis=2)
    return r[:, :, :M].astype(float)


@pytest.mark.parametrize("batch_eps", [None, 1e-4])
def test_gdpo_is_invariant_to_a_shift_or_a_positive_scale_of_one_reward(batch_eps):
    r = rewards(0)
    w = np.array([1.0, 0.5, 2.0])
    A = gdpo(r, weights=w, std_eps=0.0, ddof=1, batch_eps=batch_eps)
    for m in range(3):
        for shift, scale in ((7.5, 1.0), (0.0, 13.0), (-2.0, 0.01)):
            r2 = r.copy()
            r2[:, :, m] = scale * r2[:, :, m] + shift
            np.testing.assert_allclose(
                gdpo(r2, weights=w, std_eps=0.0, ddof=1, batch_eps=batch_eps), A, rtol=0, atol=1e-12
            )
    # summed first, scaling one reward changes the advantages
    summed = lambda x: standardized((x * w).sum(axis=2), 0.0, 1)  # noqa: E731
    r2 = r.copy()
    r2[:, :, 2] *= 13.0
    assert np.abs(summed(r2) - summed(r)).max() > 0.1


def test_gdpo_a_reward_constant_in_its_group_adds_exactly_zero():
    r = rewards(1)
    r[2, :, 0] = 1.0  # reward 0 constant in group 2 (all correct)
    r[3, :, 1] = 0.3  # reward 1 constant in group 3
    A = silent(lambda: gdpo(r, std_eps=0.0))
    assert np.isfinite(A).all()
    assert A[2].tolist() == gdpo(r[2:3, :, 1:], std_eps=0.0)[0].tolist()  # ranked by the others alone
    assert A[3].tolist() == gdpo(r[3:4, :, ::2], std_eps=0.0)[0].tolist()
    flat = np.full((2, 4, 2), 0.7)
    assert gdpo(flat, std_eps=0.0).tolist() == [[0.0] * 4] * 2
    assert gdpo(flat, std_eps=0.0, batch_eps=0.0).tolist() == [[0.0] * 4] * 2
    assert gdpo(r[:, :1]).tolist() == [[0.0]] * 4  # K = 1


def test_gdpo_with_one_reward_is_the_standardized_baseline_and_defaults():
    r = rewards(2)
    assert gdpo(r[:, :, 1:2]).tolist() == standardized(r[:, :, 1]).tolist()
    assert gdpo(r).tolist() == gdpo(r, weights=np.ones(3), std_eps=1e-8, ddof=0, batch_eps=None).tolist()
    names("rewards", "shape (N, K, M)", lambda: gdpo(r[:, :, 0]))
    names("weights", "shape", lambda: gdpo(r, weights=[1.0, 2.0]))
    names("batch_eps", ">= 0", lambda: gdpo(r, batch_eps=-1.0))


def trl_normalize_then_sum(rewards_per_func, weights, K):
    """TRL 1.16.0 trl/trainer/grpo_trainer.py:2790-2799 (multi_objective_aggregation=
    "normalize_then_sum"): per reward, (r - mean) / (nanstd + 1e-4) in the group, the weighted
    sum, then (A - mean) / (nanstd + 1e-4) over the batch (nanstd: Bessel's)."""
    grouped = rewards_per_func.reshape(-1, K, rewards_per_func.shape[1])
    mean_k = grouped.mean(axis=1, keepdims=True)
    std_k = grouped.std(axis=1, ddof=1, keepdims=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).reshape(-1, rewards_per_func.shape[1])
    rw = (reward_k * weights[None, :]).sum(axis=1)
    return (rw - rw.mean()) / (rw.std(ddof=1) + 1e-4)


def test_gdpo_against_trl():
    r = rewards(3)
    w = np.array([1.0, 0.5, 2.0])
    want = trl_normalize_then_sum(r.reshape(-1, 3), w, r.shape[1])
    np.testing.assert_allclose(
        gdpo(r, weights=w, std_eps=1e-4, ddof=1, batch_eps=1e-4).ravel(), want, rtol=0, atol=1e-13
    )


def test_rewards_beyond_the_domain_and_an_overflowing_sum_are_named():
    r = np.zeros((1, 2, 2))
    r[0, 0, 0] = 1e151
    names("rewards", "<= 1e+150", lambda: gdpo(r))
    r = np.array([[[0.0, 0.0], [1.0, 1.0]]])  # each reward standardized: +-1
    A = silent(lambda: gdpo(r, weights=[1e308, 1.0]))  # +-1e308 (1 - 1e-8), finite
    assert np.isfinite(A).all() and A[0, 1] > 9e307
    names("gdpo", "weights in [1e+308, 1e+308]", lambda: gdpo(r, weights=[1e308, 1e308]))  # the sum: +-2e308
