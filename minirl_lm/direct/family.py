"""The rest of TRL's DPO family on sequence log-probs: hinge, robust, EXO, DiscoPOP, BCO, NCA,
SPPO (hard), APO-zero and APO-down, each with an f-divergence score where TRL allows one.

A pair has the sequence log-ratios `h_c = log pi(y_c|x) - log pi_ref(y_c|x)` and `h_r` (the same
for `y_r`). The margin losses act on `z = beta (s(h_c) - s(h_r))`, with `s` the f-divergence score
of `family_div.py`, eq. (f_score) (`s(h) = h` for reverse_kl, DPO's own):

```text
sigmoid    l = -log sigma(z)                                                  eq. (dpo), f-DPO
hinge      l = max(0, 1 - z)                                                  eq. (slic)
robust     l = ((1 - eps) softplus(-z) - eps softplus(z)) / (1 - 2 eps)        eq. (rdpo)
exo_pair   l = sigma(z) log(sigma(z) / (1 - eps)) + sigma(-z) log(sigma(-z) / eps)   eq. (exo)
discopop   l = softplus(-z) (1 - m) + e^(-z) m,   m = sigma(z / tau)           eq. (discopop)
```

and the per-response losses on `u_c = beta h_c`, `u_r = beta h_r` (reverse_kl only, as in TRL):

```text
bco_pair   l = softplus(-u_c) + softplus(u_r)                                 eq. (bco)
nca_pair   l = softplus(-u_c) + softplus(u_c) / 2 + softplus(u_r) / 2          eq. (nca)
sppo_hard  l = (h_c - 1/(2 beta))^2 + (h_r + 1/(2 beta))^2                    eq. (sppo)
apo_zero   l = sigma(-u_c) + sigma(u_r)                                       eq. (apo_zero)
apo_down   l = sigma(u_c) + sigma(-beta (h_c - h_r))                          eq. (apo_down)
```

(`softplus(-z) = -log sigma(z)`; `eps` is the argument `label_smoothing`, `tau` DiscoPOP's
temperature.) Gradients, by hand (`sigma' = sigma(z) sigma(-z)`):

```text
sigmoid    dl/dz = -sigma(-z)
hinge      dl/dz = -1 if z < 1 else 0              (0 at the kink z = 1, as torch's relu)
robust     dl/dz = (-(1 - eps) sigma(-z) - eps sigma(z)) / (1 - 2 eps)
exo_pair   dl/dz = sigma'(z) (z - log((1 - eps) / eps))
discopop   dl/dz = -sigma(-z) (1 - m) - e^(-z) m + (e^(-z) - softplus(-z)) m (1 - m) / tau
           dz/dh_c = beta ds/dh(h_c),  dz/dh_r = -beta ds/dh(h_r)
bco_pair   dl/dh_c = -beta sigma(-u_c);             dl/dh_r = beta sigma(u_r)
nca_pair   dl/dh_c = beta (sigma(u_c)/2 - sigma(-u_c));   dl/dh_r = beta sigma(u_r) / 2
sppo_hard  dl/dh_c = 2 (h_c - 1/(2 beta));          dl/dh_r = 2 (h_r + 1/(2 beta))
apo_zero   dl/dh_c = -beta sigma'(u_c);              dl/dh_r = beta sigma'(u_r)
apo_down   dl/dh_c = beta (sigma'(u_c) - sigma'(z));  dl/dh_r = beta sigma'(z),  z = beta (h_c - h_r)
```

and `dh/dlogp = 1` for the policy's sequence log-probs (the reference's are data): `dpo.token_grad`
spreads each over its response's tokens. The loss is the weighted sum over pairs (the mean by
default). DiscoPOP's `e^(-z) m` is computed as `exp(-z - softplus(-z/tau))`, finite where the
product is. A loss or gradient beyond float64 is one ValueError naming the function and the range
of its inputs.

Where each lands (population pairs from `pi_ref`, Bradley-Terry labels; derived on the page
"Preferences beyond DPO", computed by `python examples/preferences.py`): sigmoid with an
f-divergence lands on the f-regularized optimum, in closed form; robust fits
`sigma(z) = (p - eps) / (1 - 2 eps)`, which is `pi*` only on labels flipped at rate `eps`; BCO,
NCA and SPPO fit each response on its own, to a point given by one equation per response and one
constant per prompt; APO-zero has no interior optimum (nor, on the page's task, APO-down); hinge
is a linear program (its vertex is found exactly there); EXO and DiscoPOP land elsewhere, with no
closed form.

Names in TRL (`DPOConfig`; defaults in parentheses, `docs/next.md` keeps the version and the
files): `loss_type` is TRL's name; `label_smoothing` (0.0), `tau` is `discopop_tau` (0.05),
`divergence` is `f_divergence_type` ("reverse_kl"), `alpha` is `f_alpha_divergence_coef` (0.5).
"""

