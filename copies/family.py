# minirl_lm 0.1.0: a self-contained copy of minirl_lm/direct/family.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/direct/family.py -o DIR
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
product is. A loss or gradient beyond float64 is a ValueError naming the argument that drove it.

Where each lands (population pairs from `pi_ref`, Bradley-Terry labels; derived on the page
"Preferences beyond DPO", computed by `python examples/preferences.py`): sigmoid with an
f-divergence lands on the f-regularized optimum, in closed form; robust fits
`sigma(z) = (p - eps) / (1 - 2 eps)`, which is `pi*` only on labels flipped at rate `eps`; BCO,
NCA and SPPO fit each response on its own, to a point given by one equation per response and one
constant per prompt; APO-zero has no interior optimum (nor, on the page's task, APO-down); hinge
is a linear program (its vertex is found exactly there); EXO and DiscoPOP land elsewhere, with no
closed form.

Names in TRL 1.16.0 (`DPOConfig.loss_type`, `trl/trainer/dpo_trainer.py`; defaults in
parentheses, not results of this library): `loss_type` is TRL's name; `label_smoothing` (0.0),
`tau` is `discopop_tau` (0.05), `divergence` is `f_divergence_type` ("reverse_kl"), `alpha` is
`f_alpha_divergence_coef` (0.5). Imports NumPy, the checks, `core.ops` and `family_div`.
"""

import numbers

import numpy as np


__all__ = ["dpo_family_loss"]


MARGIN = ("sigmoid", "hinge", "robust", "exo_pair", "discopop")  # TRL allows an f-divergence
RESPONSE = ("bco_pair", "nca_pair", "sppo_hard", "apo_zero", "apo_down")  # reverse_kl only
LOSS_TYPES = MARGIN + RESPONSE


def dpo_family_loss(
    seq_logp_c,
    seq_logp_r,
    seq_logp_ref_c,
    seq_logp_ref_r,
    beta,
    loss_type,
    label_smoothing=0.0,
    tau=0.05,
    divergence="reverse_kl",
    alpha=0.5,
    weights=None,
):
    """One of TRL's DPO loss types on the sequence log-probs of `P` pairs, and its gradient.

    Args:
        seq_logp_c: `(P,)` `log pi_theta(y_c | x)`.
        seq_logp_r: `(P,)` `log pi_theta(y_r | x)`.
        seq_logp_ref_c: `(P,)` `log pi_ref(y_c | x)` (data, no gradient).
        seq_logp_ref_r: `(P,)` `log pi_ref(y_r | x)` (data, no gradient).
        beta: `> 0`.
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
        ValueError: no pairs, mismatched shapes, an option outside its loss, or a non-finite
            result (named after the argument that drove it).
    """
    lc, lr, lrc, lrr, beta, ls, tau, alpha, w = family_args(
        seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, loss_type, label_smoothing, tau, divergence,
        alpha, weights, LOSS_TYPES, MARGIN,
    )  # fmt: skip
    with np.errstate(over="ignore", invalid="ignore"):
        h_c, h_r = lc - lrc, lr - lrr  # (P,) sequence log-ratios
        l, d_c, d_r = _family_terms(h_c, h_r, beta, loss_type, ls, tau, divergence, alpha)
        loss = float(np.sum(w * l))
        d_c, d_r = w * d_c, w * d_r  # (P,)
    logps = largest(seq_logp_c=lc, seq_logp_r=lr, seq_logp_ref_c=lrc, seq_logp_ref_r=lrr)
    finite_result((h_c, h_r), logps, "the log-ratios h_c, h_r")
    # past the log-ratios, an overflow comes from beta (or 1/beta) or from the log-ratios' size
    drove = "beta" if max(beta, 1.0 / beta) >= max(np.abs(h_c).max(), np.abs(h_r).max()) else logps
    finite_result((loss, (d_c, d_r)), culprit((drove, (l, d_c, d_r)), "weights"), "the loss")
    return loss, (d_c, d_r)


def _family_terms(h_c, h_r, beta, loss_type, ls, tau, divergence, alpha):
    """Trusted core: per pair (l, dl/dh_c, dl/dh_r) (P,) of eq. (slic) ... (apo_down)."""
    if loss_type in RESPONSE:
        return _response_terms(h_c, h_r, beta, loss_type)
    s_c, ds_c = _f_score(h_c, divergence, alpha)  # eq. (f_score)
    s_r, ds_r = _f_score(h_r, divergence, alpha)
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


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/direct/family_div.py
#   The f-divergence scores of f-DPO and TR-DPO's soft reference update, gradients by hand.
# ----------------------------------------------------------------------------------------------


def _f_score(h, divergence, alpha):
    """Trusted core: the score s(h) and ds/dh, eq. (f_score), of log-ratios h (P,). Overflow of
    exp is left to the caller's finite guard (errstate ignored there)."""
    if divergence == "forward_kl":
        e = np.exp(-h)  # (P,) 1/t
        return -np.expm1(-h), e  # s = 1 - 1/t;  ds/dh = e^(-h)
    if divergence == "js_divergence":
        return np.log(2.0) - np.logaddexp(0.0, -h), sigmoid(-h)  # log 2 + log sigma(h)
    if divergence == "alpha_divergence" and abs(alpha - 1.0) >= 1e-6:
        t = (alpha - 1.0) * h  # (P,)
        return np.expm1(t) / (alpha - 1.0), np.exp(t)  # ds/dh = e^((a-1) h)
    return h, np.ones_like(h)  # reverse_kl (and alpha = 1)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
# ----------------------------------------------------------------------------------------------


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


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


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
