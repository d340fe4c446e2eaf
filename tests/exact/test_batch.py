"""minirl_lm.exact.batch: the coupled moments against the joint outcome listed point by point, and the
law of the summed statistics (eq. exact_batch_conv) against the walk and brute force."""

import itertools

import numpy as np
import pytest

from minirl_lm.exact import batch
from minirl_lm.exact.batch import batch_moments
from minirl_lm.exact.groups import multisets


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


# ---- the law of the summed statistics, eq. (exact_batch_conv), against the joint ---------------


def _groups(seed, N=3, R=4, K=3, D=5, rewards=(0.0, 0.5, 1.0)):
    """N prompts whose groups are K i.i.d. draws from R responses, as the atlas builds them: each
    response a reward on a dyadic grid and a length 1..3; per group (cnt, S1, S2, ntok) and the
    parts summed over its draws. Also the ordered draws, for the brute-force enumeration."""
    rng = np.random.default_rng(seed)
    Y, _, coef = multisets(R, K)
    P, stats, parts, ordered = [], [], [], []
    for _ in range(N):
        p = rng.dirichlet(np.ones(R))
        r = rng.choice(rewards, R)
        L = rng.integers(1, 4, R).astype(float)
        u = [rng.normal(size=(R, D)) for _ in range(3)]  # per response: P_n, Q_n, Rg_n terms
        P.append(coef * np.prod(p[Y], 1))  # eq. (exact_multinomial)
        stats.append(np.stack([np.full(len(Y), float(K)), r[Y].sum(1), (r[Y] ** 2).sum(1), L[Y].sum(1)]))
        parts.append(tuple(x[Y].sum(1) for x in u))
        ordered.append((p, r, L, u))
    return P, stats, parts, ordered


def _brute_force(ordered, K, kind, token_mean):
    """E[g] and E|g|^2 over every ordered draw of every prompt (R^(N K) points)."""
    N, D = len(ordered), ordered[0][3][0].shape[1]
    R = len(ordered[0][0])
    E, E2 = 0.0, 0.0
    for draws in itertools.product(range(R), repeat=N * K):
        y = np.array(draws).reshape(N, K)
        pr = np.prod([ordered[n][0][y[n]].prod() for n in range(N)])
        z = sum(
            np.array([K, o[1][y[n]].sum(), (o[1][y[n]] ** 2).sum(), o[2][y[n]].sum()])
            for n, o in enumerate(ordered)
        )
        a, b, e = _scalars(kind, token_mean, z)
        g = np.concatenate(
            [
                a * o[3][0][y[n]].sum(0) - b * o[3][1][y[n]].sum(0) + e * o[3][2][y[n]].sum(0)
                for n, o in enumerate(ordered)
            ]
        )
        E, E2 = E + pr * g, E2 + pr * g @ g
    return E.reshape(N, D).sum(0), E2


@pytest.mark.parametrize("kind", ["none", "batch_std", "whiten"])
@pytest.mark.parametrize("token_mean", [False, True])
def test_the_statistics_law_equals_brute_force_over_ordered_draws(kind, token_mean):
    # 3 prompts, K = 2 draws of 4 responses: 4^6 = 4096 ordered batches, every one listed
    P, stats, parts, ordered = _groups(3, K=2)
    assert (
        batch._others(
            [batch._distinct(p, s, batch.COLUMNS[kind] + ((3,) if token_mean else ())) for p, s in zip(P, stats)],
            batch.COLUMNS[kind] + ((3,) if token_mean else ()),
            1e9,
        )
        is not None
    )  # the grid road, not the walk
    E, E2 = _brute_force(ordered, 2, kind, token_mean)
    mean, second = batch_moments(P, stats, parts, kind=kind, token_mean=token_mean)
    # tolerance 1e-12: the same finite sum of float64 terms, regrouped (one rounding per addition)
    np.testing.assert_allclose(mean, E, rtol=1e-12, atol=1e-14)
    assert second == pytest.approx(E2, rel=1e-12)


