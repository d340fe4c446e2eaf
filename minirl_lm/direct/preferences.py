"""Preferences beyond DPO: IPO summed or averaged, SimPO, ORPO, KTO, and the online DPO loop.

Every loss is a function of per-token log-probs: a response's sequence log-prob is the masked sum
`s = sum_t mask_t logp_t`, its length `n = sum_t mask_t`, and its length-averaged log-prob
`a = s / max(n, 1)` (an empty response has `a = 0`). For P pairs (chosen y_c, rejected y_r):

```text
h      = (s_c - s_ref_c) - (s_r - s_ref_r)                      summed log-ratio margin
h_avg  = (s_c - s_ref_c) / n_c - (s_r - s_ref_r) / n_r          averaged log-ratio margin
IPO:      l = (h - 1/(2 beta))^2            or (h_avg - 1/(2 beta))^2     eq. (ipo), eq. (ipo_avg)
SimPO:    l = -log sigma(beta (a_c - a_r) - zeta)                         eq. (simpo)
ORPO:     l = -a_c - chi log sigma(o(a_c) - o(a_r)),  o(a) = a - log(1 - e^a)   eq. (orpo)
```

and for B single examples, each desirable (label 1) or undesirable (label 0), with the reference
point z0 held fixed (data, no gradient); the page's names: zeta is the argument `gamma`,
chi the argument `lam`, omega_D and omega_U the arguments `lambda_d` and `lambda_u`:

```text
KTO:  l = omega_D (1 - sigma(beta (h - z0)))    desirable,   h = s - s_ref
      l = omega_U (1 - sigma(beta (z0 - h)))    undesirable                     eq. (kto)
```

The loss is the weighted sum over pairs (examples) with weights `w` (default: the mean).

Gradients, by hand. Each loss depends on a token log-prob only through its response's `s` or
`a`, and `ds/dlogp_t = mask_t`, `da/dlogp_t = mask_t / max(n, 1)`: the per-sequence derivative is
broadcast over the mask, divided by the length where the loss averages. The local derivatives
are one line each, with `d/dz [-log sigma(z)] = -sigma(-z)`:

```text
IPO:    dl/dh = 2 (h - 1/(2 beta));   dh/ds_c = 1 (or 1/n_c),  dh/ds_r = -1 (or -1/n_r)
SimPO:  dl/da_c = -beta sigma(-z) = -dl/da_r,                  z = beta (a_c - a_r) - zeta
ORPO:   o'(a) = 1 / (1 - e^a);  dl/da_c = -1 - chi sigma(-z) o'(a_c);  dl/da_r = chi sigma(-z) o'(a_r)
KTO:    dl/dh = -omega_D beta sigma(z) sigma(-z)  (desirable),  +omega_U beta sigma(z) sigma(-z)
        (undesirable), with z the argument of that example's sigma
```

Deviations and edge cases. The summed IPO is `dpo.dpo_loss(variant="ipo")`; the averaged one
is the same function applied to length-averaged log-probs, as TRL does (`loss_type="ipo"`,
both the policy's and the reference's log-ratios divided by the completion length). ORPO's NLL is
the per-pair mean token NLL of the chosen response (the paper's form); TRL averages it over all
chosen tokens of the batch, which is the same when the chosen responses have equal lengths. ORPO
needs `a < 0`: a response of probability 1 has infinite odds, and an empty response has
probability 1; both raise. A tie (the same response as chosen and rejected) gives a constant
margin and no gradient through the margin (ORPO's NLL still pulls on it). Every loss rejects a
non-finite result with a ValueError naming the argument that drove it (the log-probs, a
coefficient or the weights).

Online DPO (`online_dpo_step`): two responses per prompt from the current policy, a label drawn
with the probability a judge gives (`bradley_terry_judge` of a known reward:
`sigma(r(x, y_a) - r(x, y_b))`, eq. (bradley_terry)), one DPO step, eq. (dpo). A call that
raises leaves `policy.theta` and the generator as they were.

Demonstrated by `python examples/preferences.py` (where each loss lands against the tilted
optimum). Imports NumPy, minirl_lm.core.checks, minirl_lm.core.ops and minirl_lm.direct.dpo.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
ipo_loss average        TRL DPOTrainer loss_type="ipo" (average=True); OnlineDPOTrainer "ipo"
                        (average=False)
simpo_loss beta, gamma  TRL CPOTrainer loss_type="simpo", simpo_gamma (0.5), cpo_alpha=0.0
orpo_loss lam           TRL ORPOTrainer beta (0.1)
kto_loss                TRL KTOTrainer loss_type="kto" (it estimates z0 each step)
online_dpo_step         TRL OnlineDPOTrainer (hard labels); verl and OpenRLHF: none of these
                        losses (OpenRLHF train_dpo has DPO and IPO: dpo.py)
```
"""

