"""Batch statistics couple the prompts: exact moments through the law of the summed statistics.

A batch holds one group per prompt. When the advantage or the normalizer uses a statistic of
the whole batch (TRL's `scale_rewards="batch"`, REINFORCE++'s whitening over every token, the
token count of `token_mean`), prompt n's update is no longer a function of its own group:

    g = sum_n ( a(z) P_n[i_n] - b(z) Q_n[i_n] + e(z) Rg_n[i_n] ),   z = sum_n s_n[i_n]

with `i_n` the outcome (multiset) of prompt n's group, `P_n`, `Q_n`, `Rg_n` its update's three
parts (advantage-weighted scores, plain scores, penalty terms) and a, b, e scalars of the summed
statistics `z = (cnt, S1, S2, ntok)`, `s_n[i]` outcome i's own:

    zeta = 1 / max(ntok, 1) under token_mean, else 1
    batch_std:  s = 1 / (sqrt(max(S2 - S1^2 / cnt, 0) / cnt) + eps),  mu = 0
    whiten:     mu = S1 / max(cnt, 1),  var = max(S2 - S1 mu, 0) / max(cnt - 1, 1),
                s = 1 / sqrt(var + eps) if var > 0 else 0
    none:       s = 1, mu = 0
    a = zeta s,  b = zeta s mu,  e = zeta                                         (exact_batch_scalars)

Given z the update is linear in per-prompt terms, and different prompts never share a state, so
`g_n . g_n' = 0` and

    E[g]   = sum_n ( W_n^a P_n - W_n^b Q_n + W_n^e Rg_n )
    E|g|^2 = sum_n ( W_n^aa |P_n|^2 + W_n^bb |Q_n|^2 + W_n^ee |Rg_n|^2
                     - 2 W_n^ab P_n.Q_n + 2 W_n^ae P_n.Rg_n - 2 W_n^be Q_n.Rg_n )  (exact_batch)

with `W_n^f[i] = E[f(z) 1[i_n = i]]`, f in (a, b, e, aa, bb, ee, ab, ae, be). The groups are
independent, so with `Z_{-n} = sum_{n' != n} s_n'[i_n']` (independent of `i_n`)

    W_n^f[i] = P_n[i] h_n^f(s_n[i]),   h_n^f(v) = sum_z p_{-n}(z) f(v + z),
    p_{-n} = p_0 * ... * p_{n-1} * p_{n+1} * ... * p_{N-1},   p_n(v) = sum_{i: s_n[i] = v} P_n[i]
                                                                                  (exact_batch_conv)

(`*` the convolution of laws on statistic values). Only the statistics the scalars read count
(`ntok` alone for `none` under token_mean, none at all without it), so outcomes with equal
statistics merge into one value v of `p_n`, and `p_{-n}` has one entry per distinct sum, not
per combination of outcomes. Nothing is approximated: (exact_batch_conv) regroups the terms of
the sum over the joint outcome, `prod_n M_n` points (70^3 = 343,000 at K = 4 in the atlas,
495^3 = 1.2e8 at K = 8), by the value of `z`.

The sums of statistics are exact where the values lie on a common grid: each value an integer
times 2^-k (rewards 0, 0.5, 1; token counts; a group mean of dyadic rewards over K = 8), with
every partial sum below 2^53 steps. There `z` is keyed by its integer coordinates and
`p_{-n}` is built by convolving the prompts' laws one at a time (prefix and suffix products,
`2 N` convolutions). Real-valued statistics (a reward with the KL folded in) have no such grid:
their sums almost never coincide, `p_{-n}` would have `prod_{n' != n} M_n'` entries, and
(exact_batch_conv) would cost N times the walk. The walk is then the cheaper road: an odometer
over the joint outcome of the prompts' distinct values (`minirl_lm/kernels/batch.py`), which
adds every term once to each prompt's entry. `batch_moments` takes whichever costs fewer
evaluations of the scalars: `sum_n u_n |p_{-n}|` against `prod_n u_n` (`u_n` distinct values).
The two agree with the joint walk to rounding: the same terms, added in another order (tested
to 1e-12 relative in tests/exact/test_batch.py).

    $ python examples/atlas.py --K 8     # the batch-std and whitening rows at TRL's group size
"""

