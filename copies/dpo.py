# minirl_lm 0.1.0: a self-contained copy of minirl_lm/direct/dpo.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/direct/dpo.py -o DIR
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
only. Demonstrated by `pytest tests/direct/test_dpo.py` (the stationarity of the tilted optimum).

Imports NumPy, `minirl_lm.core.checks` and `minirl_lm.core.ops` only.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

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

import numbers

import numpy as np


__all__ = ["bradley_terry_loss", "reward_table_loss", "dpo_loss", "token_grad",
    "bt_sample_preferences"]


# ---------------------------------------------------------------- Bradley-Terry, eq. (bradley_terry)


def bradley_terry_loss(r_chosen, r_rejected):
    """Mean Bradley-Terry negative log-likelihood of `P` pairs and its gradient, eq. (bradley_terry).

    Args:
        r_chosen: `(P,)` rewards `R_c` of the chosen responses.
        r_rejected: `(P,)` rewards `R_r` of the rejected responses.

    Returns:
        `(loss, (d_chosen, d_rejected))`: a float and two `(P,)` gradients.
    """
    r_c, r_r = bt_pairs(r_chosen, r_rejected)
    # m is finite or +-inf (finite inputs), never NaN, and so are softplus(-m) and sigma(-m):
    # no invalid operation can occur here, only overflow
    with np.errstate(over="ignore"):
        loss, dm = _bt(r_c - r_r)  # (P,) reward margin
    return finite_result(
        (loss, (dm, -dm)), largest(r_chosen=r_c, r_rejected=r_r), "the margin r_chosen - r_rejected"
    )  # dm/dr_c = 1, dm/dr_r = -1


def _bt(m):
    """Trusted core: the mean of softplus(-m) over the margins m (P,) and its gradient in m."""
    loss = np.logaddexp(0.0, -m).mean()  # eq. (bradley_terry): mean softplus(-m)
    dm = -sigmoid(-m) / m.size  # (P,) d softplus(-m)/dm = -sigma(-m)
    return float(loss), dm


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
    """
    r_phi, prompt, chosen, rejected = reward_table_pairs(r_phi, prompt, chosen, rejected)
    with np.errstate(over="ignore"):  # a difference of finite entries: no NaN
        m = r_phi[prompt, chosen] - r_phi[prompt, rejected]  # (P,)
        loss, dm = _bt(m)
    finite_result(m, "r_phi", "the reward margins")
    finite_result(loss, "r_phi", "the mean loss")  # P margins near -1e308 overflow their sum
    dr_phi = np.zeros_like(r_phi)  # (N, Y)
    np.add.at(dr_phi, (prompt, chosen), dm)  # scatter: repeated pairs accumulate
    np.add.at(dr_phi, (prompt, rejected), -dm)  # dm/dr_r = -1
    return loss, dr_phi


# ---------------------------------------------------------------- DPO and variants, eq. (dpo)


def dpo_loss(
    seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, variant="dpo", label_smoothing=0.0, weights=None
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
        ValueError: no pairs, mismatched shapes, `label_smoothing` with a variant other than
            `"conservative"`, or a non-finite result (named after the argument that drove it).
    """
    lc, lr, lrc, lrr, beta, ls, w = dpo_args(
        seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, variant, label_smoothing, weights
    )
    with np.errstate(over="ignore", invalid="ignore"):
        h = (lc - lrc) - (lr - lrr)  # (P,) log-ratio margin
    logps = largest(seq_logp_c=lc, seq_logp_r=lr, seq_logp_ref_c=lrc, seq_logp_ref_r=lrr)
    finite_result(h, logps, "the log-ratio margin h")
    loss, dseq_c = _dpo(h, beta, w, logps, variant, ls)
    return loss, (dseq_c, -dseq_c)  # dh/dlogp_r = -1


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


def token_grad(dseq, mask):
    """Spread a sequence-log-prob gradient over tokens: `dloss/dlogp[b, t] = dseq[b] mask[b, t]`.

    Since `log pi(y|x) = sum_t mask logp`, every real token gets its sequence's gradient.

    Args:
        dseq: `(B,)` gradient with respect to the sequence log-probs.
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B, T)` `dloss_dlogp`, 0 at padding.
    """
    dseq, mask = token_grad_args(dseq, mask)
    return dseq[:, None] * mask  # (B, T), finite: mask is 0/1


# ---------------------------------------------------------------- preference data


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
        n_pairs: the number of pairs, `1 <= P <= checks.MAX_DRAWS` (an addressable array).
        rng: the `np.random.Generator` to draw from.
        mu0: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        `(prompt, chosen, rejected)`, each `(n_pairs,)` int64.
    """
    reward, mu, n_pairs, rng, mu0 = bt_sample_args(reward, mu, n_pairs, rng, mu0)
    N, Y = reward.shape

    x = rng.choice(N, size=n_pairs, p=mu0)  # (P,)
    a = np.empty(n_pairs, dtype=np.int64)
    b = np.empty(n_pairs, dtype=np.int64)
    for n in range(N):  # responses drawn prompt by prompt
        at = np.flatnonzero(x == n)
        a[at] = rng.choice(Y, size=at.size, p=mu[n])
        b[at] = rng.choice(Y, size=at.size, p=mu[n])
    with np.errstate(over="ignore"):  # a margin beyond float64: sigma(+-inf) = 1 or 0
        a_wins = rng.random(n_pairs) < sigmoid(reward[x, a] - reward[x, b])  # eq. (bradley_terry)
    return x, np.where(a_wins, a, b), np.where(a_wins, b, a)


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/direct/checks.py
#   The boundary of the direct-alignment part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


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


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
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


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


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
