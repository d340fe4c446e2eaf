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
non-finite result with one ValueError naming the function and the range of its inputs.

Online DPO (`online_dpo_step`): two responses per prompt from the current policy, a label drawn
with the probability a judge gives (`bradley_terry_judge` of a known reward:
`sigma(r(x, y_a) - r(x, y_b))`, eq. (bradley_terry)), one DPO step, eq. (dpo). A call that
raises leaves `policy.theta`, the generator and the environment's ids as they were.

Demonstrated by `python examples/preferences.py` (where each loss lands against the tilted
optimum).

Names in the frameworks (defaults in parentheses; `docs/next.md` in the minirl_lm repository
keeps the versions and maps the rest, file by file):

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

import functools
import inspect
import numbers

import numpy as np


__all__ = ["ipo_loss", "simpo_loss", "orpo_loss", "kto_loss", "bradley_terry_judge", "online_dpo_step"]

# the chosen and the rejected responses of P pairs, each side its own width


def _log_probs(logp, mask, name):
    if (logp[mask > 0] > 0).any():
        return f"{name}: expected log-probs <= 0 on real tokens, got max {logp[mask > 0].max()}"


def _chosen_log_probs(logp_c, mask_c):
    """The chosen responses' trained tokens have log-probs <= 0."""
    return _log_probs(logp_c, mask_c, "logp_c")


def _rejected_log_probs(logp_r, mask_r):
    """The rejected responses' trained tokens have log-probs <= 0."""
    return _log_probs(logp_r, mask_r, "logp_r")


def _response_log_probs(logp, mask):
    """The responses' trained tokens have log-probs <= 0."""
    return _log_probs(logp, mask, "logp")


def _finite_odds(logp, mask, name):
    n = mask.sum(axis=1)  # (P,)
    if (n == 0).any():
        return (
            f"{name}: expected nonempty responses for ORPO (an empty response has probability 1), "
            f"got an empty one at pair {int(np.argmin(n))}"
        )
    one = ((logp == 0) | (mask == 0)).all(axis=1)  # (P,) log pi(y) = 0: s >= 0
    if one.any():
        return (
            f"{name}: expected a mean log-prob < 0 for ORPO (probability 1 has infinite odds), "
            f"got 0 at pair {int(np.argmax(one))}"
        )


def _chosen_odds(logp_c, mask_c):
    """ORPO's chosen responses are nonempty, of mean log-prob < 0 (finite odds)."""
    return _finite_odds(logp_c, mask_c, "logp_c")


def _rejected_odds(logp_r, mask_r):
    """ORPO's rejected responses are nonempty, of mean log-prob < 0 (finite odds)."""
    return _finite_odds(logp_r, mask_r, "logp_r")


def _bools(*shapes):
    """A kind: a bool array of one of `shapes` (not 0/1 numbers)."""
    shaped = array(*shapes, integer=True)

    def read(x, name, dims):
        try:
            dtype = None if isinstance(x, (str, bytes)) else np.asarray(x).dtype
        except (ValueError, TypeError, OverflowError):  # ragged nesting
            dtype = None
        if dtype != np.bool_:
            got = type(x).__name__ + ("" if dtype is None else f" of dtype {dtype}")
            raise TypeError(f"{name}: expected a bool array, got {got}")
        return shaped(x, name, dims).astype(bool)

    return read


def _pair_result(fname, loss, d_c, d_r, **inputs):
    """`(loss, (d_c, d_r))`, checked as the engine checks a result (`returns=None` in the
    declaration: the two gradients may differ in width, which the engine's check cannot stack)."""
    finite((loss, d_c, d_r), fname, ["loss", "dloss_dlogp_c", "dloss_dlogp_r"], inputs)
    return loss, (d_c, d_r)


def _seq(logp, mask):
    """Masked sums s (B,) and lengths n (B,) of read log-probs; padding ignored."""
    return np.where(mask > 0, logp, 0.0).sum(axis=1), mask.sum(axis=1)


# ---------------------------------------------------------------- IPO, eq. (ipo) and eq. (ipo_avg)