import numpy as np

from minirl_lm.boundary import POSITIVE, array, boundary, flag, one_of, simplex
from minirl_lm.kernels.batch import KINDS, _batch_marginals, _grid_marginals

__all__ = ["FIELDS", "batch_moments"]

FIELDS = ("a", "b", "e", "aa", "bb", "ee", "ab", "ae", "be")
COLUMNS = {"none": (), "batch_std": (0, 1, 2), "whiten": (0, 1, 2)}  # the statistics a kind reads
MAX_STEP = 40  # a grid is at most 2^-40 fine
MAX_CONV = 10**7  # entries of one convolution before the sum over them is formed
MAX_JOINT = 1e9  # points of the joint outcome, prod_n M_n
DENSE = 4  # a convolution counts its keys in an array of up to DENSE x its terms (else sorts them)


def _per_prompt(kind, what):
    """A non-empty list with one entry per prompt, each read by `kind` (its own outcome count
    `M`, the width `D` shared by every prompt); `what` says what an entry is."""

    def read(x, name, dims):
        got = type(x).__name__
        if not isinstance(x, (list, tuple)) or not x:
            raise TypeError(f"{name}: expected a non-empty list with one {what} per prompt, got {got}")
        out = []
        for entry in x:
            own = {k: v for k, v in dims.items() if k == "D"}  # M is the prompt's own
            out.append(kind(entry, name, own))
            dims.update((k, v) for k, v in own.items() if k == "D")
        return out

    return read


def _triple(x, name, dims):
    """A prompt's update parts `(P_n, Q_n, Rg_n)`, each `(M, D)`."""
    if not isinstance(x, (list, tuple)) or len(x) != 3:
        got = f"{type(x).__name__} {x!r}"[:120]  # only when raising: a repr of big arrays is slow
        raise TypeError(f"{name}: expected a (P_n, Q_n, Rg_n) triple per prompt, got {got}")
    part = array("M D")
    return tuple(part(a, name, dims) for a in x)


def _one_per_prompt(P, stats, parts):
    """As many statistics and parts as laws, each of its law's outcomes; counts `cnt > 0`; a
    joint outcome of at most `MAX_JOINT` points (what the walk would visit)."""
    if not len(P) == len(stats) == len(parts):
        return f"stats: expected one entry per prompt ({len(P)}), got {len(stats)} and {len(parts)} parts"
    for n, (p, s, t) in enumerate(zip(P, stats, parts)):
        if s.shape[1] != p.size:
            return f"stats: expected shape (4, {p.size}) for prompt {n}, got {s.shape}"
        if t[0].shape[0] != p.size:
            return f"parts: expected {p.size} rows for prompt {n}, got {t[0].shape[0]}"
    if any((s[0] <= 0).any() for s in stats):
        return "stats: expected a count cnt > 0 in row 0 of every prompt's statistics"
    total = float(np.prod([float(p.size) for p in P]))
    if total > MAX_JOINT:
        return f"P: expected a joint outcome of at most {MAX_JOINT:.0e} points, got {total:.3g}"


PROMPTS = dict(
    P=_per_prompt(simplex("M"), "law"),
    stats=_per_prompt(array("4 M"), "(4, M) statistics array"),
    parts=_per_prompt(_triple, "triple"),
)
OPTIONS = dict(kind=one_of(KINDS), token_mean=flag, eps=POSITIVE, second=flag, kernel=flag)


