"""minirl_lm.exact.batch: the coupled moments against the joint outcome listed point by point."""

import itertools

import numpy as np
import pytest

from minirl_lm.exact.batch import batch_moments


def _case(seed, N=3, D=4):
    rng = np.random.default_rng(seed)
    M = [3, 4, 2][:N]
    P = [rng.dirichlet(np.ones(m)) for m in M]
    stats = [
        np.stack([np.full(m, 2.0), rng.normal(size=m), rng.random(m) * 3 + 1, rng.integers(1, 6, m).astype(float)])
        for m in M
    ]
    parts = [tuple(rng.normal(size=(m, D)) for _ in range(3)) for m in M]
    return P, stats, parts


def _scalars(kind, token_mean, z, eps=1e-8):
    cnt, S1, S2, ntok = z
    zeta = 1.0 / max(ntok, 1.0) if token_mean else 1.0
    s, mu = 1.0, 0.0
    if kind == "batch_std":
        s = 1.0 / (np.sqrt(max(S2 - S1 * S1 / cnt, 0.0) / cnt) + eps)
    elif kind == "whiten":
        mu = S1 / max(cnt, 1.0)
        var = max(S2 - S1 * mu, 0.0) / max(cnt - 1.0, 1.0)
        s = 1.0 / np.sqrt(var + eps) if var > 0 else 0.0
    return zeta * s, zeta * s * mu, zeta


@pytest.mark.parametrize("kind", ["none", "batch_std", "whiten"])
@pytest.mark.parametrize("token_mean", [False, True])
@pytest.mark.parametrize("kernel", [True, False])
def test_batch_moments_equal_the_listed_joint(kind, token_mean, kernel):
    P, stats, parts = _case(1)
    E, E2 = 0.0, 0.0
    for idx in itertools.product(*[range(len(p)) for p in P]):
        pr = np.prod([P[n][i] for n, i in enumerate(idx)])
        z = sum(stats[n][:, i] for n, i in enumerate(idx))
        a, b, e = _scalars(kind, token_mean, z)
        g = np.concatenate(
            [a * parts[n][0][i] - b * parts[n][1][i] + e * parts[n][2][i] for n, i in enumerate(idx)]
        )
        E, E2 = E + pr * g, E2 + pr * g @ g
    D = parts[0][0].shape[1]
    E = E.reshape(len(P), D).sum(0)  # the prompts' supports are disjoint: g's blocks, summed
    mean, second = batch_moments(P, stats, parts, kind=kind, token_mean=token_mean, kernel=kernel)
    np.testing.assert_allclose(mean, E, rtol=1e-12, atol=1e-14)
    assert second == pytest.approx(E2, rel=1e-12)


def test_kernel_and_twin_agree_and_first_moment_alone():
    P, stats, parts = _case(2)
    a = batch_moments(P, stats, parts, kind="batch_std", token_mean=True)
    b = batch_moments(P, stats, parts, kind="batch_std", token_mean=True, kernel=False)
    c = batch_moments(P, stats, parts, kind="batch_std", token_mean=True, second=False)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-13)
    assert a[1] == pytest.approx(b[1], rel=1e-13) and c[1] == 0.0
    np.testing.assert_array_equal(a[0], c[0])


def test_bad_batches_are_named():
    P, stats, parts = _case(0)
    with pytest.raises(ValueError, match="^kind: "):
        batch_moments(P, stats, parts, kind="std")
    with pytest.raises(ValueError, match="^stats: expected a count cnt > 0"):
        batch_moments(P, [s * 0 for s in stats], parts)
    with pytest.raises(ValueError, match="^stats: expected one entry per prompt"):
        batch_moments(P, stats[:2], parts)
