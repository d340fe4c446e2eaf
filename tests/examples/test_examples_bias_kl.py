"""The group-bias, KL-estimator and confusions examples: run as programs, numbers checked."""

import importlib.util
import itertools
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(script, *args):
    proc = example_runs.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, str(ROOT / "examples" / script), *args]
    for script, *args in (
        ("group_bias.py", "--mc-groups", "4000"),
        ("group_bias.py", "--rewards", "1,0,0,1,0", "--mc-groups", "100"),
        ("kl_estimators.py", "--samples", "2000"),
        ("kl_estimators.py", "--beta", "5", "--samples", "10", "--sweep", ""),
        ("kl_estimators.py", "--lr", "50", "--iters", "50", "--samples", "10", "--sweep", ""),
        ("confusions.py",),
    )
]


def load(script):
    spec = importlib.util.spec_from_file_location(script[:-3], ROOT / "examples" / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table_rows(out, first):
    """Whitespace-split rows of out whose first field matches the regex `first`."""
    rows = [line.split() for line in out.splitlines()]
    return [f for f in rows if f and re.fullmatch(first, f[0])]


# ---------------------------------------------------------------- group_bias.py


@pytest.fixture(scope="module")
def bias_out():
    return run("group_bias.py", "--mc-groups", "4000")


def bias_rows(out):
    rows = {}
    for f in table_rows(out, r"\d+"):
        K = int(f[0])
        rows[K] = {
            "shrink": float(f[1]),
            "centred": float(f[2]),
            "dev": float(f[3]),
            "mc": float(f[4]),
            "se": float(f[6]),
            "loo": f[7],
            "loo_dev": f[8],
            "cos": f[9] if f[9] != "E[update]" else None,
        }
    return rows


@pytest.mark.slow
def test_group_bias_centred_is_shrunk_by_k_minus_1_over_k(bias_out):
    rows = bias_rows(bias_out)
    assert sorted(rows) == list(range(1, 9))
    assert abs(rows[4]["centred"] - 0.75) < 1e-12
    for K, w in rows.items():
        assert abs(w["centred"] - (K - 1) / K) < 1e-12
        assert w["dev"] < 1e-12


@pytest.mark.slow
def test_group_bias_loo_exact_and_undefined_at_k1(bias_out):
    rows = bias_rows(bias_out)
    assert rows[1]["loo"] == "undefined"
    for K in range(2, 9):
        assert abs(float(rows[K]["loo"]) - 1.0) < 1e-12
        assert float(rows[K]["loo_dev"]) < 1e-12


@pytest.mark.slow
def test_group_bias_standardized_is_not_a_scaled_gradient(bias_out):
    rows = bias_rows(bias_out)
    assert rows[1]["cos"] is None  # K = 1: E[update] = 0 exactly
    assert all(float(rows[K]["cos"]) < 0.99 for K in range(2, 9))


@pytest.mark.slow
def test_group_bias_monte_carlo_agrees_within_its_error(bias_out):
    rows = bias_rows(bias_out)
    assert rows[1]["mc"] == 0.0 and rows[1]["se"] == 0.0
    for K in range(2, 9):
        assert abs(rows[K]["mc"] - (K - 1) / K) < 5 * rows[K]["se"]


@pytest.mark.slow
def test_group_bias_binary_rewards_standardized_is_parallel():
    rows = bias_rows(run("group_bias.py", "--rewards", "1,0,0,1,0", "--mc-groups", "100"))
    assert all(rows[K]["cos"] == "1.000000" for K in range(2, 9))


def test_group_bias_enumeration_against_ordered_tuples():
    """Multisets with multinomial weights == the brute-force sum over all V^K ordered groups."""
    gb = load("group_bias.py")
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    r = np.array([1.0, 0.0, 0.5, 0.0])
    for K in (1, 2, 3):
        for baseline in ("centred", "standardized") + (("loo",) if K > 1 else ()):
            tokens = np.array(list(itertools.product(range(4), repeat=K)))  # (V^K, K)
            prob = np.prod(pi[tokens], axis=1)
            adv = gb.BASELINES[baseline](r[tokens])
            brute = prob @ gb.group_updates(tokens, adv, pi)
            assert np.allclose(gb.exact_expected_update(pi, r, K, baseline), brute, rtol=0, atol=1e-15)


@pytest.mark.slow
def test_group_bias_help():
    assert "usage" in run("group_bias.py", "--help")


@pytest.mark.slow
@pytest.mark.docs_extra
def test_group_bias_plot(tmp_path):
    path = tmp_path / "bias.svg"
    run("group_bias.py", "--K-max", "3", "--mc-groups", "50", "--plot", str(path))
    assert "<svg" in path.read_text()


# ---------------------------------------------------------------- kl_estimators.py


@pytest.fixture(scope="module")
def kl_out():
    return run("kl_estimators.py", "--samples", "2000")


@pytest.mark.slow
def test_kl_estimator_expectations(kl_out):
    rows = table_rows(kl_out, r"k[123]")
    est = [f for f in rows if len(f) == 11]  # part 1: est, s, 7 numbers (MC is 3 fields)
    assert len(est) == 6
    for f in est:
        mean, fwd, off_is = float(f[2]), float(f[3]), float(f[10])
        assert abs(off_is - mean) < 1e-6  # the importance weight restores E_pi
        if f[0] in ("k1", "k3"):
            assert abs(mean - fwd) < 1e-6  # unbiased for KL(pi || pi_ref)
        else:
            assert abs(mean - fwd) > 1e-3  # k2 is biased
        assert abs(float(f[9]) - mean) > 1e-3  # without the weight: off


PLACEMENTS = tuple(f"{e} in {w}" for w in ("reward", "loss") for e in ("k1", "k2", "k3"))


def update_rows(out):
    """{placement: (from its closed form, from grad KL(pi||ref))} of the 3 x 2 update table."""
    rows = {}
    for line in out.split("Part 2.")[0].splitlines():
        name = line[:12].strip()
        if name in PLACEMENTS:
            f = line.split()
            rows[name] = (float(f[-2]), float(f[-1]))
    return rows


@pytest.mark.slow
def test_kl_update_table_three_estimators_times_two_placements(kl_out):
    rows = update_rows(kl_out)
    assert set(rows) == set(PLACEMENTS)
    for p, (closed, _) in rows.items():
        assert closed < (1e-8 if p == "k2 in reward" else 1e-12), p  # k2's oracle: central differences
    exact = {p for p, (_, off) in rows.items() if off < 1e-12}
    assert exact == {"k1 in reward", "k2 in loss"}
    assert min(off for p, (_, off) in rows.items() if p not in exact) > 1e-2


def test_kl_expected_updates_against_an_independent_oracle():
    # the closed forms of the table, against finite differences of the exact expectations
    kl = load("kl_estimators.py")
    policy, ref = kl.TabularPolicy(kl.THETA), kl.TabularPolicy(kl.THETA_REF)
    g_pr = kl.exact_kl_grad_theta(policy.theta, ref.theta)
    g_rp = kl.exact_reverse_kl_grad_theta(policy.theta, ref.theta)
    np.testing.assert_allclose(kl.kl_update(policy, ref, "k3", "reward"), g_pr - g_rp, atol=1e-15)
    np.testing.assert_allclose(
        kl.kl_update(policy, ref, "k2", "reward"), kl.grad_expected_k2(policy, ref) - g_pr, atol=1e-8
    )
    np.testing.assert_allclose(kl.kl_update(policy, ref, "k1", "reward"), g_pr, atol=1e-15)
    # k3's value is KL(pi || ref): its reward-placed update is grad E[k3] - E[grad k3]
    assert np.abs(kl.kl_update(policy, ref, "k3", "reward") - g_pr).max() > 1e-2


def test_kl_hessian_is_the_softmax_covariance_for_kl_ref_pi_only():
    kl = load("kl_estimators.py")
    ref = kl.TabularPolicy(kl.THETA_REF)
    at_pi = kl.hessian_check(kl.TabularPolicy(kl.THETA), ref)
    at_ref = kl.hessian_check(ref.copy(), ref)
    assert at_pi["KL(ref||pi)"] < 1e-8 and at_ref["KL(pi||ref)"] < 1e-8  # central differences, h = 1e-5
    assert at_pi["KL(pi||ref)"] > 1e-2


def placements(out):
    """{placement: 6 fields} of part 2's table."""
    return {
        line[:12].strip(): line[12:].split()
        for line in out.split("Part 2.")[1].split("Part 3.")[0].splitlines()
        if line[:12].strip() in PLACEMENTS and len(line[12:].split()) == 6
    }


@pytest.mark.slow
def test_kl_placements_fixed_points(kl_out):
    lines = placements(kl_out)
    assert set(lines) == set(PLACEMENTS)
    for p in ("k1 in reward", "k2 in loss"):  # both land on the tilted optimum
        assert float(lines[p][2]) < 1e-12 and float(lines[p][3]) < 1e-10
    k3 = lines["k3 in loss"]
    assert float(k3[5]) < 1e-10  # on the forward-KL optimum instead
    assert float(k3[2]) > 1e-3
    for p in ("k1 in loss", "k2 in reward", "k3 in reward"):  # no penalty that holds
        assert float(lines[p][2]) > 0.1, p
    assert "k3 overflows float64" in kl_out


@pytest.mark.slow
def test_kl_objective_gap_is_beta_times_the_printed_kl(kl_out):
    # J(pi*) - J(pi) = beta KL(pi || pi*) as printed (3 significant digits), part 2 and part 3
    for f in placements(kl_out).values():
        kl, gap = float(f[2]), float(f[4])
        assert abs(gap - 0.5 * kl) <= 0.01 * gap + 1e-15
    for beta, (kl, _, gap, *_) in sweep_rows(kl_out).items():
        assert abs(gap - beta * kl) <= 2e-3 * gap


def sweep_rows(out):
    """{beta: [KL(fwd||*), max|fwd-*|, J gap, steps, |grad|, max|k3-fwd|]} from part 3."""
    part3 = out.split("Part 3.")[1]
    return {float(f[0]): [float(x) for x in f[1:7]] for f in table_rows(part3, r"[0-9.]+") if len(f) == 7}


@pytest.mark.slow
def test_kl_sweep_k3_lands_on_the_forward_optimum_at_every_beta(kl_out):
    rows = sweep_rows(kl_out)
    betas = sorted(rows)
    assert len(betas) >= 5
    assert "did not converge" not in kl_out.split("Part 3.")[1]
    for b in betas:
        assert rows[b][4] <= 1e-13 and rows[b][5] < 1e-10, b  # a fixed point (printed to 2 digits)
    kl = [rows[b][0] for b in betas]
    assert all(x > y for x, y in zip(kl, kl[1:]))  # KL(fwd||*) falls as beta grows
    dist = [rows[b][1] for b in betas]
    peak = int(np.argmax(dist))
    assert 0 < peak < len(dist) - 1  # max|fwd - *| peaks inside
    assert all(x < y for x, y in zip(dist[:peak], dist[1 : peak + 1]))
    assert all(x > y for x, y in zip(dist[peak:], dist[peak + 1 :]))


@pytest.mark.slow
def test_kl_large_beta_converges_with_the_curvature_scaled_step():
    out = run("kl_estimators.py", "--beta", "5", "--samples", "10", "--sweep", "")
    lines = placements(out)
    for p in ("k1 in reward", "k2 in loss", "k3 in loss"):
        assert float(lines[p][1]) <= 1e-13 and int(lines[p][0]) < 1000, p
    assert float(lines["k1 in reward"][3]) < 1e-10  # on pi*
    assert float(lines["k3 in loss"][5]) < 1e-10  # on pi_fwd
    assert set(re.findall(r"did not converge: (.*?),", out)) == {"k1 in loss", "k2 in reward", "k3 in reward"}


@pytest.mark.slow
def test_kl_non_convergence_is_reported():
    out = run("kl_estimators.py", "--lr", "50", "--iters", "50", "--samples", "10", "--sweep", "")
    lines = placements(out)
    reported = re.findall(r"did not converge: (.*?), (\d+) steps, final max\|E grad\| (\S+)", out)
    assert {p for p, _, _ in reported} == set(lines)
    for p, n, g in reported:
        assert int(n) == int(lines[p][0]) <= 50 and float(g) == float(lines[p][1]) and float(g) >= 1e-13


@pytest.mark.slow
def test_kl_help():
    assert "usage" in run("kl_estimators.py", "--help")


@pytest.mark.slow
@pytest.mark.docs_extra
def test_kl_plot(tmp_path):
    path = tmp_path / "kl.svg"
    run("kl_estimators.py", "--iters", "20", "--samples", "10", "--sweep", "", "--plot", str(path))
    assert "<svg" in path.read_text()


# ---------------------------------------------------------------- confusions.py


@pytest.mark.slow
def test_confusions():
    out = run("confusions.py")
    loss = float(re.search(r"loss value\s+(\S+)", out).group(1))
    dlogp = re.search(r"dloss/dlogp\s+\[([^\]]*)\]", out).group(1).split()
    assert abs(loss) < 1e-12 and max(abs(float(x)) for x in dlogp) > 0.05
    before, after = map(float, re.search(r"one step: (\S+) -> (\S+)", out).groups())
    assert after > before
    e1 = re.findall(r"E = 1, group \d: clip fraction per epoch (.*)", out)  # E: epochs per group
    assert e1 == ["[0.0]"] * 3
    e4 = [eval(f) for f in re.findall(r"E = 4, group \d: clip fraction per epoch (.*)", out)]
    assert len(e4) == 3 and all(len(f) == 4 and f[0] == 0.0 for f in e4)
    assert max(max(f) for f in e4) > 0
    spans = [tuple(map(float, m)) for m in re.findall(r"mini-batch step \d: rho in \[(\S+), (\S+)\]", out)]
    assert spans[0] == (1.0, 1.0) and spans[1] != (1.0, 1.0)
    fr = [float(f) for f in re.findall(r"minibatch step \d: clip fraction (\S+)", out)]
    bypass = float(re.search(r"bypass step 1 .*: clip fraction (\S+)", out).group(1))
    assert len(fr) == 4 and fr[0] == 0.0 and min(fr[1:]) > 0 and bypass > 0
    # accumulation: each mode against its own big batch, at G = 2 and G = 4
    for G, block in re.findall(r"G = (\d), M_g = .*\n((?:  .*\n?)+)", out):
        ratio = {l.split()[0]: eval(l.split(None, 3)[3]) for l in block.splitlines()}
        assert len(ratio["bnpo"]) == int(G)
        assert all(r == [1.0] * int(G) for k, r in ratio.items() if k in ("dapo", "grpo", "dr_grpo"))
        assert ratio["bnpo"] != [1.0] * int(G) and np.allclose(
            ratio["sum"], np.multiply(ratio["bnpo"], int(G)), atol=5e-4 * int(G)
        )  # 4 decimals
    # K = 2, rewards (1, 0): r - mean = +-1/2, population std 1/2, Bessel std 1/sqrt(2), so
    # A = +-(1/2) / (std + eps) with eps = 1e-8: +-1 and +-1/sqrt(2), each shrunk by about eps.
    # Tolerance 1e-7: the eps effect (~1e-8) plus the 8 printed decimals (5e-9).
    pop = [float(x) for x in re.search(r"population std \(ddof=0\): A = \[([^\]]*)\]", out).group(1).split()]
    bes = [float(x) for x in re.search(r"Bessel std\s+\(ddof=1\): A = \[([^\]]*)\]", out).group(1).split()]
    assert np.allclose(pop, [1.0, -1.0], rtol=0, atol=1e-7) and abs(pop[0]) < 1.0
    assert np.allclose(bes, [2**-0.5, -(2**-0.5)], rtol=0, atol=1e-7) and abs(bes[0]) < 2**-0.5
    for K, ratio, factor in re.findall(
        r"K = +(\d+): A\(ddof=1\) / A\(ddof=0\) = (\S+), sqrt\(\(K-1\)/K\) = (\S+)", out
    ):
        assert abs(float(ratio) - np.sqrt((int(K) - 1) / int(K))) < 1e-6 and ratio == factor
    assert out.count("[0. 0. 0.]") == 3 and "leave-one-out:       ValueError" in out
    vanilla = [float(x) for x in re.search(r"no baseline:\s+\[([^\]]*)\]", out).group(1).split()]
    assert vanilla == [0.7, 1.0, 0.0]  # A = r: the raw rewards of the K = 1 groups


@pytest.mark.slow
def test_confusions_bad_name():
    proc = example_runs.run(
        [sys.executable, str(ROOT / "examples" / "confusions.py"), "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "NAME" in proc.stderr


@pytest.mark.slow
def test_confusions_claims_are_checked():
    """Every function of the page is in the one program, and each one's comparisons are claimed."""
    mod = load("confusions.py")
    page = (ROOT / "docs" / "confusions.md").read_text()
    shown = set(re.findall(r"examples/confusions\.py:(\w+)", page))
    run_ = set(re.findall(r"\$ python examples/confusions\.py (\w+)", page))
    assert shown == run_ == set(mod.CONFUSIONS)
    assert "$ python examples/off_policy.py" not in page  # nothing on the page runs other code
    claims = mod.main.__globals__["claim"]
    assert claims.__module__ == "_claims"


def test_kl_run_stops_when_the_printed_kl_no_longer_matches_the_objective_gap(monkeypatch, capsys):
    # the units bug the KL column once had: summed over states while J is averaged
    kl = load("kl_estimators.py")
    from _claims import ClaimFailed

    ref = kl.TabularPolicy(kl.THETA_REF)
    pi_star, out = kl.train(ref, kl.REWARD, 0.5, 2.0, 20)
    kl.print_placements(ref, kl.REWARD, 0.5, 2.0, 20, pi_star, out)  # holds as printed
    exact = kl.exact_kl
    monkeypatch.setattr(kl, "exact_kl", lambda p, q: exact(p, q) * p.shape[0])  # "mean" -> sum
    with pytest.raises(ClaimFailed, match="beta KL"):
        kl.print_placements(ref, kl.REWARD, 0.5, 2.0, 20, pi_star, out)
