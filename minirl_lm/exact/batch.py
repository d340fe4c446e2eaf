"""Batch statistics couple the prompts: exact moments through per-prompt marginals.

A batch holds one group per prompt. When the advantage or the normalizer uses a statistic of
the whole batch (TRL's `scale_rewards="batch"`, REINFORCE++'s whitening over every token, the
token count of `token_mean`), prompt n's update is no longer a function of its own group:

    g = sum_n ( a(z) P_n[i_n] - b(z) Q_n[i_n] + e(z) Rg_n[i_n] ),   z = sum_n stats_n[i_n]

with `i_n` the outcome (multiset) of prompt n's group, `P_n`, `Q_n`, `Rg_n` its update's three
parts (advantage-weighted scores, plain scores, penalty terms) and a, b, e scalars of the summed
statistics `z = (cnt, S1, S2, ntok)`:

    zeta = 1 / max(ntok, 1) under token_mean, else 1
    batch_std:  s = 1 / (sqrt(max(S2 - S1^2 / cnt, 0) / cnt) + eps),  mu = 0
    whiten:     mu = S1 / max(cnt, 1),  var = max(S2 - S1 mu, 0) / max(cnt - 1, 1),
                s = 1 / sqrt(var + eps) if var > 0 else 0
    none:       s = 1, mu = 0
    a = zeta s,  b = zeta s mu,  e = zeta                                         (exact_batch_scalars)

Different prompts never share a state, so `g_n . g_n' = 0` and

    E[g]   = sum_n ( W_n^a P_n - W_n^b Q_n + W_n^e Rg_n )
    E|g|^2 = sum_n ( W_n^aa |P_n|^2 + W_n^bb |Q_n|^2 + W_n^ee |Rg_n|^2
                     - 2 W_n^ab P_n.Q_n + 2 W_n^ae P_n.Rg_n - 2 W_n^be Q_n.Rg_n )  (exact_batch)

where `W_n^f[i] = E[f(z) 1[i_n = i]]` is a marginal over the other prompts. The joint outcome
has `prod_n M_n` points (70^3 = 343,000 at K = 4 in the atlas); the Numba kernel
(`minirl_lm/kernels/batch.py`) walks it once without storing it, its NumPy twin here broadcasts
it.

    $ python examples/atlas.py --K 4     # the batch-std and whitening rows
"""

import numpy as np

from minirl_lm.exact.checks import batch_args
from minirl_lm.kernels.batch import KINDS, _batch_marginals

FIELDS = ("a", "b", "e", "aa", "bb", "ee", "ab", "ae", "be")


def batch_moments(P, stats, parts, kind="none", token_mean=False, eps=1e-8, second=True, kernel=True):
    """`E[g]` and `E|g|^2` of a batch update coupled by batch statistics, eq. (exact_batch).

    Args:
        P: a list of N `(M_n,)` probabilities of prompt n's group outcomes.
        stats: a list of N `(4, M_n)` finite per-outcome statistics `(cnt, S1, S2, ntok)`.
        parts: a list of N triples `(P_n, Q_n, Rg_n)` of `(M_n, D)` finite update parts.
        kind: `"none"`, `"batch_std"` or `"whiten"`, eq. (exact_batch_scalars).
        token_mean: divide by the batch's token count `ntok`.
        eps: the standard deviation's offset, > 0.
        second: also compute `E|g|^2` (else 0.0).
        kernel: walk the joint with the Numba kernel (else the NumPy twin, which stores it).

    Returns:
        `(mean, second)`: `(D,)` float64 and a float.
    """
    P, stats, parts, kind, eps = batch_args(P, stats, parts, kind, token_mean, eps, second, kernel)
    return _batch_moments(P, stats, parts, kind, token_mean, eps, second, kernel)


def _batch_moments(P, stats, parts, kind, token_mean, eps, second=True, kernel=True):
    nf = 9 if second else 3
    W = (_marginals_kernel if kernel else _marginals_numpy)(P, stats, kind, token_mean, eps, nf)
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


def _marginals_kernel(P, stats, kind, token_mean, eps, nf):
    """[W_n (nf, M_n)] by the kernel: one pass over the joint, nothing of its size stored."""
    sizes = np.array([len(p) for p in P], np.int64)
    Pp = np.zeros((len(P), sizes.max()))  # (N, M_max) padded
    Sp = np.zeros((len(P), 4, sizes.max()))  # (N, 4, M_max)
    for n, (p, s) in enumerate(zip(P, stats)):
        Pp[n, : len(p)], Sp[n, :, : len(p)] = p, s
    W = _batch_marginals(Pp, Sp, sizes, KINDS.index(kind), token_mean, eps, nf)
    return [W[n, :, : sizes[n]] for n in range(len(P))]


def _marginals_numpy(P, stats, kind, token_mean, eps, nf):
    """The kernel's NumPy twin: the joint outcome broadcast as an N-dimensional array."""
    N = len(P)
    shape = lambda n: tuple(-1 if i == n else 1 for i in range(N))  # noqa: E731
    joint, tot = 1.0, [0.0] * 4
    for n in range(N):
        joint = joint * P[n].reshape(shape(n))
        tot = [t + s.reshape(shape(n)) for t, s in zip(tot, stats[n])]
    cnt, S1, S2, ntok = tot
    z = 1.0 / np.maximum(ntok, 1.0) if token_mean else np.ones_like(joint)
    s, mu = 1.0, 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "batch_std":
            var = np.maximum(S2 - S1 * S1 / cnt, 0.0) / cnt
            s = 1.0 / (np.sqrt(var) + eps)
        elif kind == "whiten":
            mu = S1 / np.maximum(cnt, 1.0)
            var = np.maximum(S2 - S1 * mu, 0.0) / np.maximum(cnt - 1.0, 1.0)
            s = np.where(var > 0, 1.0 / np.sqrt(np.where(var > 0, var, 1.0) + eps), 0.0)
    a, b, e = [np.broadcast_to(x, joint.shape) for x in (z * s, z * s * mu, z)]
    f = dict(a=a, b=b, e=e, aa=a * a, bb=b * b, ee=e * e, ab=a * b, ae=a * e, be=b * e)
    out = []
    for n in range(N):
        axes = tuple(i for i in range(N) if i != n)
        out.append(np.stack([(joint * f[k]).sum(axis=axes) for k in FIELDS[:nf]]))
    return out
