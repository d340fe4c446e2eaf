"""Rejection sampling fine-tuning: expert iteration, RAFT, STaR, and what its step ascends.

Sample `K` responses per prompt, keep the accepted ones, take a maximum-likelihood step on them
(expert iteration, Anthony et al. 2017; STaR, Zelikman et al. 2022, keeps the verified
rationales; RAFT, Dong et al. 2023, keeps the best of each group). `accepted` marks the kept
rows, eq. (rft_accept):

```text
rule "verified":  a_k = 1[R(x, y_k) >= threshold]          (a verifier: threshold 1)
rule "best":      a_k = 1 for the first draw of the group with the group's largest reward
```

The loss, for `N` groups of `K` rows (row `n*K + k` is draw `k` of prompt `n`), with
`A_n = sum_k a_k` the number kept:

```text
L = -(1/N) sum_n c_n sum_k a_k sum_t mask[k, t] logp[k, t]                       eq. (rft_loss)
c_n = 1/A_n   (norm "accepted": a mean over the kept responses; 0 when A_n = 0)
c_n = 1/K     (norm "group": a mean over the whole group)
dL/dlogp[k, t] = -(1/N) c_n a_k mask[k, t]
```

What the step ascends. Write `s(y) = grad log pi(y|x)` and, for a binary verifier, `p(x) =
P_pi(R = 1 | x)` the prompt's success. Since `grad p = E_pi[R s]`,

```text
E_{y ~ pi | R = 1}[s(y)] = E_pi[R s] / p = grad p / p = grad log p(x)            eq. (rft_identity)
```

so a step on accepted responses ascends the log of each prompt's success, not the success: per
prompt it is REINFORCE's `grad p` weighted by `1/p`, the hard prompts most (DAPO's dynamic
sampling reweights by `1 / P(mixed group)` instead, `pg/shaping.py`). With `K` draws and the
mean over the kept ones the identity holds given `A_n = m >= 1` (the kept draws are then `m`
i.i.d. draws of `pi | R = 1`), and the step is 0 when `A_n = 0`, so exactly

```text
E[-grad_x L] = (1/N) (1 - (1 - p)^K) grad log p = (1/N) f_K(p) grad p,
f_K(p) = (1 - (1 - p)^K) / p = sum_{j<K} (1 - p)^j                              eq. (rft_finite_k)
```

short of `grad log p` by the probability that no draw is accepted, and finite at `p = 0`. The
norm "group" gives `(1/N) grad p` exactly, at every `K` (it is REINFORCE with the 0/1 reward and
no baseline), eq. (rft_group). The rule "best" keeps one draw a group, the best-of-K draw, so its
step is the score at a best-of-K sample: `(1/N) (pi_K - pi)` on the softmax logits of a finite
response set (`pi_K` of eq. (bon_law), `best_of_n`), a cross-entropy step towards best-of-K,
eq. (raft_top1) (divided by `K` with the norm "group").

`expected_update` computes the exact expectation for any rule, norm and reward through the
multinomial law of a group (`minirl_lm.exact.groups`, eq. (exact_multinomial)): the update is
linear in the per-slot coefficients, and the slots of a sorted multiset stand for every order of
its draws, so "the first best draw" puts `1/(number of tied best slots)` on each of them.
`closed_form_update` is eqs. (rft_finite_k), (rft_group) and (raft_top1); the tests check both
against a brute-force sum over every ordered tuple of draws.

    $ python examples/best_of_n.py    # the identity, then RFT against GRPO and REINFORCE

Names in the frameworks: see the page "Best-of-N and rejection sampling".
"""

import numpy as np

from minirl_lm.boundary import COUNT, MASK, TOKENS, array, boundary, number, one_of, simplex
from minirl_lm.exact.groups import _group_law, _group_updates
from minirl_lm.select.bestofn import N_MAX, best_of_n

__all__ = ["GROUPS_MAX", "accepted", "rejection_loss", "expected_update", "closed_form_update"]