def ipo_loss(logp_c, mask_c, logp_r, mask_r, seq_logp_ref_c, seq_logp_ref_r, beta, *, average=False, weights=None):
    """IPO on summed log-ratios, eq. (ipo), or on length-averaged ones (TRL's), eq. (ipo_avg).

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses under pi_theta (<= 0 on
            trained tokens).
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
        ValueError: a bad argument (named), or a loss or gradient beyond float64 (named after
            the function, with the range of its inputs).
    """
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    k_c = np.maximum(n_c, 1.0) if average else np.ones_like(n_c)  # (P,) divisor of s and s_ref
    k_r = np.maximum(n_r, 1.0) if average else np.ones_like(n_r)
    # eq. (ipo) / eq. (ipo_avg): the same regression, on summed or averaged log-ratios
    x_c, x_r, ref_c, ref_r = s_c / k_c, s_r / k_r, seq_logp_ref_c / k_c, seq_logp_ref_r / k_r  # (P,)
    loss, (dx_c, dx_r) = dpo_loss.core(
        x_c, x_r, ref_c, ref_r, beta, variant="ipo", label_smoothing=0.0, weights=weights
    )
    d_c = (dx_c / k_c)[:, None] * mask_c  # (P, T_c) da/dlogp_t = mask_t / n
    d_r = (dx_r / k_r)[:, None] * mask_r  # (P, T_r)
    inputs = dict(logp_c=logp_c, logp_r=logp_r, seq_logp_ref_c=seq_logp_ref_c, seq_logp_ref_r=seq_logp_ref_r)
    return _pair_result("ipo_loss", loss, d_c, d_r, **inputs, beta=beta, weights=weights)


# ---------------------------------------------------------------- SimPO, eq. (simpo)


def simpo_loss(logp_c, mask_c, logp_r, mask_r, beta, *, gamma=0.5, weights=None):
    """SimPO: reference-free, length-normalized, with a target margin gamma, eq. (simpo).

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses (<= 0 on trained tokens).
        mask_c: (P, T_c) 0/1 mask of the chosen responses (holes allowed).
        logp_r: (P, T_r) token log-probs of the rejected responses.
        mask_r: (P, T_r) mask of the rejected responses.
        beta: scale of the implicit reward `beta * a`, > 0.
        gamma: target reward margin, >= 0 (TRL's `simpo_gamma`, default 0.5).
        weights: (P,) nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (dloss_dlogp_c (P, T_c), dloss_dlogp_r (P, T_r)))`.

    Raises:
        ValueError: a bad argument (named), or a loss or gradient beyond float64 (named after
            the function, with the range of its inputs).
    """
    P = logp_c.shape[0]
    w = np.full(P, 1.0 / P) if weights is None else weights  # (P,)
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    k_c, k_r = np.maximum(n_c, 1.0), np.maximum(n_r, 1.0)  # (P,) an empty response has a = 0
    z = beta * (s_c / k_c - s_r / k_r) - gamma  # (P,) beta (a_c - a_r) - gamma
    loss = float(np.sum(w * np.logaddexp(0.0, -z)))  # eq. (simpo): -log sigma(z)
    da_c = w * beta * -sigmoid(-z)  # (P,) -sigma(-z) * dz/da_c
    d_c = (da_c / k_c)[:, None] * mask_c  # (P, T_c)
    d_r = (-da_c / k_r)[:, None] * mask_r  # (P, T_r) dz/da_r = -beta
    return _pair_result(
        "simpo_loss", loss, d_c, d_r, logp_c=logp_c, logp_r=logp_r, beta=beta, gamma=gamma, weights=weights
    )


# ---------------------------------------------------------------- ORPO, eq. (orpo)


def _log1mexp(a):
    # log(1 - e^a) for a < 0, accurate at both ends (branch at -log 2)
    return np.where(
        a < -np.log(2.0),
        np.log1p(-np.exp(np.minimum(a, -np.log(2.0)))),
        np.log(-np.expm1(np.maximum(a, -np.log(2.0)))),
    )


