"""The boundary of the direct-alignment part: one bundle call per public function of
`direct/dpo.py`, `direct/preferences.py`, `direct/family.py` and `direct/family_div.py` (pairs,
sequence log-probs, weights, the online loop's judge and sizes, the loss types), checking the
argument set in the order the messages have always come in and returning what the math trusts.
Built on `core/checks.py`; NumPy only."""

import numbers

import numpy as np

from minirl_lm.core.checks import (
    _asarray,
    callable_check,
    choice,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    prob_table,
    rng_check,
    same_shape,
)
from minirl_lm.core.validate import MAX_DRAWS


def bt_pairs(r_chosen, r_rejected):
    """`(P,)` rewards of the chosen and the rejected responses, `P >= 1`."""
    r_c = float_array(r_chosen, "r_chosen", ndim=1)
    r_r = float_array(r_rejected, "r_rejected", ndim=1)
    same_shape("r_chosen", r_c, "r_rejected", r_r)
    if r_c.size == 0:
        raise ValueError("r_chosen: expected at least one pair, got shape (0,)")
    return r_c, r_r


def reward_table_pairs(r_phi, prompt, chosen, rejected):
    """An `(N, Y)` reward table and `P >= 1` pairs of ids into it."""
    r_phi = float_array(r_phi, "r_phi", ndim=2)
    N, Y = r_phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    chosen = int_array(chosen, "chosen", shape=prompt.shape, low=0, high=Y)
    rejected = int_array(rejected, "rejected", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one pair, got shape (0,)")
    return r_phi, prompt, chosen, rejected


def pair_weights(weights, P, what="pair weights"):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative {what}, got min {w.min()}")
    return w


def dpo_args(seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, variant, label_smoothing, weights):
    """`dpo_loss`'s arguments: four `(P,)` sequence log-probs, beta, the variant, alpha, w."""
    lc = float_array(seq_logp_c, "seq_logp_c", ndim=1)
    lr = float_array(seq_logp_r, "seq_logp_r", ndim=1)
    lrc = float_array(seq_logp_ref_c, "seq_logp_ref_c", ndim=1)
    lrr = float_array(seq_logp_ref_r, "seq_logp_ref_r", ndim=1)
    for name, a in (("seq_logp_r", lr), ("seq_logp_ref_c", lrc), ("seq_logp_ref_r", lrr)):
        same_shape("seq_logp_c", lc, name, a)
    if lc.size == 0:
        raise ValueError("seq_logp_c: expected at least one pair, got shape (0,)")
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    choice(variant, "variant", {"dpo", "ipo", "conservative"})
    ls = float_scalar(label_smoothing, "label_smoothing", low=0.0, high=0.5)
    if ls != 0.0 and variant != "conservative":
        raise ValueError(
            f"label_smoothing: expected 0 unless variant='conservative', got {ls} with variant={variant!r}"
        )
    return lc, lr, lrc, lrr, beta, ls, pair_weights(weights, lc.size)


def token_grad_args(dseq, mask):
    """A `(B,)` sequence gradient and its `(B, T)` mask."""
    dseq = float_array(dseq, "dseq", ndim=1)
    return dseq, mask_array(mask, "mask", shape=(dseq.size, None))


def bt_sample_args(reward, mu, n_pairs, rng, mu0):
    """`bt_sample_preferences`' arguments; `n_pairs` bounded before anything is allocated."""
    reward = float_array(reward, "reward", ndim=2)
    mu = prob_table(mu, "mu", shape=reward.shape)
    N = reward.shape[0]
    n_pairs = int_scalar(n_pairs, "n_pairs", low=1, high=MAX_DRAWS)
    rng = rng_check(rng, "rng")
    mu0 = np.full(N, 1.0 / N) if mu0 is None else prob_table(mu0, "mu0", shape=(N,))
    return reward, mu, n_pairs, rng, mu0


def response_batch(logp, mask, lname, mname, rows=None):
    """`(B, T)` token log-probs (`<= 0` on real tokens) and their 0/1 mask (holes allowed)."""
    logp = float_array(logp, lname, ndim=2)
    if rows is not None and logp.shape[0] != rows:
        raise ValueError(f"{lname}: expected {rows} rows (one per pair), got shape {logp.shape}")
    mask = mask_array(mask, mname, shape=logp.shape)
    real = mask > 0  # (B, T)
    if (logp[real] > 0).any():
        raise ValueError(f"{lname}: expected log-probs <= 0 on real tokens, got max {logp[real].max()}")
    return logp, mask


def pair_batch(logp_c, mask_c, logp_r, mask_r, weights):
    """Chosen and rejected token log-probs and masks of `P` pairs, and the pair weights."""
    logp_c, mask_c = response_batch(logp_c, mask_c, "logp_c", "mask_c")
    P = logp_c.shape[0]
    logp_r, mask_r = response_batch(logp_r, mask_r, "logp_r", "mask_r", rows=P)
    return logp_c, mask_c, logp_r, mask_r, pair_weights(weights, P, "weights")


def ipo_args(logp_c, mask_c, logp_r, mask_r, seq_logp_ref_c, seq_logp_ref_r, beta, average, weights):
    """`ipo_loss`'s arguments."""
    logp_c, mask_c, logp_r, mask_r, w = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    P = (logp_c.shape[0],)
    ref_c = float_array(seq_logp_ref_c, "seq_logp_ref_c", shape=P)
    ref_r = float_array(seq_logp_ref_r, "seq_logp_ref_r", shape=P)
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    if not isinstance(average, (bool, np.bool_)):
        raise TypeError(f"average: expected True or False, got {average!r}")
    return logp_c, mask_c, logp_r, mask_r, ref_c, ref_r, beta, w


def simpo_args(logp_c, mask_c, logp_r, mask_r, beta, gamma, weights):
    """`simpo_loss`'s arguments."""
    batch = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    return (*batch, float_scalar(beta, "beta", low=0.0, low_open=True), float_scalar(gamma, "gamma", low=0.0))


def orpo_args(logp_c, mask_c, logp_r, mask_r, lam, weights):
    """`orpo_loss`'s arguments; each response nonempty, of mean log-prob < 0 (finite odds)."""
    batch = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    lam = float_scalar(lam, "lam", low=0.0)
    for name, logp, mask in (("logp_c", batch[0], batch[1]), ("logp_r", batch[2], batch[3])):
        n = mask.sum(axis=1)  # (P,)
        if (n == 0).any():
            raise ValueError(
                f"{name}: expected nonempty responses for ORPO (an empty response "
                f"has probability 1), got an empty one at pair {int(np.argmin(n))}"
            )
        one = ((logp == 0) | (mask == 0)).all(axis=1)  # (P,) log pi(y) = 0: s >= 0
        if one.any():
            raise ValueError(
                f"{name}: expected a mean log-prob < 0 for ORPO (probability 1 has "
                f"infinite odds), got 0 at pair {int(np.argmax(one))}"
            )
    return (*batch, lam)


def kto_args(logp, mask, seq_logp_ref, desirable, beta, z0, lambda_d, lambda_u, weights):
    """`kto_loss`'s arguments; the weights lambda_D / lambda_U as one `(B,)` array."""
    logp, mask = response_batch(logp, mask, "logp", "mask")
    B = logp.shape[0]
    ref = float_array(seq_logp_ref, "seq_logp_ref", shape=(B,))
    d = _asarray(desirable, "desirable")  # ragged nesting: a TypeError naming it
    if d.dtype != np.bool_ or d.shape != (B,):
        raise TypeError(
            f"desirable: expected a bool array of shape ({B},), got {d.dtype} array of shape {d.shape}"
        )
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    z0 = float_scalar(z0, "z0", low=0.0)
    lam_d = float_scalar(lambda_d, "lambda_d", low=0.0)
    lam_u = float_scalar(lambda_u, "lambda_u", low=0.0)
    return logp, mask, ref, d, beta, z0, lam_d, lam_u, pair_weights(weights, B, "weights")


def probability_result(p, name):
    """A judge's answer as a float probability in [0, 1] (a bool counts: True = 1.0)."""
    if not isinstance(p, numbers.Real):
        raise TypeError(f"{name}: expected a probability (a real number), got {p!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{name}: expected a probability in [0, 1], got {p}")
    return float(p)


def online_dpo_args(mdp, policy, ref, judge, beta, lr, rng, pairs_per_prompt):
    """`online_dpo_step`'s arguments: a TokenMDP, two policies of its table shape, a judge."""
    if not (hasattr(mdp, "rollout") and hasattr(mdp, "prompts")):
        raise TypeError(f"mdp: expected a TokenMDP, got {type(mdp).__name__}")
    callable_check(judge, "judge", 3, "judge(prompt, y_a, y_b)")
    shape = getattr(getattr(policy, "theta", None), "shape", None)
    if shape != (getattr(mdp, "S", None), getattr(mdp, "V", None)) or not all(
        hasattr(policy, m) for m in ("logp", "backward", "sample")
    ):
        raise ValueError(
            f"policy: expected a policy with a table of shape (S, V) = "
            f"({getattr(mdp, 'S', None)}, {getattr(mdp, 'V', None)}), got "
            f"{type(policy).__name__} with shape {shape}"
        )
    if getattr(getattr(ref, "theta", None), "shape", None) != shape or not hasattr(ref, "logp"):
        raise ValueError(
            f"ref: expected a policy with the table shape of policy {shape}, got {type(ref).__name__}"
        )
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    rng_check(rng, "rng")
    N = max(len(mdp.prompts), 1)  # 2 N k responses are drawn
    k = int_scalar(pairs_per_prompt, "pairs_per_prompt", low=1, high=MAX_DRAWS // (2 * N))
    return beta, lr, k


def family_args(
    seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, loss_type, ls, tau, divergence, alpha, weights,
    loss_types, margin,
):  # fmt: skip
    """`dpo_family_loss`'s arguments: `dpo_args`' pairs and beta, the loss type and its options."""
    lc, lr, lrc, lrr, beta, _, w = dpo_args(
        seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, "dpo", 0.0, weights
    )
    choice(loss_type, "loss_type", set(loss_types))
    ls = float_scalar(ls, "label_smoothing", low=0.0, high=0.5)
    tau = float_scalar(tau, "tau", low=0.0, low_open=True)
    choice(divergence, "divergence", {"reverse_kl", "forward_kl", "js_divergence", "alpha_divergence"})
    alpha = float_scalar(alpha, "alpha")
    ok = {"robust": 0.0 <= ls < 0.5, "exo_pair": ls > 0.0}.get(loss_type, ls == 0.0)
    if not ok:
        want = {"robust": "in [0, 0.5)", "exo_pair": "in (0, 0.5]"}.get(loss_type, "0")
        raise ValueError(f"label_smoothing: expected {want} with loss_type={loss_type!r}, got {ls}")
    if divergence != "reverse_kl" and loss_type not in margin:
        raise ValueError(
            f"divergence: expected 'reverse_kl' with loss_type={loss_type!r} (an f-divergence only with "
            f"{', '.join(margin)}), got {divergence!r}"
        )
    return lc, lr, lrc, lrr, beta, ls, tau, alpha, w


def sync_args(theta_ref, theta, mixup):
    """`sync_reference`'s arguments: two `(S, V)` logit tables (`-inf` allowed) and alpha in [0, 1]."""
    theta_ref = float_array(theta_ref, "theta_ref", ndim=2, allow_neginf=True)
    theta = float_array(theta, "theta", shape=theta_ref.shape, allow_neginf=True)
    return theta_ref, theta, float_scalar(mixup, "mixup", low=0.0, high=1.0)