GROUPS_MAX = 200_000  # the exact update enumerates C(Y + K - 1, K) multisets per prompt
CELLS_MAX = 2 * 10**7  # and holds their (M, K, Y) scores at once: 160 MB
RULE = one_of(("verified", "best"))
NORM = one_of(("accepted", "group"))
THRESHOLD = number()  # the verifier's pass mark: any finite number
UPDATE = dict(
    pi=simplex("N Y"),
    reward=array("N Y"),
    K=number(1, N_MAX, integer=True),
    rule=RULE,
    norm=NORM,
    threshold=THRESHOLD,
)


def _groups_of_k(K, reward=None, mask=None):
    """`K` divides the rows (of `reward`, or of `mask`): whole groups of K draws."""
    name, B = ("reward", reward.shape[0]) if reward is not None else ("mask", mask.shape[0])
    if B % K:
        return f"K: expected a group size dividing the {B} rows of {name}, got {K}"


def _few_multisets(pi, K):
    """The exact update enumerates a prompt's multisets, `M = C(Y + K - 1, K) <= GROUPS_MAX`, and
    holds `M * K * Y <= CELLS_MAX` scores at once (counted without building the big integer)."""
    Y = pi.shape[1]
    n, r = Y + K - 1, min(K, Y - 1)
    M = 1
    for j in range(1, r + 1):  # M = C(n - r + j, j), rising to C(n, r) = C(Y + K - 1, K)
        M = M * (n - r + j) // j
        if M > GROUPS_MAX:
            sign = "=" if j == r else ">="
            return f"K: expected at most {GROUPS_MAX} groups of K a prompt, got C({Y} + {K} - 1, {K}) {sign} {M}"
    if M * K * Y > CELLS_MAX:
        return (
            f"K: expected at most {CELLS_MAX} scores of a prompt's groups at once (M * K * Y, "
            f"M = C({Y} + {K} - 1, {K})), got {M} * {K} * {Y} = {M * K * Y}"
        )


@boundary(reward=array("B"), K=COUNT, rule=RULE, threshold=THRESHOLD, where=[_groups_of_k], returns="accepted")
def accepted(reward, K, rule="verified", threshold=1.0):
    """Which responses a rejection-sampling step keeps, eq. (rft_accept).

    Args:
        reward: `(B,)` rewards, `B = N*K`, grouped prompt-major.
        K: responses per prompt, dividing `B`.
        rule: `"verified"` (`R >= threshold`) or `"best"` (the first draw of each group with the
            group's largest reward: one per group).
        threshold: the verifier's pass mark (rule `"verified"`).

    Returns:
        `(B,)` float64 0/1.
    """
    if rule == "verified":
        return (reward >= threshold).astype(np.float64)
    r = reward.reshape(-1, K)  # (N, K)
    a = np.zeros(r.shape)  # (N, K)
    a[np.arange(r.shape[0]), r.argmax(axis=1)] = 1.0  # argmax: the first of the tied best
    return a.ravel()


@boundary(
    logp=TOKENS,
    mask=MASK,
    accept=array("B", values=(0.0, 1.0)),
    K=COUNT,
    norm=NORM,
    where=[_groups_of_k],
    returns="loss dloss_dlogp",
)
def rejection_loss(logp, mask, accept, K, norm="accepted"):
    """The maximum-likelihood loss on the kept responses and its gradient, eq. (rft_loss).

    Args:
        logp: `(B, T)` token log-probs `log pi(y_t | s_t)`.
        mask: `(B, T)` 0/1 mask of the trained tokens (holes allowed).
        accept: `(B,)` 0/1, from `accepted`.
        K: responses per prompt, dividing `B` (row `n*K + k` is draw `k` of prompt `n`).
        norm: `"accepted"` (mean over the kept responses of a group, 0 if none) or `"group"`
            (sum over the kept ones divided by K).

    Returns:
        `(loss, dloss_dlogp)`: the float loss and its `(B, T)` gradient.
    """
    a = accept.reshape(-1, K)  # (N, K)
    N = a.shape[0]
    if norm == "accepted":
        n_kept = a.sum(axis=1, keepdims=True)  # (N, 1) A_n
        c = np.divide(1.0, n_kept, out=np.zeros_like(n_kept), where=n_kept > 0)  # (N, 1) 1/A_n
    else:
        c = np.full((N, 1), 1.0 / K)  # (N, 1)
    w = (c * a).reshape(-1, 1) / N  # (B, 1) (1/N) c_n a_k
    dlogp = -w * mask  # (B, T) eq. (rft_loss): dL/dlogp = -(1/N) c_n a_k mask
    loss = float((dlogp * logp).sum())  # L = sum dL/dlogp * logp: the loss is linear in logp
    return loss, dlogp


