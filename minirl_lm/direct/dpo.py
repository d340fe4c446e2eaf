"""Bradley-Terry reward models and DPO (with IPO and conservative DPO), gradients by hand.

A preference pair is a prompt `x` with a chosen response `y_c` and a rejected one `y_r`. Under
the Bradley-Terry model with reward `R`, `y_c` wins with probability
`sigma(R(x, y_c) - R(x, y_r))`:

```text
Pr(y_c > y_r | x) = sigma(R_c - R_r)                                 eq. (bradley_terry)
loss_BT = mean_p -log sigma(R_c - R_r) = mean_p softplus(-(R_c - R_r))
```

The tilted optimum of the KL-regularized objective (`optimum.py`, eq. (kl_optimum)) read
backwards says `R(x, y) = beta log(pi*(y|x) / pi_ref(y|x)) + beta log Z(x)`. Put that implicit
reward into eq. (bradley_terry) (`log Z` cancels in the difference) and the policy is fitted to
preferences directly, on sequence log-probs `log pi(y|x) = sum_t log pi(y_t | x, y_<t)`:

```text
h = (logp_c - logp_ref_c) - (logp_r - logp_ref_r)
DPO:          loss = -log sigma(beta h)                                eq. (dpo)
IPO:          loss = (h - 1 / (2 beta))^2                              eq. (ipo)
conservative: loss = -(1 - alpha) log sigma(beta h) - alpha log sigma(-beta h)   eq. (cdpo)
```

(`alpha` is the argument `label_smoothing`.) IPO here uses the summed log-ratios, as the IPO
paper writes it; TRL averages them over the response length first (the page "Where to go next"
cites the code and shows how to reproduce it).

Gradients, derived by hand (`z = beta h`; `d softplus(u)/du = sigma(u)`):

```text
d/dz [-log sigma(z)] = -sigma(-z)          dz/dh = beta     dh/dlogp_c = 1, dh/dlogp_r = -1
d/dh [(h - 1/(2 beta))^2] = 2 (h - 1/(2 beta))
d/dz [cdpo] = -(1 - alpha) sigma(-z) + alpha sigma(z)
```

and for eq. (bradley_terry) `dloss/dR_c = -sigma(-(R_c - R_r)) / P = -dloss/dR_r`. The reference
log-probs are data: no gradient flows into them. Sequence gradients reach the tokens through
`dloss/dlogp[b, t] = dloss/dseq_logp[b] mask[b, t]` (`token_grad`); the policy's backward does
the rest.

Stability: `-log sigma(z) = logaddexp(0, -z)` and `sigma(z) = exp(-logaddexp(0, -z))` never form
`exp(|z|)`, so margins `|beta h|` around `1e3` give finite losses, and per-pair gradients that
saturate at exactly 0 or `+-beta w_p`: `+-beta / P` with the default weights (the mean over `P`
pairs). Deviations: the loss is a weighted sum over pairs (mean by default), so a population
loss is the same function with weights; label smoothing is accepted by the conservative variant
only. A loss or gradient beyond float64 is one ValueError
naming the function and the range of its inputs. Demonstrated by `pytest
tests/direct/test_dpo.py` (the stationarity of the tilted optimum).

Names in the frameworks (defaults in parentheses; `docs/next.md` in the minirl_lm repository
keeps the versions and maps the rest, file by file):

```text
beta                    TRL DPOConfig.beta (0.1); OpenRLHF train_dpo --model.beta (0.1); verl:
                        no DPO trainer mapped
variant="dpo"           TRL loss_type="sigmoid" (default); OpenRLHF the default
variant="ipo"           TRL loss_type="ipo" (length-averaged:
                        preferences.ipo_loss(average=True)); OpenRLHF --model.ipo_enable
                        (summed, as here)
variant="conservative"  OpenRLHF --model.label_smoothing (0.0); TRL CPOTrainer "sigmoid" with
                        label_smoothing
```
"""

import numpy as np

from minirl_lm.boundary import MASK, POSITIVE, array, boundary, generator, number, one_of, optional, simplex
from minirl_lm.core.ops import sigmoid
from minirl_lm.core.validate import MAX_DRAWS

__all__ = [
    "SEQ",
    "WEIGHTS",
    "PAIRS",
    "bradley_terry_loss",
    "reward_table_loss",
    "dpo_loss",
    "token_grad",
    "bt_sample_preferences",
]

