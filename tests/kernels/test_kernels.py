"""Every Numba kernel equal to its NumPy twin, the custom exp against np.exp, and the disk cache.

Equality is relative error <= 1e-12 measured norm-wise: max |kernel - twin| / max |twin| (1e-6
for float32 logits, against the twin run on the same numbers in float64). The opt-in threaded
variants must equal their serial kernels bit for bit.
Twins: logprob.token_logp on theta[states] (tabular forward), logprob.token_logp_backward scattered
into rows with np.add.at (tabular backward), logprob itself (dense), and the NumPy advantages below.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from minirl_lm import kernels as K
from minirl_lm.core.logprob import token_logp, token_logp_backward

RTOL = 1e-12


def rel_err(a, b):
    """max |a - b| / max |b| over the entries where b is finite (-inf must match exactly)."""
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isneginf(a), np.isneginf(b))
    fin = np.isfinite(b)
    scale = max(np.abs(b[fin]).max(initial=0.0), 1e-300)
    return np.abs(a[fin] - b[fin]).max(initial=0.0) / scale


def case(seed, B=5, T=7, V=33, S=6, shift=0.0, neginf=False):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((S, V)) * 3 + shift                         # (S, V)
    logits = rng.standard_normal((B, T, V)) * 3 + shift                     # (B, T, V)
    if neginf:                                   # some impossible tokens, never a whole row
        theta[rng.random((S, V)) < 0.3] = -np.inf
        theta[:, 0] = shift
        logits[rng.random((B, T, V)) < 0.3] = -np.inf
        logits[:, :, 0] = shift
    states = rng.integers(0, S, (B, T))                                     # (B, T)
    tokens = rng.integers(0, V, (B, T))                                     # (B, T)
    lengths = rng.integers(0, T + 1, B)
    lengths[0] = T
    mask = (np.arange(T) < lengths[:, None]).astype(float)                 # (B, T)
    w = rng.standard_normal((B, T))                                         # (B, T)
    return theta, logits, states, tokens, mask, w


CASES = [dict(seed=0), dict(seed=1, V=1), dict(seed=2, V=1024, S=3), dict(seed=3, shift=1e4),
         dict(seed=4, neginf=True), dict(seed=5, B=1, T=1, V=2, S=1), dict(seed=6, V=17, T=40)]


def scatter_twin(theta, states, tokens, mask, w):
    d = token_logp_backward(theta[states], tokens, mask, w)                 # (B, T, V)
    dtheta = np.zeros_like(theta)                                           # (S, V)
    np.add.at(dtheta, states, d)
    return dtheta


# ---------------------------------------------------------------- log-prob kernels vs NumPy

@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("kernel", [K.tabular_logp, K.tabular_logp_per_token])
def test_tabular_logp(kernel, kw):
    theta, _, states, tokens, mask, _ = case(**kw)
    logp, seq = kernel(theta, states, tokens, mask)
    ref_logp, ref_seq = token_logp(theta[states], tokens, mask)
    assert rel_err(logp, ref_logp) <= RTOL and rel_err(seq, ref_seq) <= RTOL
    assert np.all(logp[mask == 0] == 0.0)


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("kernel", [K.tabular_backward, K.tabular_backward_per_token])
def test_tabular_backward(kernel, kw):
    theta, _, states, tokens, mask, w = case(**kw)
    got = kernel(theta, states, tokens, mask, w)
    assert np.isfinite(got).all()
    assert rel_err(got, scatter_twin(theta, states, tokens, mask, w)) <= RTOL
    unvisited = np.setdiff1d(np.arange(theta.shape[0]), states[mask > 0])
    assert np.all(got[unvisited] == 0.0)


@pytest.mark.parametrize("kw", CASES)
def test_dense(kw):
    _, logits, _, tokens, mask, w = case(**kw)
    logp, seq = K.dense_logp(logits, tokens, mask)
    ref_logp, ref_seq = token_logp(logits, tokens, mask)
    assert rel_err(logp, ref_logp) <= RTOL and rel_err(seq, ref_seq) <= RTOL
    got = K.dense_backward(logits, tokens, mask, w)
    assert np.isfinite(got).all()
    assert rel_err(got, token_logp_backward(logits, tokens, mask, w)) <= RTOL


RTOL32 = 1e-6


@pytest.mark.parametrize("kw", CASES)
def test_dense_float32(kw):
    """float32 logits: float32 exponentials, float64 sums; logp float64, dlogits float32."""
    _, logits, _, tokens, mask, w = case(**kw)
    lg32 = logits.astype(np.float32)
    lg = lg32.astype(np.float64)                            # the same numbers, for the twin
    logp, seq = K.dense_logp(lg32, tokens, mask)
    ref_logp, ref_seq = token_logp(lg, tokens, mask)
    assert logp.dtype == np.float64
    assert rel_err(logp, ref_logp) <= RTOL32 and rel_err(seq, ref_seq) <= RTOL32
    got = K.dense_backward(lg32, tokens, mask, w)
    assert got.dtype == np.float32 and np.isfinite(got).all()
    assert rel_err(got, token_logp_backward(lg, tokens, mask, w)) <= RTOL32


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", CASES + [dict(seed=9, B=13, T=5, V=300)])
def test_parallel_equals_serial(kw, dtype):
    _, logits, _, tokens, mask, w = case(**kw)
    logits = logits.astype(dtype)
    serial = K.dense_logp(logits, tokens, mask)
    for a, b in zip(K.dense_logp(logits, tokens, mask, parallel=True), serial):
        assert np.array_equal(a, b)
    got = K.dense_backward(logits, tokens, mask, w, parallel=True)
    assert got.dtype == dtype
    assert np.array_equal(got, K.dense_backward(logits, tokens, mask, w))


def test_backward_out_is_reused():
    """out= is written in full (padding rows too) and returned: garbage in it never leaks."""
    _, logits, _, tokens, mask, w = case(10)
    want = K.dense_backward(logits, tokens, mask, w)
    for parallel in (False, True):
        out = np.full_like(logits, np.nan)
        assert K.dense_backward(logits, tokens, mask, w, out=out, parallel=parallel) is out
        assert np.array_equal(out, want)


def test_padding_never_read():
    _, logits, _, tokens, mask, w = case(7)
    bad = logits.copy()
    bad[mask == 0] = np.nan                                 # garbage where mask is 0
    for a, b in zip(K.dense_logp(bad, tokens, mask), K.dense_logp(logits, tokens, mask)):
        assert np.array_equal(a, b)
    for parallel in (False, True):
        assert np.array_equal(K.dense_backward(bad, tokens, mask, w * np.where(mask > 0, 1, np.nan),
                                               parallel=parallel),
                              K.dense_backward(logits, tokens, mask, w))
    for a, b in zip(K.dense_logp(bad, tokens, mask, parallel=True),
                    K.dense_logp(logits, tokens, mask)):
        assert np.array_equal(a, b)


def test_large_logits_keep_their_digits():
    """Shift invariance at 1e4: the kernels must compute (z_y - m) - lse, not z_y - (m + lse),
    whose rounding at 1e4 (ulp 1.8e-12) would swamp the 1e-13 tolerance below. The offsets are
    multiples of 1/64, so 1e4 + offset is exact and both sides see the same numbers."""
    rng = np.random.default_rng(8)
    _, _, states, tokens, mask, _ = case(8, V=5)
    offsets = rng.integers(-400, 400, (5, 7, 5)) / 64.0                     # (B, T, V)
    theta_off = rng.integers(-400, 400, (6, 5)) / 64.0                      # (S, V)
    got = K.dense_logp(offsets + 1e4, tokens, mask)[0]
    got_tab = K.tabular_logp(theta_off + 1e4, states, tokens, mask)[0]
    assert np.abs(got - token_logp(offsets, tokens, mask)[0]).max() < 1e-13
    assert np.abs(got_tab - token_logp(theta_off[states], tokens, mask)[0]).max() < 1e-13


def test_gathered_neginf_token():
    theta = np.array([[0.0, -np.inf, 1.0]])
    logits = theta[None]                                                  # (1, 1, 3)
    states, tokens, mask, w = np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64), \
        np.ones((1, 1)), np.full((1, 1), 2.0)
    for logp, seq in (K.tabular_logp(theta, states, tokens, mask),
                      K.dense_logp(logits, tokens, mask)):
        assert logp[0, 0] == -np.inf and seq[0] == -np.inf
    for g in (K.tabular_backward(theta, states, tokens, mask, w)[0],
              K.dense_backward(logits, tokens, mask, w)[0, 0]):
        np.testing.assert_allclose(g, [-2 / (1 + np.e), 2.0, -2 * np.e / (1 + np.e)], rtol=1e-15)
    lg32 = logits.astype(np.float32)
    assert K.dense_logp(lg32, tokens, mask)[0][0, 0] == -np.inf
    np.testing.assert_allclose(K.dense_backward(lg32, tokens, mask, w)[0, 0],
                               [-2 / (1 + np.e), 2.0, -2 * np.e / (1 + np.e)], rtol=1e-6)


# ---------------------------------------------------------------- the custom exp

def ulps(a, b):
    """Distance in units in the last place between float64 arrays of equal sign (0 <= x)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_exp_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-750, 712, 400_000), rng.uniform(-1, 1, 200_000),
                        rng.uniform(-745.2, -708, 100_000),          # subnormal results
                        rng.uniform(700, 709.78, 50_000), np.linspace(-40, 40, 100_001)])
    with np.errstate(over="ignore"):
        u = ulps(K.exp_array(x), np.exp(x))
    assert u.max() <= 1, (u.max(), x[u.argmax()])