import numpy as np

from minirl_lm.core.checks import callable_check, finite_result, real_result
from minirl_lm.core.ops import sigmoid
from minirl_lm.core.validate import culprit, finite_loss, largest
from minirl_lm.direct.checks import (
    ipo_args,
    kto_args,
    online_dpo_args,
    orpo_args,
    probability_result,
    simpo_args,
)
from minirl_lm.direct.dpo import _dpo


def _seq(logp, mask):
    """Masked sums s (B,) and lengths n (B,) of checked log-probs; padding ignored. A sum beyond
    float64 is -inf, named by the caller's guard."""
    with np.errstate(over="ignore"):
        return np.where(mask > 0, logp, 0.0).sum(axis=1), mask.sum(axis=1)


# ---------------------------------------------------------------- IPO, eq. (ipo) and eq. (ipo_avg)


def ipo_loss(logp_c, mask_c, logp_r, mask_r, seq_logp_ref_c, seq_logp_ref_r, beta, average=False, weights=None):
    """IPO on summed log-ratios, eq. (ipo), or on length-averaged ones (TRL's), eq. (ipo_avg).

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses under pi_theta.
        mask_c: (P, T_c) 0/1 mask of the chosen responses (holes allowed: `s` and `n` count
            the trained tokens).
        logp_r: (P, T_r) token log-probs of the rejected responses.
        mask_r: (P, T_r) mask of the rejected responses.
        seq_logp_ref_c: (P,) `log pi_ref(y_c | x)` (data, no gradient).
        seq_logp_ref_r: (P,) `log pi_ref(y_r | x)`.
        beta: the regularization strength, > 0; the margin target is `1 / (2 beta)`.
        average: divide each log-ratio by its response length (an empty response counts 1).
        weights: (P,) nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (dloss_dlogp_c (P, T_c), dloss_dlogp_r (P, T_r)))`, zero at padding.

    Raises:
        ValueError: bad shapes, masks, beta, weights, or a non-finite result (named after the
            log-probs, beta or the weights, whichever drove it).
    """
    logp_c, mask_c, logp_r, mask_r, ref_c, ref_r, beta, w = ipo_args(
        logp_c, mask_c, logp_r, mask_r, seq_logp_ref_c, seq_logp_ref_r, beta, average, weights
    )
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    k_c = np.maximum(n_c, 1.0) if average else np.ones_like(n_c)  # (P,) divisor of s and s_ref
    k_r = np.maximum(n_r, 1.0) if average else np.ones_like(n_r)
    # eq. (ipo) / eq. (ipo_avg): the same regression, on summed or averaged log-ratios
    with np.errstate(over="ignore", invalid="ignore"):
        h = (s_c / k_c - ref_c / k_c) - (s_r / k_r - ref_r / k_r)  # (P,) log-ratio margin
    logps = largest(logp_c=s_c, logp_r=s_r, seq_logp_ref_c=ref_c, seq_logp_ref_r=ref_r)
    finite_result(h, logps, "the log-ratio margin h")
    loss, dx_c = _dpo(h, beta, w, logps, "ipo")
    d_c = (dx_c / k_c)[:, None] * mask_c  # (P, T_c) da/dlogp_t = mask_t / n
    d_r = (-dx_c / k_r)[:, None] * mask_r  # (P, T_r) dh/dx_r = -1
    return loss, (d_c, d_r)