@boundary(**PROMPTS, **OPTIONS, where=[_one_per_prompt], returns="mean second")
def batch_moments(P, stats, parts, *, kind="none", token_mean=False, eps=1e-8, second=True, kernel=True):
    """`E[g]` and `E|g|^2` of a batch update coupled by batch statistics, eq. (exact_batch).

    Args:
        P: a list of N `(M_n,)` probabilities of prompt n's group outcomes.
        stats: a list of N `(4, M_n)` finite per-outcome statistics `(cnt, S1, S2, ntok)`.
        parts: a list of N triples `(P_n, Q_n, Rg_n)` of `(M_n, D)` finite update parts.
        kind: `"none"`, `"batch_std"` or `"whiten"`, eq. (exact_batch_scalars).
        token_mean: divide by the batch's token count `ntok`.
        eps: the standard deviation's offset, > 0.
        second: also compute `E|g|^2` (else 0.0).
        kernel: sum with the Numba kernels (else their NumPy twins, which store the grid or the
            joint outcome they sum over).

    Returns:
        `(mean, second)`: `(D,)` float64 and a float.

    Raises:
        ValueError: a bad argument (named), a joint outcome beyond `MAX_JOINT` points, or a
            moment beyond float64 (named after the function, with the range of its inputs).
    """
    return _moments_from(_marginals(P, stats, kind, token_mean, eps, 9 if second else 3, kernel), parts)


def _moments_from(W, parts):
    """`(E[g], E|g|^2)` from the marginals `W_n (nf, M_n)`, eq. (exact_batch); `E|g|^2` 0.0 if nf = 3."""
    second = len(W[0]) == 9
    mean, sq = 0.0, 0.0
    for n, (Pn, Qn, Rn) in enumerate(parts):
        w = dict(zip(FIELDS, W[n]))
        mean = mean + w["a"] @ Pn - w["b"] @ Qn + w["e"] @ Rn  # eq. (exact_batch)
        if second:
            sq += (
                w["aa"] @ (Pn * Pn).sum(1)
                + w["bb"] @ (Qn * Qn).sum(1)
                + w["ee"] @ (Rn * Rn).sum(1)
                - 2 * w["ab"] @ (Pn * Qn).sum(1)
                + 2 * w["ae"] @ (Pn * Rn).sum(1)
                - 2 * w["be"] @ (Qn * Rn).sum(1)
            )
    return mean, float(sq)


def _marginals(P, stats, kind, token_mean, eps, nf, kernel=True):
    """[W_n (nf, M_n)], eq. (exact_batch_conv) or the walk, whichever evaluates fewer scalars."""
    cols = COLUMNS[kind] + ((3,) if token_mean else ())
    laws = [_distinct(p, s, cols) for p, s in zip(P, stats)]  # (q_n, V_n, inv_n)
    walk = float(np.prod([len(q) for q, _, _ in laws]))
    others = _others(laws, cols, min(walk, MAX_CONV))
    if others is not None and sum(len(q) * len(pz) for (q, _, _), (_, pz) in zip(laws, others)) <= walk:
        grid = _grid_marginals if kernel else _grid_numpy
        out = []
        for p, (_, V, inv), (Z, pz) in zip(P, laws, others):
            h = grid(V, Z, pz, KINDS.index(kind), token_mean, eps, nf)  # (nf, u_n)
            out.append(h[:, inv] * p)  # eq. (exact_batch_conv)
        return out
    marg = _marginals_kernel if kernel else _marginals_numpy
    if all(len(q) == len(p) for p, (q, _, _) in zip(P, laws)):  # nothing merges: the walk as is
        return marg(P, stats, kind, token_mean, eps, nf)
    W = marg([q for q, _, _ in laws], [V for _, V, _ in laws], kind, token_mean, eps, nf)
    out = []
    for w, p, (q, _, inv) in zip(W, P, laws):  # a merged value's share is its outcome's P
        share = np.divide(p, q[inv], out=np.zeros_like(p), where=q[inv] > 0)
        out.append(w[:, inv] * share)
    return out