SEQ = array("P")  # one number per pair: a sequence log-prob, a reward
WEIGHTS = optional(array("P", low=0.0))  # nonnegative pair weights; None: 1/P each, the mean
PAIRS = dict(seq_logp_c=SEQ, seq_logp_r=SEQ, seq_logp_ref_c=SEQ, seq_logp_ref_r=SEQ, beta=POSITIVE)  # family's too
IDS = array("P", integer=True, low=0)
VARIANTS = ("dpo", "ipo", "conservative")

# ---------------------------------------------------------------- Bradley-Terry, eq. (bradley_terry)


@boundary(r_chosen=SEQ, r_rejected=SEQ, returns="loss gradient")
def bradley_terry_loss(r_chosen, r_rejected):
    """Mean Bradley-Terry negative log-likelihood of `P` pairs and its gradient, eq. (bradley_terry).

    Args:
        r_chosen: `(P,)` rewards `R_c` of the chosen responses.
        r_rejected: `(P,)` rewards `R_r` of the rejected responses.

    Returns:
        `(loss, (d_chosen, d_rejected))`: a float and two `(P,)` gradients.

    Raises:
        ValueError: a bad argument (named), or a loss beyond float64 (named after the function).
    """
    loss, dm = _bt(r_chosen - r_rejected)  # (P,) reward margin
    return loss, (dm, -dm)  # dm/dr_c = 1, dm/dr_r = -1


def _bt(m):
    """The mean of softplus(-m) over the margins m (P,) and its gradient in m."""
    loss = np.logaddexp(0.0, -m).mean()  # eq. (bradley_terry): mean softplus(-m)
    dm = -sigmoid(-m) / m.size  # (P,) d softplus(-m)/dm = -sigma(-m)
    return float(loss), dm


def _ids_in_table(r_phi, prompt, chosen, rejected):
    """Every pair's ids address an entry of the `(N, Y)` table."""
    for name, ids, axis in (("prompt", prompt, 0), ("chosen", chosen, 1), ("rejected", rejected, 1)):
        if ids.max() >= r_phi.shape[axis]:
            n = r_phi.shape[axis]
            return f"{name}: expected ids < {n} ({'rows' if axis == 0 else 'columns'} of r_phi), got {ids.max()}"


@boundary(r_phi=array("N Y"), prompt=IDS, chosen=IDS, rejected=IDS, where=[_ids_in_table], returns="loss dr_phi")
def reward_table_loss(r_phi, prompt, chosen, rejected):
    """Bradley-Terry loss of a tabular reward model `R_phi` and its gradient on the table.

    Pair `p` compares `r_phi[prompt[p], chosen[p]]` with `r_phi[prompt[p], rejected[p]]`.

    Args:
        r_phi: `(N, Y)` reward table: `N` prompts, `Y` responses each.
        prompt: `(P,)` int prompt ids in `[0, N)`.
        chosen: `(P,)` int response ids in `[0, Y)`.
        rejected: `(P,)` int response ids in `[0, Y)`.

    Returns:
        `(loss, dr_phi)`: a float and the `(N, Y)` gradient.

    Raises:
        ValueError: a bad argument (named), or a loss beyond float64 (named after the function).
    """
    m = r_phi[prompt, chosen] - r_phi[prompt, rejected]  # (P,)
    loss, dm = _bt(m)
    dr_phi = np.zeros_like(r_phi)  # (N, Y)
    np.add.at(dr_phi, (prompt, chosen), dm)  # scatter: repeated pairs accumulate
    np.add.at(dr_phi, (prompt, rejected), -dm)  # dm/dr_r = -1
    return loss, dr_phi


# ---------------------------------------------------------------- DPO and variants, eq. (dpo)


def _smoothing_variant(label_smoothing, variant):
    """Label smoothing belongs to the conservative variant."""
    if label_smoothing != 0.0 and variant != "conservative":
        return f"label_smoothing: expected 0 unless variant='conservative', got {label_smoothing} with {variant=}"


