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

import functools
import inspect
import numbers

import numpy as np


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

VARIANTS = ("dpo", "ipo", "conservative")

# ---------------------------------------------------------------- Bradley-Terry, eq. (bradley_terry)


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


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


def simplex(*shapes):
    """Probabilities: a float64 array of one of `shapes`, entries >= 0, each row (last axis)
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that
    passes here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

    return read


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


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

SEQ = array("P")  # one number per pair: a sequence log-prob, a reward
WEIGHTS = optional(array("P", low=0.0))  # nonnegative pair weights; None: 1/P each, the mean
PAIRS = dict(seq_logp_c=SEQ, seq_logp_r=SEQ, seq_logp_ref_c=SEQ, seq_logp_ref_r=SEQ, beta=POSITIVE)  # family's too
IDS = array("P", integer=True, low=0)

bradley_terry_loss = boundary(r_chosen=SEQ, r_rejected=SEQ, returns="loss gradient")(bradley_terry_loss)

reward_table_loss = boundary(
    r_phi=array("N Y"), prompt=IDS, chosen=IDS, rejected=IDS, where=[_ids_in_table], returns="loss dr_phi"
)(reward_table_loss)

dpo_loss = boundary(
    **PAIRS,
    variant=one_of(VARIANTS),
    label_smoothing=number(0.0, 0.5),
    weights=WEIGHTS,
    where=[_smoothing_variant],
    returns="loss gradient",
)(dpo_loss)

token_grad = boundary(dseq=array("B"), mask=MASK, returns="dloss_dlogp")(token_grad)

bt_sample_preferences = boundary(
    reward=array("N Y"),
    mu=simplex("N Y"),
    n_pairs=number(1, MAX_DRAWS, integer=True),
    rng=generator,
    mu0=optional(simplex("N")),
    returns=None,  # ids
)(bt_sample_preferences)
