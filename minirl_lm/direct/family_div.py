"""The f-divergence scores of f-DPO and TR-DPO's soft reference update, gradients by hand.

**f-DPO.** Replacing `KL(pi || pi_ref)` in the regularized objective by an f-divergence
`D_f(pi || pi_ref) = E_{pi_ref} f(pi / pi_ref)` changes the implicit reward from
`beta log(pi / pi_ref)` to `beta f'(pi / pi_ref)`. On the sequence log-ratio `h = log pi(y|x) -
log pi_ref(y|x)` (`t = e^h`) the score `s(h) = f'(e^h)` of each divergence, and its derivative:

```text
reverse_kl        f'(t) = log t + 1 (the 1 cancels)   s = h                        ds/dh = 1
forward_kl        f'(t) = 1 - 1/t                     s = 1 - e^(-h)               ds/dh = e^(-h)
js_divergence     f'(t) = log(2t / (t + 1))           s = log 2 + log sigma(h)     ds/dh = sigma(-h)
alpha_divergence  f'(t) = (t^(a-1) - 1) / (a - 1)     s = (e^((a-1) h) - 1)/(a-1)  ds/dh = e^((a-1) h)
                                                                                   eq. (f_score)
```

(`a` is the argument `alpha`, TRL's `f_alpha_divergence_coef`; at `|a - 1| < 1e-6` the score is
`h`, as TRL falls back to reverse_kl.) The margin of a pair is `s(h_c) - s(h_r)`; `family.py`
puts it into the losses that TRL allows an f-divergence for. Deviation from TRL: the exponent of
the alpha score is not clamped at 80 (TRL clamps it so that float32 stays finite); float64 only
fails beyond about 709, and then the loss that uses the score raises (its one finite check).

**TR-DPO.** The reference is not frozen: every `tau` optimizer steps it is pulled towards the
policy, in parameters, `theta_ref <- (1 - alpha) theta_ref + alpha theta`, eq. (tr_dpo_sync). On
a tabular softmax that is a per-state geometric mixture of the two next-token distributions.
An entry that is `-inf` (an impossible token) in either table stays `-inf` unless its weight is
0.

Names in TRL (defaults in parentheses; `docs/next.md` keeps the version and the files):

```text
divergence          TRL DPOConfig.f_divergence_type ("reverse_kl")
alpha               TRL DPOConfig.f_alpha_divergence_coef (0.5)
sync_reference      TRL DPOConfig.sync_ref_model (False), ref_model_mixup_alpha (0.6),
                    ref_model_sync_steps (512): SyncRefModelCallback._sync_target_model
```

Demonstrated by `python examples/preferences.py` (the rows fdpo_* and tr_dpo).
"""

import numpy as np

from minirl_lm.boundary import array, boundary, number, one_of
from minirl_lm.core.ops import sigmoid

__all__ = ["DIVERGENCES", "f_score", "sync_reference"]

DIVERGENCES = ("reverse_kl", "forward_kl", "js_divergence", "alpha_divergence")


@boundary(h=array("P"), divergence=one_of(DIVERGENCES), alpha=number(), returns="s ds_dh")
def f_score(h, divergence, alpha=0.5):
    """The score `s(h)` of an f-divergence and `ds/dh`, eq. (f_score), at the log-ratios `h`.

    Args:
        h: `(P,)` sequence log-ratios `log pi(y|x) - log pi_ref(y|x)`.
        divergence: one of `DIVERGENCES`.
        alpha: the alpha-divergence's coefficient (a real number; `|alpha - 1| < 1e-6` is
            reverse_kl).

    Returns:
        `(s, ds_dh)`: two `(P,)` arrays.

    Raises:
        ValueError: a bad argument (named), or a score beyond float64 (named after the function).
    """
    if divergence == "forward_kl":
        return -np.expm1(-h), np.exp(-h)  # s = 1 - 1/t;  ds/dh = e^(-h) = 1/t
    if divergence == "js_divergence":
        return np.log(2.0) - np.logaddexp(0.0, -h), sigmoid(-h)  # log 2 + log sigma(h)
    if divergence == "alpha_divergence" and abs(alpha - 1.0) >= 1e-6:
        t = (alpha - 1.0) * h  # (P,)
        return np.expm1(t) / (alpha - 1.0), np.exp(t)  # ds/dh = e^((a-1) h)
    return h, np.ones_like(h)  # reverse_kl (and alpha = 1)


def _mix_keeps_a_finite_entry(theta_ref, theta, mixup):
    """Strictly between 0 and 1 the mix is finite only where both tables are: every row keeps one."""
    if 0.0 < mixup < 1.0 and (dead := ~(np.isfinite(theta_ref) & np.isfinite(theta)).any(axis=1)).any():
        row = int(np.flatnonzero(dead)[0])
        return (
            f"theta: expected a finite entry where theta_ref has one, in every row (the mix at mixup = {mixup:g} "
            f"is -inf where either is), got row {row} with none in common"
        )


@boundary(
    theta_ref=array("S V", neginf=True),
    theta=array("S V", neginf=True),
    mixup=number(0.0, 1.0),
    where=[_mix_keeps_a_finite_entry],
    returns=None,
)
def sync_reference(theta_ref, theta, mixup):
    """TR-DPO's soft update of the reference, eq. (tr_dpo_sync): `(1 - alpha) theta_ref + alpha theta`.

    Args:
        theta_ref: `(S, V)` the reference's logits (`-inf` for an impossible token allowed; every
            row with a finite entry).
        theta: `(S, V)` the policy's logits (`-inf` allowed; every row with a finite entry, and for
            `0 < mixup < 1` one where `theta_ref` is finite too, so that the mix stays a policy).
        mixup: `alpha` in `[0, 1]` (TRL's `ref_model_mixup_alpha`); 0 keeps the reference,
            1 copies the policy.

    Returns:
        `(S, V)` the new reference logits (a new array; the inputs are not written). An entry
        is `-inf` where a table with a positive weight has `-inf` (its result may hold `-inf`:
        not checked for finiteness); never NaN or `+inf`.
    """
    a = (1.0 - mixup) * theta_ref if mixup < 1.0 else np.zeros_like(theta)  # (S, V) a weight 0 drops -inf
    b = mixup * theta if mixup > 0.0 else np.zeros_like(theta)  # (S, V)
    return a + b  # eq. (tr_dpo_sync); -inf + finite = -inf, -inf + -inf = -inf: no NaN