def _slot_coefs(rv, K, rule, norm, threshold):
    """Per-slot coefficients (M, K) of the ascent update for every multiset's rewards rv (M, K)."""
    if rule == "verified":
        a = (rv >= threshold).astype(np.float64)  # (M, K)
    else:
        best = rv == rv.max(axis=1, keepdims=True)  # (M, K) the tied best slots
        a = best / best.sum(axis=1, keepdims=True)  # (M, K) the first of them, in law: 1/ties each
    if norm == "group":
        return a / K
    n_kept = (rv >= threshold).sum(axis=1, keepdims=True) if rule == "verified" else 1  # (M, 1) A_n
    return np.divide(a, n_kept, out=np.zeros_like(a), where=np.broadcast_to(n_kept, a.shape) > 0)


@boundary(**UPDATE, where=[_few_multisets], returns="update")
def expected_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """The exact `E[-grad_theta L]` of eq. (rft_loss) on softmax logits over a finite response set.

    `pi(.|x) = softmax(theta[x])` over `Y` responses, one group of `K` i.i.d. draws a prompt,
    every multiset of the group weighted by its multinomial probability, eq. (exact_multinomial).

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        K: responses per prompt, `M = C(Y + K - 1, K) <= 200000` multisets with
            `M * K * Y <= 2 * 10**7` (the scores the enumeration holds at once).
        rule: `"verified"` or `"best"`, as in `accepted`.
        norm: `"accepted"` or `"group"`, as in `rejection_loss`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`.
    """
    N, Y = pi.shape
    out = np.zeros((N, Y))
    for n in range(N):
        Yg, P = _group_law(pi[n], K)  # (M, K) multisets, (M,) eq. (exact_multinomial)
        coef = _slot_coefs(reward[n, Yg], K, rule, norm, threshold)[:, :, None]  # (M, K, 1)
        scores = (np.eye(Y) - pi[n])[:, None, :]  # (Y, 1, Y) grad log pi(y) = e_y - pi, T = 1
        g = _group_updates(Yg, [coef], [scores])[0]  # (M, Y) each multiset's update
        out[n] = P @ g / N  # (Y,)
    return out


@boundary(**UPDATE, returns="update")
def closed_form_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """Eqs. (rft_finite_k), (rft_group), (raft_top1): the exact expected update in closed form.

    Rule `"verified"`: `(1/N) f_K(p) pi (s - p)` with `s = 1[R >= threshold]`, `p = E_pi s` and
    `f_K(p) = sum_{j<K} (1 - p)^j` (norm `"accepted"`) or `f_K = 1` (norm `"group"`). Rule
    `"best"`: `(1/N) (pi_K - pi)`, divided by `K` with the norm `"group"`.

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards.
        K: responses per prompt.
        rule: `"verified"` or `"best"`.
        norm: `"accepted"` or `"group"`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`, equal to `expected_update`.
    """
    N = pi.shape[0]
    if rule == "best":
        q = best_of_n.core(pi, reward, K)  # (N, Y) eq. (bon_law) at N = K
        return (q - pi) / (N * (K if norm == "group" else 1))  # eq. (raft_top1)
    s = (reward >= threshold).astype(np.float64)  # (N, Y)
    p = (pi * s).sum(axis=1, keepdims=True)  # (N, 1) success
    grad_p = pi * (s - p)  # (N, Y) d p / d theta = pi (s - p)
    if norm == "group":
        return grad_p / N  # eq. (rft_group)
    f = sum((1.0 - p) ** j for j in range(K))  # (N, 1) f_K(p) = (1 - (1 - p)^K) / p
    return f * grad_p / N  # eq. (rft_finite_k)
