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


def test_the_trust_regions_print_a_row_per_level_and_reduce_as_the_page_says(out):
    est = rows(out, "estimator")
    for name in ("sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo"):
        assert len(est[name]) == 5, name
        assert est[name][0][0] == 0.0  # the first level is mu = pi_old
    assert est["dppo_kl"] == est["tok_is"]  # its mask never binds here, c = 3 neither
    assert est["dppo_tv"][:3] == est["tok_is"][:3] and est["dppo_tv"][-1] != est["tok_is"][-1]
    assert est["gmpo"][0] == est["gspo_bypass"][0]  # both 1/|y| at KL 0 (printed digits)
    assert all(s[1] < t[1] for s, t in zip(est["sapo"][1:], est["tok_is"][1:]))


def test_the_minibatch_run_gives_each_trust_region_its_lost_fraction(out):
    pat = r"^minibatch (\w+) *: lost ([\d. ]+); below half ([\d. ]+)$"
    got = {m[0]: (m[1], m[2]) for m in re.findall(pat, out, re.M)}
    assert set(got) == {"sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo"}
    for lost, half in got.values():
        lost, half = [float(x) for x in lost.split()], [float(x) for x in half.split()]
        assert len(lost) == len(half) == 4 and lost[0] == half[0] == 0.0  # step 1: rho = 1
        assert all(a <= b for a, b in zip(lost, half))  # a lost gradient is below half
    assert set(got["sapo"][0].split()) == {"0.000"}  # the soft gate never closes
    assert any(float(x) > 0 for x in got["gmpo"][0].split())


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