@pytest.mark.parametrize("N, K", [(3, 3), (3, 4), (4, 3)])
@pytest.mark.parametrize("kind", ["none", "batch_std", "whiten"])
@pytest.mark.parametrize("kernel", [True, False])
def test_the_statistics_law_equals_the_joint_walk(N, K, kind, kernel):
    P, stats, parts, _ = _groups(N + K, N=N, K=K)
    for token_mean in (False, True):
        cols = batch.COLUMNS[kind] + ((3,) if token_mean else ())
        laws = [batch._distinct(p, s, cols) for p, s in zip(P, stats)]
        assert sum(len(q) for q, _, _ in laws) < sum(len(p) for p in P)  # outcomes merge
        for nf in (3, 9):
            got = batch._marginals(P, stats, kind, token_mean, 1e-8, nf, kernel=kernel)
            walk = batch._marginals_kernel(P, stats, kind, token_mean, 1e-8, nf)  # every joint point
            for x, y in zip(got, walk):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-300)
        # and the moments, through the road batch_moments picks
        a = batch_moments(P, stats, parts, kind=kind, token_mean=token_mean, kernel=kernel)
        b = batch._moments_from(batch._marginals_kernel(P, stats, kind, token_mean, 1e-8, 9), parts)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-14)
        assert a[1] == pytest.approx(b[1], rel=1e-12)


@pytest.mark.parametrize("kind", ["batch_std", "whiten"])
def test_keys_counted_in_place_equal_keys_sorted_bit_for_bit(kind, monkeypatch):
    P, stats, _, _ = _groups(7, N=3, K=4)
    cols = batch.COLUMNS[kind] + (3,)
    laws = [batch._distinct(p, s, cols) for p, s in zip(P, stats)]
    dense = batch._others(laws, cols, 1e9)
    monkeypatch.setattr(batch, "DENSE", -(2**40))  # every convolution sorts its keys
    sorted_ = batch._others(laws, cols, 1e9)
    for (Z0, p0), (Z1, p1) in zip(dense, sorted_):
        np.testing.assert_array_equal(Z0, Z1)
        np.testing.assert_array_equal(p0, p1)


def test_the_grid_is_exact_or_absent():
    law = lambda *cols: [(np.ones(len(c[0])), np.array(c, float), None) for c in cols]  # noqa: E731
    halves = law([[2, 2], [0.5, 1.5], [0.25, 2.25], [3, 5]], [[2, 2], [1.0, 0.0], [1.0, 0.0], [1, 2]])
    step, radix, keys = batch._grid(halves, (0, 1, 2, 3))
    assert step == [1.0, 0.5, 0.25, 1.0]
    # each digit spans the range of the sum over the prompts: cnt 1, S1 2 + 2 halves, S2 8 + 4
    # quarters, ntok 2 + 1: keys of a sum are sums of keys (mixed radix, no carry)
    assert radix == [1, 1, 5, 5 * 13, 5 * 13 * 4]
    (k0, o0), (k1, o1) = keys
    assert o0.tolist() == [2, 1, 1, 3] and o1.tolist() == [2, 0, 0, 1]
    assert k0.tolist() == [0, 2 * 1 + 8 * 5 + 2 * 65] and k1.tolist() == [2 + 4 * 5, 1 * 65]
    assert batch._grid(law([[1.0, 1.0], [1 / 3, 0.0], [0.0, 0.0], [1, 1]]), (0, 1, 2, 3)) is None  # 1/3
    assert batch._grid(law([[1.0, 1.0], [0.1, 0.7], [0.0, 0.0], [1, 1]]), (0, 1)) is None  # real-valued
    assert batch._grid(law([[1.0, 1.0], [2.0**60, 0.0], [0.0, 0.0], [1, 1]]), (0, 1)) is None  # sums inexact


def test_real_valued_statistics_take_the_walk_and_equal_it():
    P, stats, parts = _case(3)  # S1 normal: no grid
    laws = [batch._distinct(p, s, (0, 1, 2)) for p, s in zip(P, stats)]
    assert batch._others(laws, (0, 1, 2), 1e9) is None
    for kind in ("batch_std", "whiten"):
        got = batch._marginals(P, stats, kind, True, 1e-8, 9)
        walk = batch._marginals_kernel(P, stats, kind, True, 1e-8, 9)
        for x, y in zip(got, walk):
            np.testing.assert_array_equal(x, y)  # nothing merges: the walk itself


