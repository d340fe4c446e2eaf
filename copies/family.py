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

import functools
import inspect
import numbers

import numpy as np


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


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# part 2: from minirl_lm/direct/dpo.py ---------------------------------------------------------
#   Bradley-Terry reward models and DPO (with IPO and conservative DPO), gradients by hand.


# part 3: from minirl_lm/direct/family_div.py --------------------------------------------------
#   The f-divergence scores of f-DPO and TR-DPO's soft reference update, gradients by hand.


DIVERGENCES = ("reverse_kl", "forward_kl", "js_divergence", "alpha_divergence")


def f_score(h, divergence, alpha=0.5):
    """The score `s(h)` of an f-divergence and `ds/dh`, eq. (f_score), at the log-ratios `h`."""
    if divergence == "forward_kl":
        return -np.expm1(-h), np.exp(-h)  # s = 1 - 1/t;  ds/dh = e^(-h) = 1/t
    if divergence == "js_divergence":
        return np.log(2.0) - np.logaddexp(0.0, -h), sigmoid(-h)  # log 2 + log sigma(h)
    if divergence == "alpha_divergence" and abs(alpha - 1.0) >= 1e-6:
        t = (alpha - 1.0) * h  # (P,)
        return np.expm1(t) / (alpha - 1.0), np.exp(t)  # ds/dh = e^((a-1) h)
    return h, np.ones_like(h)  # reverse_kl (and alpha = 1)


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


POSITIVE = number(0.0, low_open=True)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

SEQ = array("P")  # one number per pair: a sequence log-prob, a reward
WEIGHTS = optional(array("P", low=0.0))  # nonnegative pair weights; None: 1/P each, the mean
PAIRS = dict(seq_logp_c=SEQ, seq_logp_r=SEQ, seq_logp_ref_c=SEQ, seq_logp_ref_r=SEQ, beta=POSITIVE)  # family's too

dpo_family_loss = boundary(
    **PAIRS,
    loss_type=one_of(LOSS_TYPES),
    label_smoothing=number(0.0, 0.5),
    tau=POSITIVE,
    divergence=one_of(DIVERGENCES),
    alpha=number(),
    weights=WEIGHTS,
    where=[_smoothing_of_loss, _divergence_of_loss],
    returns="loss gradient",
)(dpo_family_loss)

f_score = boundary(h=array("P"), divergence=one_of(DIVERGENCES), alpha=number(), returns="s ds_dh")(f_score)
