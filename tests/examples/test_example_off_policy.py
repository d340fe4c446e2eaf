"""examples/off_policy.py as a program: the lines its page parses, and the claims it checks.

The exact measurement itself (grad J by finite differences, sequence IS unbiased, the identity at
mu = pi_old) is tested in tests/pg/test_offpolicy.py; here: the new sections' printed numbers,
the page's sentences, and a reversed claim failing the run."""

import importlib.util
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
NUM = r"([-+0-9.e]+)"


def run(*args):
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "off_policy.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, str(ROOT / "examples" / "off_policy.py"), "--quick", *a]
    for a in ((), ("--section", "takeaway"), ("--section", "conclusions"), ("--c", "1e5"))
]


@pytest.fixture(scope="module")
def out():
    proc = run("--quick")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def rows(out, prefix):
    pat = re.compile(rf"^{prefix}\s+(\S+)\s+kl {NUM}: bias {NUM}, cosine {NUM}, variance {NUM}$")
    res = {}
    for line in out.splitlines():
        m = pat.match(line)
        if m:
            res.setdefault(m.group(1), []).append(tuple(float(v) for v in m.groups()[1:]))
    return res


def test_token_is_is_biased_by_the_prefix_and_by_the_continuation(out):
    for depth in (1, 3):  # the first token only (prefix source), the last only (continuation)
        est = {k: v[0] for k, v in rows(out, f"depth {depth} only ").items()}
        assert set(est) == {"none", "tok_is", "seq_is"}
        assert est["tok_is"][1] > 1e-2 and est["seq_is"][1] <= 1e-12 and est["none"][1] > 1e-2


def test_dual_clip_is_ppo_because_its_floor_never_binds(out):
    est = rows(out, "estimator")
    assert est["dual_bypass"] == est["ppo_bypass"] and len(est["ppo_bypass"]) == 5
    floor = re.search(r"dual-clip floor c = 3: .* per level: (.*)", out).group(1)
    ratios = [float(x) for x in floor.split(", ")]
    assert len(ratios) == 5 and ratios[0] == 1.0 and max(ratios) < 3.0


def split(out):
    """{(name, agg): (on-policy cosine, norm, [off-policy bias per level], [variance per level])}."""
    on = re.findall(rf"^split (\S+) +(\w+) \(.*\): on-policy cosine {NUM}, norm {NUM} x \|grad J\|$", out, re.M)
    off = re.findall(r"^split (\S+) +(\w+): off-policy bias ([-+0-9.e ]+); variance ([-+0-9.e ]+)$", out, re.M)
    res = {(n, a): [float(c), float(m)] for n, a, c, m in on}
    for n, a, b, v in off:
        res[n, a] += [[float(x) for x in b.split()], [float(x) for x in v.split()]]
    return res


def test_the_trust_regions_print_a_row_per_level_and_reduce_as_the_page_says(out):
    est = rows(out, "estimator")
    for name in ("sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo"):
        assert len(est[name]) == 5, name
        assert est[name][0][0] == 0.0  # the first level is mu = pi_old
    sp = split(out)
    S, TM = "seq_mean_token_mean", "token_mean"
    assert set(sp) == {
        ("gspo_bypass", S),
        ("sapo", S),
        ("gmpo", S),
        ("dppo_tv", TM),
        ("dppo_kl", TM),
        ("vespo", TM),
        ("tok_is", S),
        ("tok_is", TM),
        ("seq_is", S),
        ("seq_is", TM),
        ("gspo_bypass", TM),
    }
    for key, (cos, norm, off, var) in sp.items():
        assert len(off) == len(var) == 5 and off[0] == 0.0, key  # against its own on-policy update
        # the aggregation alone: the per-sequence token mean turns the update, the token mean scales it
        assert (cos < 0.999) if key[1] == S else (cos == 1.0 and norm < 1), key
    assert sp["dppo_kl", TM] == sp["tok_is", TM]  # its mask never binds here, c = 3 neither
    assert sp["dppo_tv", TM][2][:3] == sp["tok_is", TM][2][:3] != sp["dppo_tv", TM][2]
    assert all(a < b for a, b in zip(sp["sapo", S][2][1:], sp["tok_is", S][2][1:]))
    assert max(sp["seq_is", S][2]) < 1e-12 < min(sp["seq_is", TM][2][1:])  # token_mean counts mu's tokens
    # at KL 0 the table's rows of one aggregation agree, and those at seq_sum are the uncorrected row
    assert est["gmpo"][0] == est["gspo_bypass"][0] == est["sapo"][0]
    assert est["dppo_kl"][0] == est["vespo"][0] and est["tok_is"][0] == est["none"][0]


def test_the_minibatch_run_gives_each_trust_region_its_lost_fraction(out):
    pat = r"^minibatch (\w+) *: lost ([\d. ]+); below half ([\d. ]+); of them in longer responses ([\d ]+)$"
    got = {m[0]: m[1:] for m in re.findall(pat, out, re.M)}
    assert set(got) == {"sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo"}
    for lost, half, long_ in got.values():
        lost, half = [float(x) for x in lost.split()], [float(x) for x in half.split()]
        assert len(lost) == len(half) == len(long_.split()) == 4 and lost[0] == half[0] == 0.0  # step 1: rho = 1
        assert all(a <= b for a, b in zip(lost, half))  # a lost gradient is below half
    assert set(got["sapo"][0].split()) == {"0.000"}  # the soft gate never closes
    assert any(float(x) > 0 for x in got["gmpo"][0].split())
    both = re.search(r"below half in both .*: ([\d ]+) tokens, of them .*: ([\d ]+)$", out, re.M)
    n, one = [int(x) for x in both.group(1).split()], [int(x) for x in both.group(2).split()]
    assert len(n) == 4 and all(0 <= k <= m for k, m in zip(one, n)) and n[-1] > 0