def orpo_loss(logp_c, mask_c, logp_r, mask_r, *, lam=0.1, weights=None):
    """ORPO: the chosen response's NLL plus lam times the log odds-ratio loss, eq. (orpo).

    Log-probs are length-averaged, `a = s / n`; the odds of a response are `e^a / (1 - e^a)`.

    Args:
        logp_c: (P, T_c) token log-probs of the chosen responses (each nonempty, <= 0 on
            trained tokens, not all 0).
        mask_c: (P, T_c) 0/1 mask of the chosen responses (holes allowed).
        logp_r: (P, T_r) token log-probs of the rejected responses (each nonempty).
        mask_r: (P, T_r) mask of the rejected responses.
        lam: weight of the odds-ratio term, >= 0 (TRL's `beta`, default 0.1).
        weights: (P,) nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (dloss_dlogp_c (P, T_c), dloss_dlogp_r (P, T_r)))`.

    Raises:
        ValueError: a bad argument (named): an empty response, or a mean log-prob of 0
            (probability 1: infinite odds); or a loss or gradient beyond float64 (named after
            the function, with the range of its inputs).
    """
    P = logp_c.shape[0]
    w = np.full(P, 1.0 / P) if weights is None else weights  # (P,)
    (s_c, n_c), (s_r, n_r) = _seq(logp_c, mask_c), _seq(logp_r, mask_r)
    a_c, a_r = s_c / n_c, s_r / n_r  # (P,) averaged log-probs
    z = (a_c - _log1mexp(a_c)) - (a_r - _log1mexp(a_r))  # (P,) log odds-ratio, eq. (orpo)
    loss = float(np.sum(w * (-a_c + lam * np.logaddexp(0.0, -z))))  # eq. (orpo): lam softplus(-z)
    dz = lam * -sigmoid(-z)  # (P,) d[lam softplus(-z)]/dz
    do_c, do_r = -1.0 / np.expm1(a_c), -1.0 / np.expm1(a_r)  # (P,) do/da = 1 / (1 - e^a)
    da_c = w * (-1.0 + dz * do_c)  # NLL: d(-a_c)/da_c = -1; chain rule through o(a)
    da_r = w * -dz * do_r  # dz/da_r = -do/da_r
    d_c = (da_c / n_c)[:, None] * mask_c  # (P, T_c)
    d_r = (da_r / n_r)[:, None] * mask_r  # (P, T_r)
    return _pair_result("orpo_loss", loss, d_c, d_r, logp_c=logp_c, logp_r=logp_r, lam=lam, weights=weights)


# ---------------------------------------------------------------- KTO, eq. (kto)


def kto_loss(logp, mask, seq_logp_ref, desirable, beta, *, z0=0.0, lambda_d=1.0, lambda_u=1.0, weights=None):
    """KTO on single examples, desirable or undesirable, reference point z0 fixed, eq. (kto).

    Args:
        logp: (B, T) token log-probs of the responses under pi_theta (<= 0 on trained tokens).
        mask: (B, T) 0/1 mask of the responses (holes allowed).
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

    Raises:
        ValueError: a bad argument (named), or a loss or gradient beyond float64 (named after
            the function, with the range of its inputs).
    """
    B = logp.shape[0]
    w = np.full(B, 1.0 / B) if weights is None else weights  # (B,)
    s, _ = _seq(logp, mask)
    lam = np.where(desirable, lambda_d, lambda_u)  # (B,)
    sign = np.where(desirable, 1.0, -1.0)  # (B,) du/dh = sign * beta
    u = sign * beta * (s - seq_logp_ref - z0)  # (B,) eq. (kto), h = s - s_ref
    loss = float(np.sum(w * lam * sigmoid(-u)))  # 1 - sigma(u) = sigma(-u)
    dh = w * lam * -(sigmoid(u) * sigmoid(-u)) * sign * beta  # (B,) d sigma(-u)/du
    return loss, dh[:, None] * mask  # (B, T)


# ---------------------------------------------------------------- online DPO


def bradley_terry_judge(grader):
    """A judge from a known reward: `judge(prompt, y_a, y_b) = sigma(r(x, y_a) - r(x, y_b))`.

    Args:
        grader: `grader(prompt, response) -> float`, the reward of eq. (bradley_terry); a
            reward that is not a finite real number is an error naming the grader.

    Returns:
        A callable `judge(prompt, y_a, y_b) -> P(y_a preferred)`.
    """

    def reward(prompt, y):
        try:
            return REWARD(grader(prompt, y), "grader", {})
        except (TypeError, ValueError) as e:
            raise type(e)(f"{e} (the reward of response {y})") from None

    def judge(prompt, y_a, y_b):
        return float(sigmoid(reward(prompt, y_a) - reward(prompt, y_b)))  # Python floats: +-inf, no warning

    return judge