@boundary(
    **PAIRS,
    variant=one_of(VARIANTS),
    label_smoothing=number(0.0, 0.5),
    weights=WEIGHTS,
    where=[_smoothing_variant],
    returns="loss gradient",
)
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
    """DPO, IPO or conservative DPO on the sequence log-probs of `P` pairs, and its gradient.

    Args:
        seq_logp_c: `(P,)` `log pi_theta(y_c | x)`.
        seq_logp_r: `(P,)` `log pi_theta(y_r | x)`.
        seq_logp_ref_c: `(P,)` `log pi_ref(y_c | x)` (data, no gradient).
        seq_logp_ref_r: `(P,)` `log pi_ref(y_r | x)` (data, no gradient).
        beta: `> 0`.
        variant: `"dpo"`, `"ipo"` or `"conservative"`.
        label_smoothing: the flip rate `alpha` in `[0, 0.5]` (conservative only).
        weights: `(P,)` nonnegative pair weights, default `1/P` (the mean).

    Returns:
        `(loss, (dloss_dseq_c, dloss_dseq_r))`: a float and two `(P,)` gradients.

    Raises:
        ValueError: a bad argument (named; `label_smoothing` with a variant other than
            `"conservative"` too), or a loss or gradient beyond float64 (named after the
            function, with the range of its inputs).
    """
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


@boundary(dseq=array("B"), mask=MASK, returns="dloss_dlogp")
def token_grad(dseq, mask):
    """Spread a sequence-log-prob gradient over tokens: `dloss/dlogp[b, t] = dseq[b] mask[b, t]`.

    Since `log pi(y|x) = sum_t mask logp`, every real token gets its sequence's gradient.

    Args:
        dseq: `(B,)` gradient with respect to the sequence log-probs.
        mask: `(B, T)` 0/1 float mask; holes allowed.

    Returns:
        `(B, T)` `dloss_dlogp`, 0 at padding.
    """
    return dseq[:, None] * mask  # (B, T), finite: mask is 0/1


# ---------------------------------------------------------------- preference data


@boundary(
    reward=array("N Y"),
    mu=simplex("N Y"),
    n_pairs=number(1, MAX_DRAWS, integer=True),
    rng=generator,
    mu0=optional(simplex("N")),
    returns=None,  # ids
)
def bt_sample_preferences(reward, mu, n_pairs, rng, mu0=None):
    """Sample preference pairs from a Bradley-Terry model of a known reward.

    Draws `x ~ mu_0`, then `a, b ~ q(. | x)` independently, and `a` wins with probability
    `sigma(R(x, a) - R(x, b))`, eq. (bradley_terry).

    Ties are kept: `a` and `b` are independent, so `a == b` (`chosen == rejected`) happens with
    probability `sum_y q(y|x)^2` per pair; it is a draw of the stated model, not excluded
    (excluding would condition on `a != b` and change the pair distribution). Such a pair is
    harmless downstream: its margin is 0 for every reward table and every policy, so it adds
    the constant `log 2` (per unit weight) to the Bradley-Terry / DPO loss and nothing to the
    gradient on a table (`reward_table_loss`, or DPO through the policy's backward): its
    `d_chosen = -d_rejected` land on the same entries and cancel, up to the rounding of the
    accumulation. It does count in `P`, the denominator of the mean. Drop the rows with
    `chosen == rejected` to exclude them.

    Args:
        reward: `(N, Y)` the reward `R(x, y)`.
        mu: `(N, Y)` the distribution `q` the two responses are drawn from (a policy's or
            `pi_ref`'s probabilities, rows summing to 1).
        n_pairs: the number of pairs, `1 <= P <= core.validate.MAX_DRAWS` (an addressable array).
        rng: the `np.random.Generator` to draw from.
        mu0: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        `(prompt, chosen, rejected)`, each `(n_pairs,)` int64.
    """
    N, Y = reward.shape
    mu0 = np.full(N, 1.0 / N) if mu0 is None else mu0  # (N,)

    x = rng.choice(N, size=n_pairs, p=mu0)  # (P,)
    a = np.empty(n_pairs, dtype=np.int64)
    b = np.empty(n_pairs, dtype=np.int64)
    for n in range(N):  # responses drawn prompt by prompt
        at = np.flatnonzero(x == n)
        a[at] = rng.choice(Y, size=at.size, p=mu[n])
        b[at] = rng.choice(Y, size=at.size, p=mu[n])
    a_wins = rng.random(n_pairs) < sigmoid(reward[x, a] - reward[x, b])  # eq. (bradley_terry); sigma(+-inf) = 1, 0
    return x, np.where(a_wins, a, b), np.where(a_wins, b, a)
