# minirl_lm 0.1.0: a self-contained copy of minirl_lm/direct/preferences.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/direct/preferences.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

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

import inspect
import numbers

import numpy as np


__all__ = ["ipo_loss", "simpo_loss", "orpo_loss", "kto_loss", "bradley_terry_judge",
    "online_dpo_step"]


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


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/direct/dpo.py
#   Bradley-Terry reward models and DPO (with IPO and conservative DPO), gradients by hand.
# ----------------------------------------------------------------------------------------------


def _dpo(h, beta, w, h_name, variant="dpo", ls=0.0):
    """Trusted core: the weighted loss of eq. (dpo) / (ipo) / (cdpo) and dloss/dh (P,) from finite
    margins h (P,). An overflow names beta or `h_name` (the log-probs behind h), whichever is the
    larger against the other, or the weights if every pair's term is finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        l, dh = _dpo_terms(h, beta, variant, ls)
        loss, dseq_c = float(np.sum(w * l)), w * dh  # (P,) dh/dlogp_c = 1
    scale = 1.0 / (2.0 * beta) if variant == "ipo" else beta  # beta's size in e or in z
    drove = "beta" if scale >= np.abs(h).max() else h_name
    return finite_result((loss, dseq_c), culprit((drove, (l, dh)), "weights"), "the loss")


def _dpo_terms(h, beta, variant, ls):
    """Per pair: (l, dl/dh) of eq. (dpo) / (ipo) / (cdpo) from the margins h (P,)."""
    z = beta * h  # (P,) implicit reward margin
    if variant == "ipo":
        e = h - 1.0 / (2.0 * beta)  # eq. (ipo): regress h onto 1/(2 beta)
        return e * e, 2.0 * e  # dl/dh = 2 (h - 1/(2 beta))
    l = (1 - ls) * np.logaddexp(0.0, -z)  # eq. (cdpo); eq. (dpo) at ls = 0: -log sigma(z)
    dl = -(1 - ls) * sigmoid(-z)  # dl/dz; the flipped term is skipped (0 * inf)
    if ls > 0:
        l = l + ls * np.logaddexp(0.0, z)
        dl = dl + ls * sigmoid(z)
    return l, beta * dl  # dz/dh = beta


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
# ----------------------------------------------------------------------------------------------


# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8


def largest(**named):
    """The name of the argument of largest magnitude (the first on a tie): the one that drove an
    overflow of an expression they all enter."""
    best, size = None, -1.0
    for name, value in named.items():
        m = float(np.max(np.abs(value), initial=0.0))
        if best is None or m > size:
            best, size = name, m
    return best


def culprit(*stages):
    """The name of the first `(name, value)` stage whose value is not all finite (a number, an
    array or a tuple of them); the last argument, a bare name, when every stage is."""
    *pairs, last = stages
    for name, value in pairs:
        if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in _leaves(value)):
            return name
    return last


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def finite_loss(loss, grads, name):
    """The preference losses' guard: a log-prob argument `name` gets the log-prob message, any
    other (a coefficient, the weights) `finite_result`'s."""
    if not name.startswith("logp"):
        return finite_result((loss, grads), name, "the loss")
    if not (np.isfinite(loss) and all(np.isfinite(g).all() for g in grads)):
        raise ValueError(
            f"{name}: expected log-probs for which the loss is finite, got a "
            f"non-finite loss or gradient (loss {loss})"
        )
    return loss, grads


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/direct/checks.py
#   The boundary of the direct-alignment part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


def pair_weights(weights, P, what="pair weights"):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative {what}, got min {w.min()}")
    return w


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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it.

    ndim:  required number of dimensions (None: any).
    shape: required shape; a None entry matches any length.
    finite: reject NaN and +-inf; with ``allow_neginf`` a -inf entry is allowed
        (log-probabilities of impossible tokens), NaN and +inf never are.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted).

    Any 0/1 pattern by default: a 0 between 1s is a hole, a position the token-level objectives
    do not train (a tool output; TRL's ``tool_mask``, verl's multi-turn ``response_mask``); on
    such a row they give the loss and gradient of the compacted row (holes removed).
    prefix: ``(what, where)`` for a caller that reads the rows as prefixes (GAE, returns, the
    critic): right padding is required, and the error names ``what`` and ``where`` holes go.
    """
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_describe(rng)}"
        )
    return rng


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is finite;
    else raise a ValueError naming ``name``, the argument that drove the overflow.

    Call it on what a public function is about to return, computed under
    ``np.errstate(over="ignore", invalid="ignore", divide="ignore")``: an overflow is never
    returned as inf or NaN. ``name`` and ``what`` are strings (a programming error otherwise).
    """
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    return _float(value, name, f"a finite number{context}")


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(
            f"{name}: expected a callable {call} taking {nargs} positional arguments, got one with signature {sig}"
        ) from None
    return f


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(
            f"{name}: expected {expected}, got an integer of {int(x).bit_length()} bits, beyond float64"
        ) from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x