def test_batch_moments_refuses_a_joint_too_large_and_a_bad_triple():
    p = np.full(1001, 1 / 1001)
    s = np.ones((4, 1001))
    parts = (np.zeros((1001, 1)),) * 3
    with pytest.raises(ValueError, match=r"^P: expected a joint outcome of at most 1e\+09 points"):
        batch_moments([p] * 4, [s] * 4, [parts] * 4)
    with pytest.raises(TypeError, match="^parts: expected a .* triple"):
        batch_moments([p], [s], [parts[:2]])
    with pytest.raises(TypeError, match="^token_mean: expected True or False"):
        batch_moments([p], [s], [parts], token_mean=1)
    with pytest.raises(ValueError, match=r"^stats: expected shape \(4, 1001\) for prompt 0"):
        batch_moments([p], [s[:, :3]], [parts])


def test_batch_moments_argument_messages_are_exact():
    P, stats, parts = _case(0)  # M = 3, 4, 2; D = 4

    def message(*args):
        with pytest.raises((TypeError, ValueError)) as e:
            batch_moments(*args)
        return str(e.value)

    assert message("ab", stats, parts) == "P: expected a non-empty list with one law per prompt, got str"
    wide = tuple(np.zeros((4, 5)) for _ in range(3))  # prompt 1 with D = 5: D is shared by the prompts
    assert message(P, stats, [parts[0], wide, parts[2]]) == "parts: expected shape (M, 4), got (4, 5)"
    nan = (parts[0][0], np.full((3, 4), np.nan), parts[0][2])
    assert message(P, stats, [nan, *parts[1:]]) == "parts: expected no NaN, got 12 NaN entries"
    short = tuple(np.zeros((2, 4)) for _ in range(3))  # 2 rows for prompt 0's 3 outcomes
    assert message(P, stats, [short, *parts[1:]]) == "parts: expected 3 rows for prompt 0, got 2"
    pair = [np.zeros((3, 4)), np.zeros((3, 4))]  # its repr is cut at 120 characters
    got = f"list {pair!r}"
    assert len(got) > 121
    assert (
        message(P, stats, [pair, *parts[1:]])
        == f"parts: expected a (P_n, Q_n, Rg_n) triple per prompt, got {got[:120]}"
    )


def test_batch_moments_takes_a_joint_of_exactly_max_joint_points():
    p = np.full(1000, 1e-3)  # 1000^3 = MAX_JOINT points: allowed
    ones = np.ones((1000, 1))
    mean, _ = batch_moments([p] * 3, [np.ones((4, 1000))] * 3, [(ones, 0 * ones, 0 * ones)] * 3, second=False)
    assert mean == pytest.approx([3.0], rel=1e-13)  # kind "none": g = sum_n P_n = 3 on every outcome


def test_the_kernel_flag_chooses_the_kernels_or_their_twins():
    # the two round differently on this batch: each result is its own path's, bit for bit
    P, stats, parts = _case(0)
    for kernel in (True, False):
        got = batch_moments(P, stats, parts, kind="batch_std", token_mean=True, kernel=kernel)
        want = batch._moments_from(batch._marginals(P, stats, "batch_std", True, 1e-8, 9, kernel), parts)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    assert not np.array_equal(batch_moments(P, stats, parts, kind="batch_std", token_mean=True)[0], want[0])


def _no(*names):
    """Replacements of batch's evaluators `names` that fail if called."""

    def fail(*args, **kwargs):
        raise AssertionError("this evaluation was not the cheaper one")

    return {name: fail for name in names}


WALKS = ("_marginals_kernel", "_marginals_numpy")
GRIDS = ("_grid_marginals", "_grid_numpy")


def test_each_batch_takes_the_evaluation_with_fewer_scalars(monkeypatch):
    # N = 4 groups of K = 2 on a dyadic grid, kind "none" with token_mean: the convolution
    # evaluates 208 scalars, the merged walk 225; whiten on 3 groups of 3: 552 against 400
    grid_batch, walk_batch = _groups(2, N=4, K=2)[:3], _groups(0)[:3]
    for kernel in (True, False):
        with monkeypatch.context() as m:
            for name, fail in _no(*WALKS).items():
                m.setattr(batch, name, fail)
            batch_moments(*grid_batch, kind="none", token_mean=True, kernel=kernel)
        with monkeypatch.context() as m:
            for name, fail in _no(*GRIDS).items():
                m.setattr(batch, name, fail)
            batch_moments(*walk_batch, kind="whiten", kernel=kernel)


def test_the_kernel_flag_also_chooses_on_the_grid():
    P, stats, parts = _groups(2, N=4, K=2)[:3]  # the convolution, as above
    for kernel in (True, False):
        got = batch_moments(P, stats, parts, kind="none", token_mean=True, kernel=kernel)
        want = batch._moments_from(batch._marginals(P, stats, "none", True, 1e-8, 9, kernel), parts)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    assert not np.array_equal(batch_moments(P, stats, parts, kind="none", token_mean=True)[0], want[0])