def _distinct(p, s, cols):
    """A prompt's law on the statistics in `cols`: `(q (u,), V (4, u), inv (M,))`, V[:, inv] = s
    on those rows (one outcome's full column stands for its value), q[j] = P of value j."""
    if not cols:
        inv = np.zeros(len(p), np.int64)
        return np.array([p.sum()]), s[:, :1].copy(), inv
    _, first, inv = np.unique(s[list(cols)].T, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    return np.bincount(inv, p, minlength=len(first)), np.ascontiguousarray(s[:, first]), inv


def _others(laws, cols, cap):
    """For each prompt n the law of `Z_{-n}`, `(Z (4, nz), pz (nz,))`, by convolution on the
    statistics' grid; None when they have no common grid or a convolution would exceed `cap`."""
    N = len(laws)
    if not cols:  # the scalars read no statistic: Z_{-n} is one point
        mass = [q.sum() for q, _, _ in laws]
        return [(np.zeros((4, 1)), np.array([np.prod(mass[:n] + mass[n + 1 :])])) for n in range(N)]
    grid = _grid(laws, cols)
    if grid is None:
        return None
    step, radix, keys = grid
    one = (np.zeros(1, np.int64), np.ones(1), np.zeros(len(cols), np.int64))  # the empty sum
    laws_k = [(k, q, off) for (q, _, _), (k, off) in zip(laws, keys)]

    def conv(A, B):
        if A is one or B is one:
            return B if A is one else A
        if len(A[0]) * len(B[0]) > cap:
            return None
        k = (A[0][:, None] + B[0][None, :]).ravel()
        w = np.outer(A[1], B[1]).ravel()
        if k.max() < DENSE * len(k) + 2**16:  # keys few enough to count in place: no sort
            u = np.flatnonzero(np.bincount(k))  # the keys that occur, in order (np.unique's)
            return u, np.bincount(k, w)[u], A[2] + B[2]  # each sum in the order of k, as below
        u, inv = np.unique(k, return_inverse=True)
        return u, np.bincount(inv.reshape(-1), w, minlength=len(u)), A[2] + B[2]

    pre, suf = [one], [one]
    for n in range(N - 1):  # pre[n]: prompts < n; suf[N - 1 - n]: prompts > n
        pre.append(conv(pre[-1], laws_k[n]))
        suf.append(conv(laws_k[N - 1 - n], suf[-1]))
        if pre[-1] is None or suf[-1] is None:
            return None
    out = []
    for n in range(N):
        d = conv(pre[n], suf[N - 1 - n])
        if d is None:
            return None
        k, pz, off = d
        Z = np.zeros((4, len(k)))
        for t, c in enumerate(cols):  # the key's digits back to values, exactly
            Z[c] = ((k // radix[t]) % (radix[t + 1] // radix[t]) + off[t]) * step[t]
        out.append((Z, pz))
    return out


def _grid(laws, cols):
    """The statistics as integers on a common grid: `(step, radix, [(keys, offset)])`, each value
    `(offset + digit) * step` with `key = digit @ radix` (mixed radix, so keys add as sums do);
    None unless every value is an integer times 2^-k, k <= MAX_STEP, and every sum is exact."""
    vals = [V[list(cols)] for _, V, _ in laws]  # (c, u_n)
    step, coord = [], [np.empty((len(cols), v.shape[1]), np.int64) for v in vals]
    for t in range(len(cols)):
        x = np.concatenate([v[t] for v in vals])
        for k in range(MAX_STEP + 1):
            y = np.ldexp(x, k)
            if np.all(np.floor(y) == y):
                break
        else:
            return None
        if sum(np.abs(np.ldexp(v[t], k)).max() for v in vals) >= 2.0**52:  # partial sums exact
            return None
        step.append(2.0**-k)
        for c, v in zip(coord, vals):
            c[t] = np.ldexp(v[t], k).astype(np.int64)
    span = [sum(int(c[t].max() - c[t].min()) for c in coord) + 1 for t in range(len(cols))]
    radix = [1]
    for s in span:
        radix.append(radix[-1] * s)
    if radix[-1] >= 2**62:
        return None
    off = [c.min(1) for c in coord]
    keys = [((c - o[:, None]) * np.array(radix[:-1], np.int64)[:, None]).sum(0) for c, o in zip(coord, off)]
    return step, radix, list(zip(keys, off))


def _grid_numpy(V, Z, pz, kind, token_mean, eps, nf):
    """`_grid_marginals`' NumPy twin: the (u, nz) grid of sums stored."""
    a, b, e = _scalars_numpy(*(V[k][:, None] + Z[k][None, :] for k in range(4)), KINDS[kind], token_mean, eps)
    f = dict(a=a, b=b, e=e, aa=a * a, bb=b * b, ee=e * e, ab=a * b, ae=a * e, be=b * e)
    return np.stack([f[k] @ pz for k in FIELDS[:nf]])


def _scalars_numpy(cnt, S1, S2, ntok, kind, token_mean, eps):
    """(a, b, e) broadcast, eq. (exact_batch_scalars)."""
    z = 1.0 / np.maximum(ntok, 1.0) if token_mean else np.ones_like(cnt)
    s, mu = np.ones_like(cnt), 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "batch_std":
            var = np.maximum(S2 - S1 * S1 / cnt, 0.0) / cnt
            s = 1.0 / (np.sqrt(var) + eps)
        elif kind == "whiten":
            mu = S1 / np.maximum(cnt, 1.0)
            var = np.maximum(S2 - S1 * mu, 0.0) / np.maximum(cnt - 1.0, 1.0)
            s = np.where(var > 0, 1.0 / np.sqrt(np.where(var > 0, var, 1.0) + eps), 0.0)
    shape = np.broadcast_shapes(np.shape(cnt), np.shape(z))
    return [np.broadcast_to(x, shape) for x in (z * s, z * s * mu, z)]


def _marginals_kernel(P, stats, kind, token_mean, eps, nf):
    """[W_n (nf, M_n)] by the walk kernel: one pass over the joint, nothing of its size stored."""
    sizes = np.array([len(p) for p in P], np.int64)
    Pp = np.zeros((len(P), sizes.max()))  # (N, M_max) padded
    Sp = np.zeros((len(P), 4, sizes.max()))  # (N, 4, M_max)
    for n, (p, s) in enumerate(zip(P, stats)):
        Pp[n, : len(p)], Sp[n, :, : len(p)] = p, s
    W = _batch_marginals(Pp, Sp, sizes, KINDS.index(kind), token_mean, eps, nf)
    return [W[n, :, : sizes[n]] for n in range(len(P))]


def _marginals_numpy(P, stats, kind, token_mean, eps, nf):
    """The walk kernel's NumPy twin: the joint outcome broadcast as an N-dimensional array."""
    N = len(P)
    shape = lambda n: tuple(-1 if i == n else 1 for i in range(N))  # noqa: E731
    joint, tot = 1.0, [0.0] * 4
    for n in range(N):
        joint = joint * P[n].reshape(shape(n))
        tot = [t + s.reshape(shape(n)) for t, s in zip(tot, stats[n])]
    a, b, e = [np.broadcast_to(x, joint.shape) for x in _scalars_numpy(*tot, kind, token_mean, eps)]
    f = dict(a=a, b=b, e=e, aa=a * a, bb=b * b, ee=e * e, ab=a * b, ae=a * e, be=b * e)
    out = []
    for n in range(N):
        axes = tuple(i for i in range(N) if i != n)
        out.append(np.stack([(joint * f[k]).sum(axis=axes) for k in FIELDS[:nf]]))
    return out