import numpy as np

from minirl_lm.boundary import POSITIVE, boundary, number, one_of
from minirl_lm.core.ops import sigmoid
from minirl_lm.direct.dpo import PAIRS, WEIGHTS
from minirl_lm.direct.family_div import DIVERGENCES, f_score

__all__ = ["MARGIN", "RESPONSE", "LOSS_TYPES", "dpo_family_loss"]

MARGIN = ("sigmoid", "hinge", "robust", "exo_pair", "discopop")  # TRL allows an f-divergence
RESPONSE = ("bco_pair", "nca_pair", "sppo_hard", "apo_zero", "apo_down")  # reverse_kl only
LOSS_TYPES = MARGIN + RESPONSE


def _smoothing_of_loss(label_smoothing, loss_type):
    """`eps` in `[0, 0.5)` for robust, `(0, 0.5]` for exo_pair, 0 for every other loss."""
    ok = {"robust": label_smoothing < 0.5, "exo_pair": label_smoothing > 0.0}.get(
        loss_type, label_smoothing == 0.0
    )
    if not ok:
        want = {"robust": "in [0, 0.5)", "exo_pair": "in (0, 0.5]"}.get(loss_type, "0")
        return f"label_smoothing: expected {want} with loss_type={loss_type!r}, got {label_smoothing}"


def _divergence_of_loss(divergence, loss_type):
    """An f-divergence only with a margin loss."""
    if divergence != "reverse_kl" and loss_type not in MARGIN:
        return (
            f"divergence: expected 'reverse_kl' with loss_type={loss_type!r} (an f-divergence only with "
            f"{', '.join(MARGIN)}), got {divergence!r}"
        )


@boundary(
    **PAIRS,
    loss_type=one_of(LOSS_TYPES),
    label_smoothing=number(0.0, 0.5),
    tau=POSITIVE,
    divergence=one_of(DIVERGENCES),
    alpha=number(),
    weights=WEIGHTS,
    where=[_smoothing_of_loss, _divergence_of_loss],
    returns="loss gradient",
)
def dpo_family_loss(
    seq_logp_c,
    seq_logp_r,
    seq_logp_ref_c,
    seq_logp_ref_r,
    beta,
    loss_type,
    *,
    label_smoothing=0.0,
    tau=0.05,
    divergence="reverse_kl",
    alpha=0.5,
    weights=None,
):
    """One of TRL's DPO loss types on the sequence log-probs of `P` pairs, and its gradient.

    The arguments of the pairs and `beta` are those of `dpo_loss` (one declaration, `PAIRS`): `seq_logp_c`,
    `seq_logp_r` the `(P,)` `log pi_theta(y | x)` of the chosen and the rejected responses,
    `seq_logp_ref_c`, `seq_logp_ref_r` their `log pi_ref(y | x)` (data, no gradient), `beta > 0`.

    Args:
        loss_type: one of `LOSS_TYPES` (TRL's names).
        label_smoothing: `eps` in `[0, 0.5]`: `[0, 0.5)` for `"robust"`, `(0, 0.5]` for
            `"exo_pair"`, 0 for every other loss.
        tau: DiscoPOP's temperature, `> 0` (TRL's `discopop_tau`).
        divergence: one of `family_div.DIVERGENCES`; not `"reverse_kl"` only with a margin loss.
        alpha: the alpha-divergence's coefficient (a real number).
        weights: `(P,)` nonnegative pair weights, default `1/P` (the mean).

    Returns:
        `(loss, (dloss_dseq_c, dloss_dseq_r))`: a float and two `(P,)` gradients.

    Raises:
        ValueError: a bad argument (named; an option outside its loss too), or a loss or
            gradient beyond float64 (named after the function, with the range of its inputs).
    """
    P = seq_logp_c.size
    w = np.full(P, 1.0 / P) if weights is None else weights  # (P,)
    h_c, h_r = seq_logp_c - seq_logp_ref_c, seq_logp_r - seq_logp_ref_r  # (P,) sequence log-ratios
    l, d_c, d_r = _family_terms(h_c, h_r, beta, loss_type, label_smoothing, tau, divergence, alpha)
    return float(np.sum(w * l)), (w * d_c, w * d_r)  # (P,)