def test_exp_special_values():
    x = np.array([-np.inf, -1e300, -746.0, -745.2, -745.1, -0.0, 0.0, 1e-300, 709.78, 709.79,
                  1e300, np.inf])
    got = K.exp_array(x)
    with np.errstate(over="ignore"):
        want = np.exp(x)
    assert got[0] == 0.0 and got[-1] == np.inf and got[6] == 1.0 and got[5] == 1.0
    assert ulps(got, want).max() <= 1
    assert np.array_equal(got == np.inf, want == np.inf)


def ulps32(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32))


def test_exp32_ulp():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-110, 90, 400_000), rng.uniform(-1, 1, 200_000),
                        rng.uniform(-103.98, -87, 100_000),          # subnormal results
                        np.linspace(-40, 40, 100_001)]).astype(np.float32)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)      # correctly rounded, nearly
        u = ulps32(K.exp32_array(x), want)
    assert u.max() <= 1, (u.max(), x[u.argmax()])


def test_exp32_special_values():
    x = np.array([-np.inf, -1e30, -104.0, -103.9, -0.0, 0.0, 1e-30, 88.72, 88.73, 1e30, np.inf],
                 np.float32)
    got = K.exp32_array(x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert got[0] == 0.0 and got[-1] == np.inf and got[4] == 1.0 and got[5] == 1.0
    assert ulps32(got, want).max() <= 1
    assert np.array_equal(got == np.inf, want == np.inf)


# ---------------------------------------------------------------- on-disk cache

def test_second_process_loads_cache():
    """Two fresh processes call every kernel; the second must hit the cache and compile nothing.

    The threaded variants are separate functions, so each has its own cache entry (the cache key
    ignores ``parallel``: one function with two option sets would share, and alias, one entry).
    The jitted cores are the private ``_name`` functions; the public names validate, then call them."""
    code = textwrap.dedent("""
        import numpy as np
        from minirl_lm import kernels as K
        th = np.zeros((2, 3)); st = np.zeros((1, 2), np.int64); m = np.ones((1, 2))
        lg = np.zeros((1, 2, 3)); w = np.ones((1, 2))
        calls = [(K._tabular_logp, (th, st, st, m)), (K._tabular_backward, (th, st, st, m, w)),
                 (K._tabular_logp_per_token, (th, st, st, m)),
                 (K._tabular_backward_per_token, (th, st, st, m, w)),
                 (K._dense_logp, (lg, st, m)),
                 (K._dense_backward_into, (lg, st, m, w, np.empty_like(lg))),
                 (K._exp_array, (np.zeros(3),)),
                 (K._exp32_array, (np.zeros(3, np.float32),)),
                 (K._dense_logp, (lg.astype(np.float32), st, m)),
                 (K._dense_backward_into, (lg.astype(np.float32), st, m, w,
                                          np.empty(lg.shape, np.float32))),
                 (K._dense_logp_parallel, (lg, st, m)),
                 (K._dense_backward_parallel_into, (lg, st, m, w, np.empty_like(lg)))]
        for f, args in calls:
            f(*args)
        funcs = {id(f): f for f, _ in calls}.values()
        hits = sum(sum(f.stats.cache_hits.values()) for f in funcs)
        misses = sum(sum(f.stats.cache_misses.values()) for f in funcs)
        print(hits, misses)
    """)
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    hits, misses = map(int, runs[1].stdout.split())
    assert misses == 0 and hits == 12, runs[1].stdout