# ---------------------------------------------------------------- SimPO, eq. (simpo)


def simpo_loss(logp_c, mask_c, logp_r, mask_r, beta, gamma=0.5, weights=None):
    """SimPO: reference-free, length-normalized, with a target margin gamma, eq. (simpo).

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses.
        mask_c: (P, T_c) mask of the chosen responses.
        logp_r: (P, T_r) token log-probs of the rejected responses.
        mask_r: (P, T_r) mask of the rejected responses.
        beta: scale of the implicit reward `beta * a`, > 0.
        gamma: target reward margin, >= 0 (TRL's `simpo_gamma`, default 0.5).
        weights: (P,) nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (dloss_dlogp_c (P, T_c), dloss_dlogp_r (P, T_r)))`.
    """
    logp_c, mask_c, logp_r, mask_r, w, beta, gamma = simpo_args(
        logp_c, mask_c, logp_r, mask_r, beta, gamma, weights
    )
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    k_c, k_r = np.maximum(n_c, 1.0), np.maximum(n_r, 1.0)  # (P,) an empty response has a = 0
    with np.errstate(over="ignore", invalid="ignore"):
        m = s_c / k_c - s_r / k_r  # (P,) a_c - a_r
        z = beta * m - gamma  # (P,) reward margin minus gamma
        loss = float(np.sum(w * np.logaddexp(0.0, -z)))  # eq. (simpo): -log sigma(z)
        da_c = w * beta * -sigmoid(-z)  # (P,) -sigma(-z) * dz/da_c
        d_c = (da_c / k_c)[:, None] * mask_c  # (P, T_c)
        d_r = (-da_c / k_r)[:, None] * mask_r  # (P, T_r) dz/da_r = -beta
    logps = largest(logp_c=s_c, logp_r=s_r)
    finite_loss(
        loss, (d_c, d_r), culprit((logps, m), (largest(beta=beta, gamma=gamma, **{logps: m}), z), "weights")
    )
    return loss, (d_c, d_r)


# ---------------------------------------------------------------- ORPO, eq. (orpo)


def _log1mexp(a):
    # log(1 - e^a) for a < 0, accurate at both ends (branch at -log 2)
    return np.where(
        a < -np.log(2.0),
        np.log1p(-np.exp(np.minimum(a, -np.log(2.0)))),
        np.log(-np.expm1(np.maximum(a, -np.log(2.0)))),
    )


def orpo_loss(logp_c, mask_c, logp_r, mask_r, lam=0.1, weights=None):
    """ORPO: the chosen response's NLL plus lam times the log odds-ratio loss, eq. (orpo).

    Log-probs are length-averaged, `a = s / n`; the odds of a response are `e^a / (1 - e^a)`.

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses (each nonempty).
        mask_c: (P, T_c) mask of the chosen responses.
        logp_r: (P, T_r) token log-probs of the rejected responses (each nonempty).
        mask_r: (P, T_r) mask of the rejected responses.
        lam: weight of the odds-ratio term, >= 0 (TRL's `beta`, default 0.1).
        weights: (P,) nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (dloss_dlogp_c (P, T_c), dloss_dlogp_r (P, T_r)))`.

    Raises:
        ValueError: an empty response, or a mean log-prob of 0 (probability 1: infinite odds).
    """
    logp_c, mask_c, logp_r, mask_r, w, lam = orpo_args(logp_c, mask_c, logp_r, mask_r, lam, weights)
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    with np.errstate(over="ignore", invalid="ignore"):  # -inf - -inf, 0 * inf: NaN
        a_c, a_r = s_c / n_c, s_r / n_r  # (P,) averaged log-probs
        z = (a_c - _log1mexp(a_c)) - (a_r - _log1mexp(a_r))  # (P,) log odds-ratio, eq. (orpo)
        term = lam * np.logaddexp(0.0, -z)  # (P,) lam softplus(-z)
        loss = float(np.sum(w * (-a_c + term)))  # eq. (orpo)
        dz = lam * -sigmoid(-z)  # (P,) d[lam softplus(-z)]/dz
        do_c = -1.0 / np.expm1(a_c)  # (P,) do/da = 1 / (1 - e^a)
        do_r = -1.0 / np.expm1(a_r)
        g_c, g_r = dz * do_c, dz * do_r  # (P,) chain rule through o(a)
        da_c = w * (-1.0 + g_c)  # NLL: d(-a_c)/da_c = -1
        da_r = w * -g_r  # dz/da_r = -do/da_r
        d_c = (da_c / n_c)[:, None] * mask_c  # (P, T_c)
        d_r = (da_r / n_r)[:, None] * mask_r  # (P, T_r)
    # odds 1/(1 - e^a) beyond float64 (a near 0) enter through g: they name their side
    finite_loss(
        loss,
        (d_c, d_r),
        culprit(
            (largest(logp_c=s_c, logp_r=s_r), z),
            (largest(lam=lam, logp_c=do_c, logp_r=do_r), (term, g_c, g_r)),
            "weights",
        ),
    )
    return loss, (d_c, d_r)