def _family_terms(h_c, h_r, beta, loss_type, ls, tau, divergence, alpha):
    """Per pair (l, dl/dh_c, dl/dh_r) (P,) of eq. (slic) ... (apo_down)."""
    if loss_type in RESPONSE:
        return _response_terms(h_c, h_r, beta, loss_type)
    s_c, ds_c = f_score.core(h_c, divergence, alpha)  # eq. (f_score)
    s_r, ds_r = f_score.core(h_r, divergence, alpha)
    z = beta * (s_c - s_r)  # (P,) the implicit reward margin
    l, dz = _margin_terms(z, loss_type, ls, tau)
    return l, dz * beta * ds_c, -dz * beta * ds_r  # dz/dh_c = beta s'(h_c), dz/dh_r = -beta s'(h_r)


def _margin_terms(z, loss_type, ls, tau):
    """(l, dl/dz) (P,) of a margin loss at z (P,)."""
    if loss_type == "hinge":
        return np.maximum(0.0, 1.0 - z), -(z < 1.0).astype(float)  # eq. (slic)
    if loss_type == "exo_pair":
        q_w, q_l = sigmoid(z), sigmoid(-z)  # (P,) the policy's two-way softmax
        log_w, log_l = -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)
        l = q_w * (log_w - np.log1p(-ls)) + q_l * (log_l - np.log(ls))  # eq. (exo): KL to (1-eps, eps)
        return l, q_w * q_l * (z - np.log1p(-ls) + np.log(ls))  # sigma'(z) (z - log((1-eps)/eps))
    sp_neg = np.logaddexp(0.0, -z)  # (P,) -log sigma(z)
    if loss_type == "discopop":
        m = sigmoid(z / tau)  # (P,) eq. (discopop): the mixing weight
        e_m = np.exp(-z - np.logaddexp(0.0, -z / tau))  # e^(-z) m
        e_dm = np.exp(-z - np.logaddexp(0.0, -z / tau) - np.logaddexp(0.0, z / tau)) / tau  # e^(-z) m'
        l = sp_neg * (1.0 - m) + e_m
        return l, -sigmoid(-z) * (1.0 - m) - e_m + e_dm - sp_neg * m * (1.0 - m) / tau
    if loss_type == "robust":
        l = ((1.0 - ls) * sp_neg - ls * np.logaddexp(0.0, z)) / (1.0 - 2.0 * ls)  # eq. (rdpo)
        return l, (-(1.0 - ls) * sigmoid(-z) - ls * sigmoid(z)) / (1.0 - 2.0 * ls)
    return sp_neg, -sigmoid(-z)  # sigmoid: eq. (dpo)


def _response_terms(h_c, h_r, beta, loss_type):
    """(l, dl/dh_c, dl/dh_r) (P,) of a per-response loss."""
    u_c, u_r = beta * h_c, beta * h_r  # (P,) implicit rewards
    if loss_type == "sppo_hard":
        e_c, e_r = h_c - 0.5 / beta, h_r + 0.5 / beta  # eq. (sppo): targets +-1/(2 beta)
        return e_c * e_c + e_r * e_r, 2.0 * e_c, 2.0 * e_r
    if loss_type == "bco_pair":
        l = np.logaddexp(0.0, -u_c) + np.logaddexp(0.0, u_r)  # eq. (bco)
        return l, -beta * sigmoid(-u_c), beta * sigmoid(u_r)
    if loss_type == "nca_pair":
        l = np.logaddexp(0.0, -u_c) + 0.5 * np.logaddexp(0.0, u_c) + 0.5 * np.logaddexp(0.0, u_r)  # eq. (nca)
        return l, beta * (0.5 * sigmoid(u_c) - sigmoid(-u_c)), 0.5 * beta * sigmoid(u_r)
    dsig_c = sigmoid(u_c) * sigmoid(-u_c)  # (P,) sigma'(u_c)
    if loss_type == "apo_zero":
        dsig_r = sigmoid(u_r) * sigmoid(-u_r)
        return sigmoid(-u_c) + sigmoid(u_r), -beta * dsig_c, beta * dsig_r  # eq. (apo_zero)
    z = u_c - u_r  # apo_down: (P,) beta (h_c - h_r)
    dsig_z = sigmoid(z) * sigmoid(-z)
    return sigmoid(u_c) + sigmoid(-z), beta * (dsig_c - dsig_z), beta * dsig_z  # eq. (apo_down)