def _table_shapes(mdp, policy, ref):
    """Both policies hold a table of the environment's shape `(S, V)`."""
    if np.shape(policy.theta) != (mdp.S, mdp.V):
        return (
            f"policy: expected a table of shape (S, V) = ({mdp.S}, {mdp.V}) for mdp, got {np.shape(policy.theta)}"
        )
    if np.shape(ref.theta) != np.shape(policy.theta):
        return f"ref: expected a table of the policy's shape {np.shape(policy.theta)}, got {np.shape(ref.theta)}"


def _addressable_draws(mdp, pairs_per_prompt):
    """The `2 N k` responses fit an addressable array."""
    most = MAX_DRAWS // (2 * max(len(mdp.prompts), 1))
    if pairs_per_prompt > most:
        return (
            f"pairs_per_prompt: expected an integer <= {most} (2 N k responses are drawn), got {pairs_per_prompt}"
        )


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
        ValueError, TypeError: a bad argument (named), a judge returning something else than a
            probability (named), a reference that forbids a sampled response (`ref`), or a
            non-finite step (named after the function); then theta, rng and the environment's
            ids are as before the call.
    """
    rng_state = rng.bit_generator.state  # a snapshot, restored on failure
    mdp_state = mdp.checkpoint() if hasattr(mdp, "checkpoint") else None  # a TokenMDP's lazy ids
    try:
        prompts = np.repeat(np.arange(mdp.N), pairs_per_prompt)  # (P,)
        ro = mdp.rollout(policy, 2, rng, prompts=prompts)  # eq. (online_dpo); rows 2i, 2i+1
        resp = ro.responses()
        p = [
            PROBABILITY(float(q) if isinstance(q, bool) else q, "judge", {})
            for q in (judge(mdp.prompts[n], resp[2 * i], resp[2 * i + 1]) for i, n in enumerate(prompts))
        ]  # (P,) a bool counts: True = 1.0
        a_wins = rng.random(prompts.size) < np.array(p)  # eq. (bradley_terry) with a judge
        a, b = 2 * np.arange(prompts.size), 2 * np.arange(prompts.size) + 1
        c, r = np.where(a_wins, a, b), np.where(a_wins, b, a)  # (P,) rows of chosen, rejected
        _, seq = policy.logp(ro.states, ro.tokens, ro.mask)  # (2P,)
        _, seq_ref = ref.logp(ro.states, ro.tokens, ro.mask)  # (2P,) data
        if not np.isfinite(seq_ref).all():  # the policy's own samples have finite log-probs
            raise ValueError(
                "ref: expected finite log-probs of the sampled responses, got -inf (a token it forbids)"
            )
        loss, (d_c, d_r) = dpo_loss.core(seq[c], seq[r], seq_ref[c], seq_ref[r], beta)  # eq. (dpo)
        dseq = np.zeros(seq.size)  # (2P,)
        dseq[c], dseq[r] = d_c, d_r
        dtheta = policy.backward(ro.states, ro.tokens, ro.mask, dseq[:, None] * ro.mask)  # ds/dlogp_t = mask_t
        new = policy.theta - lr * dtheta  # (S, V); -inf entries stay -inf
        inputs = dict(beta=beta, lr=lr)
        finite(
            (loss, dtheta, new[np.isfinite(policy.theta)]), "online_dpo_step", ["loss", "dtheta", "theta"], inputs
        )
    except BaseException:
        rng.bit_generator.state = rng_state
        if hasattr(mdp, "rollback"):
            mdp.rollback(mdp_state)
        raise
    policy.theta[...] = new  # the only write, after every check
    return {"loss": loss, "prompt": prompts, "chosen": [resp[i] for i in c], "rejected": [resp[i] for i in r]}


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# part 2: from minirl_lm/direct/dpo.py ---------------------------------------------------------
#   Bradley-Terry reward models and DPO (with IPO and conservative DPO), gradients by hand.


VARIANTS = ("dpo", "ipo", "conservative")


def _smoothing_variant(label_smoothing, variant):
    """Label smoothing belongs to the conservative variant."""
    if label_smoothing != 0.0 and variant != "conservative":
        return f"label_smoothing: expected 0 unless variant='conservative', got {label_smoothing} with {variant=}"


def dpo_loss(
    seq_logp_c,
    seq_logp_r,
    seq_logp_ref_c,
    seq_logp_ref_r,
    beta,
    *,
    variant="dpo",
    label_smoothing=0.0,
    weights=None,
):
    """DPO, IPO or conservative DPO on the sequence log-probs of `P` pairs, and its gradient."""
    P = seq_logp_c.size
    w = np.full(P, 1.0 / P) if weights is None else weights  # (P,)
    h = (seq_logp_c - seq_logp_ref_c) - (seq_logp_r - seq_logp_ref_r)  # (P,) log-ratio margin
    l, dh = _dpo_terms(h, beta, variant, label_smoothing)
    dseq_c = w * dh  # (P,) dh/dlogp_c = 1
    return float(np.sum(w * l)), (dseq_c, -dseq_c)  # dh/dlogp_r = -1


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


# input checks: from minirl_lm/core/validate.py ------------------------------------------------
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`


# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""
    kinds = {**kinds, **(args or {})}

    def declare(f):
        sig = inspect.signature(f)
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(**{p: a[p] for p in params if p in a})) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            if returns is None:
                return out
            numeric = {n: a[n] for n in kinds if isinstance(a[n], (float, np.ndarray))}  # not ints, options
            return finite(out, f.__name__, returns.split(), numeric)

        checked.core, checked.kinds = f, dict(kinds)  # the body, and what it declares
        checked.returns = returns.split() if returns else None  # the results' names, if declared
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
    leaves = [_flat(v) for v in (out if isinstance(out, tuple) else (out,))]  # one per result
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(v).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(leaves[i]).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def _flat(v):
    """Every number of a result (a number, an array, or a tuple of them, nested) as one array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`)."""
    shapes = [s.split() for s in shapes]

    def fits(s, shape, dims):
        return len(s) == len(shape) and all(
            (int(k) == n) if k.isdigit() else dims.get(k, n) == n for k, n in zip(s, shape)
        )

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in ("iub" if integer else "fiub"):  # float, int, uint, bool
            noun = "an integer array" if integer else "a real-valued array"
            raise TypeError(f"{name}: expected {noun}, got {_show(x)}")
        a = np.array(a, dtype=np.int64 if integer else np.float64)  # a copy: the caller's is never written
        ok = [s for s in shapes if fits(s, a.shape, dims)]
        if not ok:
            want = " or ".join(str(tuple(dims.get(k, int(k) if k.isdigit() else k) for k in s)) for s in shapes)
            raise ValueError(f"{name}: expected shape {want.replace(chr(39), '')}, got {a.shape}")
        if 0 in a.shape and not empty:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update((k, n) for k, n in zip(ok[0], a.shape) if not k.isdigit())
        all_finite = integer or np.isfinite(a).all()  # one pass on the good path
        if not all_finite and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not all_finite and (inf := np.isposinf(a) if neginf else np.isinf(a)).any():
            want = "finite values or -inf (no +inf)" if neginf else "finite values (no +-inf)"
            raise ValueError(f"{name}: expected {want}, got {int(inf.sum())} such entries")
        if neginf and not all_finite and (dead := np.isneginf(a).all(axis=-1)).any():  # -inf entries
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), got "
                f"{int(dead.sum())} all -inf rows, the first at {tuple(int(i) for i in np.argwhere(dead)[0])}"
            )
        if values is not None and not (among := functools.reduce(np.logical_or, [a == v for v in values])).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~among].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

    return read


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    return read


def one_of(options):
    """One of `options` (compared by equality; True is not 1)."""

    def read(x, name, dims):
        try:
            ok = not isinstance(x, bool) and x in set(options)
        except TypeError:
            raise TypeError(f"{name}: expected one of {list(options)}, got unhashable {_show(x)}") from None
        if not ok:
            raise ValueError(f"{name}: expected one of {list(options)}, got {x!r}"[:200])
        return x

    return read


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method, `theta`
    an attribute), whatever its type: what the body uses of it; `what` says what fits."""
    members = members.split()

    def lacks(x, m):
        return not callable(getattr(x, m[:-2], None)) if m.endswith("()") else not hasattr(x, m)

    def read(x, name, dims):
        if missing := [m.rstrip("()") for m in members if lacks(x, m)]:
            raise TypeError(
                f"{name}: expected {what} (with {', '.join(members)}), "
                f"got {type(x).__name__} without {', '.join(missing)}"
            )
        return x

    return read


def function(call, nargs):
    """A callable `call` (a string saying how it is called) taking `nargs` positional arguments."""

    def read(f, name, dims):
        if not callable(f) or isinstance(f, type):
            raise TypeError(f"{name}: expected a callable {call}, got {_show(f)}")
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # a builtin without a signature
            return f
        try:
            sig.bind(*range(nargs))
        except TypeError:
            raise TypeError(
                f"{name}: expected a callable {call} taking {nargs} positional arguments, "
                f"got one with signature {sig}"
            ) from None
        return f

    return read


def generator(rng, name, dims):
    """A `np.random.Generator`, the one source of every draw."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_show(rng)}"
        )
    return rng


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1


REFERENCE = has("a TabularPolicy", "logp() theta")  # a frozen reference: what a step reads of it


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

SEQ = array("P")  # one number per pair: a sequence log-prob, a reward
WEIGHTS = optional(array("P", low=0.0))  # nonnegative pair weights; None: 1/P each, the mean
PAIRS = dict(seq_logp_c=SEQ, seq_logp_r=SEQ, seq_logp_ref_c=SEQ, seq_logp_ref_r=SEQ, beta=POSITIVE)  # family's too
# the chosen and the rejected responses of P pairs, each side its own width
PAIR_TOKENS = dict(
    logp_c=array("P Tc"),
    mask_c=array("P Tc", values=(0.0, 1.0)),
    logp_r=array("P Tr"),
    mask_r=array("P Tr", values=(0.0, 1.0)),
)
REWARD = number()  # what a grader returns: a finite real number
PROBABILITY = number(0.0, 1.0)  # what a judge returns

ipo_loss = boundary(
    **PAIR_TOKENS,
    seq_logp_ref_c=SEQ,
    seq_logp_ref_r=SEQ,
    beta=POSITIVE,
    average=flag,
    weights=WEIGHTS,
    where=[_chosen_log_probs, _rejected_log_probs],
    returns=None,  # checked by _pair_result
)(ipo_loss)

simpo_loss = boundary(
    **PAIR_TOKENS,
    beta=POSITIVE,
    gamma=NONNEGATIVE,
    weights=WEIGHTS,
    where=[_chosen_log_probs, _rejected_log_probs],
    returns=None,  # checked by _pair_result
)(simpo_loss)

orpo_loss = boundary(
    **PAIR_TOKENS,
    lam=NONNEGATIVE,
    weights=WEIGHTS,
    where=[_chosen_log_probs, _rejected_log_probs, _chosen_odds, _rejected_odds],
    returns=None,  # checked by _pair_result
)(orpo_loss)

kto_loss = boundary(
    logp=TOKENS,
    mask=MASK,
    seq_logp_ref=array("B"),
    desirable=_bools("B"),
    beta=POSITIVE,
    z0=NONNEGATIVE,
    lambda_d=NONNEGATIVE,
    lambda_u=NONNEGATIVE,
    weights=optional(array("B", low=0.0)),
    where=[_response_log_probs],
    returns="loss dloss_dlogp",
)(kto_loss)

bradley_terry_judge = boundary(grader=function("grader(prompt, response)", 2), returns=None)(bradley_terry_judge)

online_dpo_step = boundary(
    mdp=has("a TokenMDP", "rollout() prompts N S V"),
    policy=has("a TabularPolicy", "logp() backward() sample() theta"),
    ref=REFERENCE,
    judge=function("judge(prompt, y_a, y_b)", 3),
    beta=POSITIVE,
    lr=POSITIVE,
    rng=generator,
    pairs_per_prompt=COUNT,
    where=[_table_shapes, _addressable_draws],
    returns=None,  # a step: checked before it commits
)(online_dpo_step)

dpo_loss = boundary(
    **PAIRS,
    variant=one_of(VARIANTS),
    label_smoothing=number(0.0, 0.5),
    weights=WEIGHTS,
    where=[_smoothing_variant],
    returns="loss gradient",
)(dpo_loss)