def test_the_sweep_shows_the_product_exploding(out):
    sweep = re.findall(
        rf"sweep L +(\d+): kl {NUM}, Var W {NUM} \(exact\); variance none {NUM} \+- {NUM}, "
        rf"tok_is {NUM} \+- {NUM}, seq_is {NUM} \+- {NUM}; ratio outside \[0.8, 1.2\]: W {NUM}, W\^\(1/L\) {NUM}",
        out,
    )
    assert [int(s[0]) for s in sweep] == [8, 64]  # --quick
    short, long_ = [[float(x) for x in s] for s in sweep]
    assert long_[2] > 10 * short[2]  # exact Var W: geometric in the length
    assert long_[7] > 3 * long_[5] and short[7] < 2 * short[5]  # seq_is against tok_is
    assert long_[9] > 0.5 > long_[10]  # product vs geometric mean outside the clip range


def test_normalizers_against_their_own_big_batch(out):
    M_g = [int(x) for x in re.search(r"micro-batches \(M_g = ([\d, ]+)\)", out).group(1).split(", ")]
    table = {
        l.split()[0]: l.split()
        for l in out.splitlines()
        if l.split()[:1] in (["dapo"], ["bnpo"], ["grpo"], ["dr_grpo"], ["sum"])
    }
    for mode in ("dapo", "grpo", "dr_grpo"):
        assert table[mode][1] == table[mode][3] == "1.0000" and set(table[mode][6:]) == {"1.0000"}
    assert table["grpo"][5] == "seq_mean_token_mean" and table["dr_grpo"][5] == "constant"
    G, M = len(M_g), sum(M_g)
    np.testing.assert_allclose([float(x) for x in table["bnpo"][6:]], M / (G * np.array(M_g)), atol=5e-5)
    assert float(table["sum"][4]) == G


def test_the_page_sentences_are_three_and_computed():
    take = run("--quick", "--section", "takeaway")
    assert take.returncode == 0, take.stderr
    lines = take.stdout.strip().splitlines()
    assert len(lines) == 3 and all(l.startswith("- **") for l in lines)
    conc = run("--quick", "--section", "conclusions").stdout.strip().splitlines()
    assert len(conc) >= 6 and all(l.startswith("- ") for l in conc)
    assert not re.search(
        r"^estimator ", take.stdout + "\n".join(conc), re.M
    )  # the sections print only the sentences


def test_a_reversed_claim_fails_the_run():
    """c_max = 1e5 never binds: truncation equals plain sequence IS, and the page's sentence
    "truncation trades bias for variance" no longer holds, so the run (and the build) fails."""
    proc = run("--quick", "--c", "1e5")
    assert proc.returncode == 1 and "ClaimFailed" in proc.stderr and "truncation" in proc.stderr


def test_per_sample_updates_sum_to_the_policy_backward():
    spec = importlib.util.spec_from_file_location("off_policy_example", ROOT / "examples" / "off_policy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(3)
    L, V, n = 5, 3, 7
    pol = mod.TabularPolicy(rng.normal(size=(L, V)))
    y = rng.integers(V, size=(n, L))
    c = rng.normal(size=(n, L))
    states = np.broadcast_to(np.arange(L), (n, L)).copy()
    g = mod.per_sample_updates(pol.probs(), y, c)  # (n, L*V)
    for b in range(n):  # the backward of one row is minus its update (dloss/dlogp = -c)
        ref = pol.backward(states[b : b + 1], y[b : b + 1], np.ones((1, L)), -c[b : b + 1])
        np.testing.assert_allclose(g[b], -ref.ravel(), rtol=0, atol=1e-14)


def test_token_mean_moments_are_the_large_batch_limit_of_sampled_batches():
    """Exact.expect at token_mean: E[X] / E[L] and the delta method's variance per response, against
    batches of n responses drawn from mu, each update sum_b X_b / sum_b L_b (n times its variance)."""
    spec = importlib.util.spec_from_file_location("off_policy_example", ROOT / "examples" / "off_policy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(0)
    mdp = mod.make_task(3)
    ex = mod.Exact(mdp, mod.TabularPolicy(rng.normal(size=(mdp.S, mdp.V))))
    logp_mu, q = ex.sampler(ex.tau_for(0.2))

    class Args:
        c, delta, geo = 1.5, 0.1, 1.1

    d = mod.estimators(ex, logp_mu, Args)["vespo"]  # at seq_sum, as the lab passes a token_mean row
    Eg, var = ex.expect(d, q, "token_mean")
    c, L, P = -len(ex.R) * d, ex.ro.mask.sum(axis=1), ex.P_old
    X = np.zeros((len(L), P.size))  # (B, S*V) each response's seq_sum update, dense
    for b in range(len(L)):
        for t in range(int(L[b])):
            s, y = ex.ro.states[b, t], ex.ro.tokens[b, t]
            X[b, s * P.shape[1] : (s + 1) * P.shape[1]] += c[b, t] * (np.eye(P.shape[1])[y] - P[s])
    n = 300
    counts = rng.multinomial(n, q / q.sum(), size=4000)  # (4000, B) how often each response is drawn
    est = (counts @ X) / (counts @ L)[:, None]  # (4000, S*V)
    assert np.abs(est.mean(axis=0) - Eg).max() < 5e-4
    np.testing.assert_allclose(((est - est.mean(axis=0)) ** 2).sum(axis=1).mean() * n, var, rtol=0.1)
    seq = ex.expect(d, q)  # seq_sum: E[X], not divided by the tokens
    assert np.abs(seq[0] / float(q @ L) - Eg).max() < 1e-15