def test_one_prompt_of_kind_none_is_its_own_expectation():
    p = np.full(10, 0.1)
    p[0] += 5e-10  # a law summing to 1 + 5e-10 (within the 1e-9 accepted): no factor of its mass enters
    rng = np.random.default_rng(0)
    P0, Q0, R0 = (rng.normal(size=(10, 2)) for _ in range(3))
    s = np.stack([np.full(10, 2.0), np.arange(10.0), np.arange(10.0) ** 2, np.ones(10)])
    for kernel in (True, False):
        mean, _ = batch_moments([p], [s], [(P0, Q0, R0)], kernel=kernel)
        np.testing.assert_allclose(mean, p @ P0 + p @ R0, rtol=1e-14)  # a = e = 1, b = 0 on every outcome


@pytest.mark.parametrize("kind", ["batch_std", "whiten"])
def test_one_prompt_with_statistics_equals_the_walk(kind):
    P, stats, parts = _case(4, N=1)
    for kernel in (True, False):
        got = batch_moments(P, stats, parts, kind=kind, token_mean=True, kernel=kernel)
        walk = batch._moments_from(batch._marginals_kernel(P, stats, kind, True, 1e-8, 9), parts)
        np.testing.assert_allclose(got[0], walk[0], rtol=1e-13)
        assert got[1] == pytest.approx(walk[1], rel=1e-13)


def test_outcomes_of_probability_zero_that_merge_add_nothing():
    # outcomes 1 and 2 of prompt 0 share their statistics and have P = 0: their merged value too
    P = [np.array([1.0, 0.0, 0.0]), np.array([0.5, 0.5])]
    stats = [
        np.array([[2.0, 2.0, 2.0], [0.3, 0.7, 0.7], [1.0, 0.5, 0.5], [2.0, 3.0, 3.0]]),
        np.array([[2.0, 2.0], [0.1, 1.1], [0.5, 1.5], [2.0, 4.0]]),
    ]
    rng = np.random.default_rng(1)
    parts = [tuple(rng.normal(size=(len(p), 3)) for _ in range(3)) for p in P]
    without = [P[0][:1], P[1]], [stats[0][:, :1], stats[1]], [tuple(x[:1] for x in parts[0]), parts[1]]
    for kernel in (True, False):
        got = batch_moments(P, stats, parts, kind="whiten", kernel=kernel)
        want = batch_moments(*without, kind="whiten", kernel=kernel)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
        assert got[1] == pytest.approx(want[1], rel=1e-14)


def test_twins_at_the_smallest_counts():
    # batch totals of one token, one response (cnt 1) and two (cnt 2): the floors max(ntok, 1),
    # max(cnt, 1) and max(cnt - 1, 1) of eq. (exact_batch_scalars), the kernels against their twins
    P = [np.array([0.5, 0.5]), np.array([0.25, 0.75])]
    stats = [
        np.array([[1.0, 1.0], [0.3, 0.9], [0.5, 1.3], [1.0, 0.0]]),  # S2 well above S1^2 / cnt
        np.array([[1.0, 1.0], [0.1, -0.7], [0.3, 0.9], [0.0, 2.0]]),
    ]
    rng = np.random.default_rng(2)
    parts = [tuple(rng.normal(size=(2, 3)) for _ in range(3)) for _ in P]
    for n in (1, 2):  # one prompt: cnt = 1; two: cnt = 2
        for kind in ("batch_std", "whiten"):
            a = batch_moments(P[:n], stats[:n], parts[:n], kind=kind, token_mean=True)
            b = batch_moments(P[:n], stats[:n], parts[:n], kind=kind, token_mean=True, kernel=False)
            assert np.abs(a[0]).max() > 0.1
            np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
            assert a[1] == pytest.approx(b[1], rel=1e-12)