# ---------------------------------------------------------------- KTO, eq. (kto)


def kto_loss(logp, mask, seq_logp_ref, desirable, beta, z0=0.0, lambda_d=1.0, lambda_u=1.0, weights=None):
    """KTO on single examples, desirable or undesirable, reference point z0 fixed, eq. (kto).

    Args:
        logp: (B, T) token log-probs of the responses under pi_theta.
        mask: (B, T) mask of the responses.
        seq_logp_ref: (B,) `log pi_ref(y | x)` (data, no gradient).
        desirable: (B,) bool, True for a desirable example.
        beta: > 0.
        z0: the reference point, a KL estimate held fixed, >= 0 (TRL estimates it on mismatched
            pairs, detached and clamped at 0).
        lambda_d: weight of desirable examples, >= 0.
        lambda_u: weight of undesirable examples, >= 0.
        weights: (B,) nonnegative example weights, default `1/B` (TRL's mean over examples).

    Returns:
        `(loss, dloss_dlogp (B, T))`.
    """
    logp, mask, ref, d, beta, z0, lam_d, lam_u, w = kto_args(
        logp, mask, seq_logp_ref, desirable, beta, z0, lambda_d, lambda_u, weights
    )
    s, _ = _seq(logp, mask)
    lam = np.where(d, lam_d, lam_u)  # (B,)
    with np.errstate(over="ignore", invalid="ignore"):  # s, h may be -inf: u = +-inf
        h = s - ref  # (B,) log-ratio
        sign = np.where(d, 1.0, -1.0)  # (B,) du/dh = sign * beta
        u = sign * beta * (h - z0)  # (B,) eq. (kto)
        loss = float(np.sum(w * lam * sigmoid(-u)))  # 1 - sigma(u) = sigma(-u)
        dh = w * lam * -(sigmoid(u) * sigmoid(-u)) * sign * beta  # (B,) d sigma(-u)/du
        d_logp = dh[:, None] * mask  # (B, T)
    # sigma is bounded: only the coefficients' products can overflow
    finite_loss(loss, (d_logp,), largest(weights=w, lambda_d=lam_d, lambda_u=lam_u, beta=beta))
    return loss, d_logp


# ---------------------------------------------------------------- online DPO


def bradley_terry_judge(grader):
    """A judge from a known reward: `judge(prompt, y_a, y_b) = sigma(r(x, y_a) - r(x, y_b))`.

    Args:
        grader: `grader(prompt, response) -> float`, the reward of eq. (bradley_terry); a
            reward that is not a finite real number is an error naming the grader.

    Returns:
        A callable `judge(prompt, y_a, y_b) -> P(y_a preferred)`.
    """
    callable_check(grader, "grader", 2, "grader(prompt, response)")

    def judge(prompt, y_a, y_b):
        r_a, r_b = (
            real_result(grader(prompt, y), "grader", f" (a finite reward) for response {y}") for y in (y_a, y_b)
        )
        return float(sigmoid(r_a - r_b))  # Python floats: +-inf, no warning

    return judge


