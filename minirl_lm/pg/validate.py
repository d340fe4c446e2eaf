"""The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
yet declared with `boundary.py` (REINFORCE++, OPO), `pg/targets.py` (MaxRL,
pass@k), `pg/tokenbaseline.py` (the optimal token baseline),
`pg/shaping.py` (dynamic sampling, overlong shaping) and of the chapter's toy, `tasks.py`.
Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    RETURNS_HOLES,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    nonempty,
    rng_check,
    same_shape,
)


def whitening(std_eps, ddof):
    """``(std_eps, ddof)`` of a std or variance: the stabilizer std_eps >= 0, ddof the int 0 or 1."""
    return float_scalar(std_eps, "std_eps", low=0.0), int_scalar(ddof, "ddof", low=0, high=1)


def group_rewards(rewards, bound, name="rewards"):
    """Rewards ``(N, K)``, N, K >= 1, finite, every ``|r| <= bound`` (the advantages' domain)."""
    r = float_array(rewards, name, ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"{name}: expected K >= 1 responses per prompt (shape (N, K)), got shape {r.shape}")
    if r.shape[0] < 1:
        raise ValueError(f"{name}: expected N >= 1 prompts (shape (N, K)), got shape {r.shape}")
    if np.abs(r).max() > bound:
        raise ValueError(
            f"{name}: expected |r| <= {bound:g} (the standardized baseline "
            f"squares the spread, which overflows float64 beyond ~1e154), got max "
            f"|r| = {np.abs(r).max():g}"
        )
    return r


def maxrl_args(rewards, bound):
    """Rewards ``(N, K)`` of MaxRL: group_rewards' and every ``R >= 0`` (the mean is a rate)."""
    r = group_rewards(rewards, bound)
    if r.min() < 0:
        raise ValueError(
            f"rewards: expected R >= 0 (MaxRL divides by the group's mean reward), got min {r.min():g}"
        )
    return r


def passk_args(rewards, k, std_eps, bound):
    """``(r (N, K), k in [1, K], std_eps None or >= 0)`` of the pass@k advantages."""
    r = group_rewards(rewards, bound)
    k = int_scalar(k, "k", low=1, high=r.shape[1])
    return r, k, None if std_eps is None else float_scalar(std_eps, "std_eps", low=0.0)


def otb_args(rewards, mask, logp_old, sum_pi_sq, K, w_eps):
    """``(r (B,), mask, p (B, T), s2 (B, T), K, w_eps)`` of the optimal token baseline: B a
    multiple of K, logp_old <= 0 on the trained tokens, ``sum_pi_sq`` in [p^2, 1] there."""
    mask = mask_array(mask, "mask")
    B = mask.shape[0]
    r = float_array(rewards, "rewards", ndim=1, shape=(B,))
    lp = float_array(logp_old, "logp_old", shape=mask.shape)
    s2 = float_array(sum_pi_sq, "sum_pi_sq", shape=mask.shape)
    K = int_scalar(K, "K", low=1)
    if B == 0 or B % K:
        raise ValueError(f"K: expected a divisor of the batch size B = {B} (groups of K rows), got {K}")
    on = mask > 0
    if (lp[on] > 0).any():
        raise ValueError(f"logp_old: expected log-probs <= 0 on the trained tokens, got max {lp[on].max():g}")
    p = np.exp(np.minimum(lp, 0.0))  # (B, T)
    if ((s2 < p * p * (1 - 1e-12)) | (s2 > 1.0 + 1e-12))[on].any():
        raise ValueError("sum_pi_sq: expected sum_v pi(v|s)^2 in [pi(y|s)^2, 1] on the trained tokens")
    return r, mask, p, s2, K, float_scalar(w_eps, "w_eps", low=0.0)


def reward_groups(rewards):
    """Rewards ``(N, K)`` of dynamic sampling: finite, N, K >= 1 (no bound on |r|)."""
    r = float_array(rewards, "rewards", ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"rewards: expected K >= 1 responses per prompt, got shape {r.shape}")
    return nonempty(r, "rewards")  # N >= 1 groups


def acceptance_args(p, K):
    """``(p, K)``: a probability in [0, 1] and a group size >= 1."""
    return float_scalar(p, "p", low=0.0, high=1.0), int_scalar(K, "K", low=1)


def overlong_args(lengths, max_len, buffer_len, penalty_factor):
    """``(lengths (B,) int64 in [0, max_len], max_len, buffer_len, penalty_factor)``; max_len
    <= 2**62 so that the lengths' arithmetic stays within int64."""
    max_len = int_scalar(max_len, "max_len", low=1, high=2**62)
    buffer_len = int_scalar(buffer_len, "buffer_len", low=1, high=max_len)
    L = int_array(lengths, "lengths", ndim=1, low=0, high=max_len + 1)
    return L, max_len, buffer_len, float_scalar(penalty_factor, "penalty_factor", low=0.0)


def truncation_args(tokens, mask, eos):
    """``(tokens (B, T) int64 ids >= 0, mask (B, T), eos >= 0)``."""
    mask = mask_array(mask, "mask")
    tokens = int_array(tokens, "tokens", ndim=2, low=0)
    same_shape("mask", mask, "tokens", tokens)
    return tokens, mask, int_scalar(eos, "eos", low=0)


def rpp_args(token_rewards, mask, gamma, std_eps, ddof):
    """``(token_rewards (B, T), mask, gamma in [0, 1], std_eps, ddof)`` of REINFORCE++ (the mask
    right-padded: the returns to go sum over the later tokens)."""
    mask = mask_array(
        mask, "mask", prefix=("REINFORCE++'s returns to go (a sum over the later tokens)", RETURNS_HOLES)
    )
    r = float_array(token_rewards, "token_rewards", shape=mask.shape)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    return (r, mask, gamma, *whitening(std_eps, ddof))


def rpp_baseline_args(rewards, mask, std_eps, ddof, bound):
    """``(r (N, K), mask (N*K, T), std_eps, ddof)`` of REINFORCE++-baseline."""
    r = group_rewards(rewards, bound)
    mask = mask_array(mask, "mask")
    if mask.shape[0] != r.size:
        raise ValueError(f"mask: expected {r.size} rows (one per response, B = N*K), got shape {mask.shape}")
    return (r, mask, *whitening(std_eps, ddof))


def opo_args(rewards, lengths, bound):
    """``(r (N, K), lengths (N, K) >= 0)`` of OPO."""
    r = group_rewards(rewards, bound)
    L = float_array(lengths, "lengths", shape=r.shape)
    if L.min() < 0:
        raise ValueError(f"lengths: expected >= 0, got min {L.min()}")
    return r, L


def resampling(a, p, K):
    """The acceptance probability ``a`` of dynamic sampling if > 0 (else resampling never ends)."""
    if a <= 0:
        raise ValueError(
            f"p: expected 0 < p < 1 (at p = {p} every group of K = {K} has equal "
            f"rewards and resampling never ends)"
        )
    return a


# ---- pg/entropy_knobs.py (after the token batch's own bundle in pg/checks.py) ----------------
def entropy_step_args(theta, delta):
    """``delta``: a finite step of the shape of the checked logits ``theta`` ``(S, V)``."""
    delta = float_array(delta, "delta", ndim=2)
    same_shape("theta", theta, "delta", delta)
    return delta


def clip_cov_args(ratio, lb, ub, rng):
    """Clip-Cov's own arguments: ratio in (0, 1], cov_lb < cov_ub, rng a Generator or None."""
    ratio = float_scalar(ratio, "ratio", low=0.0, low_open=True, high=1.0)
    lb, ub = float_scalar(lb, "cov_lb"), float_scalar(ub, "cov_ub")
    if not lb < ub:
        raise ValueError(f"cov_ub: expected > cov_lb = {lb}, got {ub}")
    if rng is not None:
        rng_check(rng, "rng")
    return ratio, lb, ub


def kl_cov_args(ratio, kl_coef):
    """KL-Cov's own arguments: ratio in (0, 1], kl_coef >= 0."""
    return float_scalar(ratio, "ratio", low=0.0, low_open=True, high=1.0), float_scalar(
        kl_coef, "kl_coef", low=0.0
    )


def mask_args(entropies, mask, rho_h, shape=None):
    """Token entropies ``(B, T)`` >= 0 at trained tokens, the 0/1 mask, rho_h in [0, 1]."""
    entropies = float_array(entropies, "entropies", ndim=2, shape=shape)
    mask = mask_array(mask, "mask")
    same_shape("entropies", entropies, "mask", mask)
    if (entropies[mask > 0] < 0).any():
        raise ValueError(f"entropies: expected >= 0 at trained tokens, got {entropies[mask > 0].min()}")
    return entropies, mask, float_scalar(rho_h, "rho_h", low=0.0, high=1.0)


def adaptive_args(coef, entropy, target, delta, coef_min, coef_max):
    """The controller's scalars: coef, entropy, target, delta >= 0; 0 <= coef_min <= coef_max."""
    names = ("coef", "entropy", "target", "delta", "coef_min", "coef_max")
    vals = [float_scalar(v, n, low=0.0) for v, n in zip((coef, entropy, target, delta, coef_min, coef_max), names)]
    if vals[5] < vals[4]:
        raise ValueError(f"coef_max: expected >= coef_min = {vals[4]}, got {vals[5]}")
    return vals