def test_the_grid_limits_are_exact():
    law = lambda *cols: [(np.ones(len(c[0])), np.array(c, float), None) for c in cols]  # noqa: E731
    one = lambda x, y=0.0: [[1.0, 1.0], [x, 0.0], [y, 0.0], [1.0, 1.0]]  # noqa: E731
    # a step of 2^-MAX_STEP = 2^-40 at the finest
    assert batch._grid(law(one(2.0**-40)), (0, 1))[0] == [1.0, 2.0**-40]
    assert batch._grid(law(one(2.0**-41)), (0, 1)) is None
    # the largest sum on the grid stays below 2^52 (every partial sum exact)
    assert batch._grid(law(one(200.0)), (0, 1)) is not None
    assert batch._grid(law(one(2.0**51), one(2.0**51 - 1)), (0, 1)) is not None
    assert batch._grid(law(one(2.0**51), one(2.0**51)), (0, 1)) is None
    # the keys stay below 2^62: two digits of span 2^31 are one too many, 2^31 * (2^31 - 1) fits
    assert batch._grid(law(one(2.0**31 - 1, 2.0**31 - 1)), (1, 2)) is None
    assert batch._grid(law(one(2.0**31 - 1, 2.0**31 - 2)), (1, 2))[1] == [1, 2**31, 2**31 * (2**31 - 1)]


@pytest.mark.parametrize("kind", ["batch_std", "whiten"])
def test_one_prompt_on_the_grid_takes_the_convolution_and_equals_the_walk(kind, monkeypatch):
    # one prompt: the law of the others' sums is one point, so the convolution ties the walk
    P, stats, parts = _groups(5, N=1)[:3]
    walk = batch._moments_from(batch._marginals_kernel(P, stats, kind, True, 1e-8, 9), parts)
    for name, fail in _no(*WALKS).items():
        monkeypatch.setattr(batch, name, fail)
    for kernel in (True, False):
        got = batch_moments(P, stats, parts, kind=kind, token_mean=True, kernel=kernel)
        np.testing.assert_allclose(got[0], walk[0], rtol=1e-13)
        assert got[1] == pytest.approx(walk[1], rel=1e-13)


def test_a_convolution_beyond_the_cap_gives_up_at_once():
    # four groups: the products of support sizes the convolutions meet, in order, are 90 and 27
    # (prompts 0+1, 2+3), then 540 and 270, then 243 and 180; the cap bounds each of them
    P, stats, _, _ = _groups(2, N=4, K=2)
    cols = batch.COLUMNS["whiten"] + (3,)
    laws = [batch._distinct(p, s, cols) for p, s in zip(P, stats)]
    assert batch._others(laws, cols, 540) is not None
    assert batch._others(laws, cols, 539) is None
    for order in (laws, laws[::-1]):  # the prefix or the suffix over the cap first: no more work
        assert batch._others(order, cols, 89) is None


def test_keys_beyond_2_to_53_give_back_the_sums_exactly():
    # S1 and S2 near 2^29 on two prompts: the mixed-radix keys reach ~2^60, beyond float64's
    # integers; the digits are taken back in integer arithmetic, so Z_{-n} is the other prompt's law
    a = 2.0**29
    stats = [
        np.array([[1.0, 1.0], [0.0, a], [0.0, a], [1.0, 1.0]]),
        np.array([[1.0, 1.0], [3.0, a + 7], [5.0, a + 3], [1.0, 1.0]]),
    ]
    P, cols = [np.array([0.5, 0.5]), np.array([0.25, 0.75])], (0, 1, 2)
    laws = [batch._distinct(p, s, cols) for p, s in zip(P, stats)]
    assert batch._grid(laws, cols)[1][-1] > 2**53
    (Z0, p0), (Z1, p1) = batch._others(laws, cols, 1e9)
    assert np.array_equal(Z0[:3], stats[1][:3]) and p0.tolist() == [0.25, 0.75]
    assert np.array_equal(Z1[:3], stats[0][:3]) and p1.tolist() == [0.5, 0.5]


def test_outcomes_apart_only_in_a_statistic_not_read_are_walked_once(monkeypatch):
    # without token_mean the scalars never read ntok: three outcomes apart only in it are one value
    stats = [np.array([[2.0] * 3, [0.3] * 3, [0.5] * 3, [1.0, 2.0, 3.0]])] * 2
    P = [np.array([0.2, 0.3, 0.5])] * 2
    parts = [tuple(np.eye(3)[:, :2] for _ in range(3))] * 2
    walked, walk = [], batch._marginals_kernel
    monkeypatch.setattr(
        batch, "_marginals_kernel", lambda P, *a: walked.append([len(p) for p in P]) or walk(P, *a)
    )
    batch_moments(P, stats, parts, kind="whiten")
    assert walked == [[1, 1]]