def online_dpo_step(mdp, policy, ref, judge, beta, lr, rng, pairs_per_prompt=1):
    """One online DPO step: sample two responses per prompt from the current policy, label, step.

    For every prompt (each `pairs_per_prompt` times) two responses y_a, y_b are drawn from the
    current policy; y_a is chosen with probability `judge(prompt, y_a, y_b)` (one `rng.random()`
    per pair); then one gradient step of the mean DPO loss, eq. (dpo), updates `policy.theta`.
    With `bradley_terry_judge` the expected update vanishes at the tilted optimum whatever policy
    sampled the pairs, so `pi*` is a fixed point of the loop.

    Args:
        mdp: a TokenMDP (its `rollout` draws the responses).
        policy: the TabularPolicy being trained (updated in place).
        ref: the frozen reference TabularPolicy (same table shape).
        judge: `judge(prompt, y_a, y_b) -> float in [0, 1]`, the probability y_a is preferred.
        beta: the DPO beta, > 0.
        lr: step size, > 0.
        rng: np.random.Generator for the responses and the labels.
        pairs_per_prompt: pairs drawn per prompt, >= 1.

    Returns:
        A dict with `loss` (before the step), `chosen`, `rejected` (tuples of token ids) and
        `prompt` (P,) of the pairs.

    Raises:
        ValueError, TypeError: bad arguments, a judge returning something else than a
            probability, or a non-finite update; then theta and rng are as before the call.
    """
    beta, lr, k = online_dpo_args(mdp, policy, ref, judge, beta, lr, rng, pairs_per_prompt)
    state = rng.bit_generator.state  # a snapshot, restored on failure
    try:
        prompts = np.repeat(np.arange(mdp.N), k)  # (P,)
        ro = mdp.rollout(policy, 2, rng, prompts=prompts)  # eq. (online_dpo); rows 2i, 2i+1
        resp = ro.responses()
        p = np.array(
            [
                probability_result(judge(mdp.prompts[n], resp[2 * i], resp[2 * i + 1]), "judge")
                for i, n in enumerate(prompts)
            ]
        )  # (P,)
        a_wins = rng.random(prompts.size) < p  # eq. (bradley_terry) with a judge
        a, b = 2 * np.arange(prompts.size), 2 * np.arange(prompts.size) + 1
        c, r = np.where(a_wins, a, b), np.where(a_wins, b, a)  # (P,) rows of chosen, rejected
        _, seq = policy.logp(ro.states, ro.tokens, ro.mask)  # (2P,)
        _, seq_ref = ref.logp(ro.states, ro.tokens, ro.mask)  # (2P,) data
        # the policy's own samples have log-probs >= log(tiniest float) per token: only the
        # reference's can be -inf (a token it forbids) or beyond float64 together (inf - inf)
        with np.errstate(invalid="ignore"):
            h = (seq[c] - seq_ref[c]) - (seq[r] - seq_ref[r])  # (P,) log-ratio margin
        finite_result(h, "ref", "the log-ratio margin h")
        loss, d_c = _dpo(h, beta, np.full(c.size, 1.0 / c.size), "ref")  # eq. (dpo)
        dseq = np.zeros(seq.size)  # (2P,)
        dseq[c], dseq[r] = d_c, -d_c
        dlogp = dseq[:, None] * ro.mask  # (2P, T) ds/dlogp_t = mask_t
        with np.errstate(over="ignore"):
            # |dtheta| <= 2 sum |dlogp|: a bound beyond float64 is beta's (dlogp scales with it)
            finite_result(2.0 * np.abs(dlogp).sum(), "beta", "the gradient on theta")
        dtheta = policy.backward(ro.states, ro.tokens, ro.mask, dlogp)
        with np.errstate(over="ignore"):
            new = policy.theta - lr * dtheta  # (S, V); -inf entries stay -inf
        if not np.isfinite(new[np.isfinite(policy.theta)]).all():
            raise ValueError(f"lr: expected a step that keeps theta finite, got a non-finite update with lr={lr}")
    except BaseException:
        rng.bit_generator.state = state
        raise
    policy.theta[...] = new  # the only write, after every check
    return {"loss": loss, "prompt": prompts, "chosen": [resp[i] for i in c], "rejected": [resp[i] for i in r]}
