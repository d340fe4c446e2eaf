"""The atlas: its enumeration equals the library's own functions outcome by outcome, the exact
claims hold exactly, and the program prints the documented form and rejects bad arguments."""

import importlib.util
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

from minirl_lm.pg.shaping import resample_factor

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("atlas", ROOT / "examples" / "atlas.py")
atlas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atlas)

LINE = re.compile(
    r"^atlas (\S+) +(\S+) +(\S+) +(\S+) *: scale (-?\d+\.\d{6}), "
    r"cosine (-?\d+\.\d{6}), variance (\d\.\d\de[-+]\d\d), "
    r"fixed point TV (\d\.\de[-+]\d\d|nan)$"
)


@pytest.fixture(scope="module")
def main_task():
    return atlas.make_task("main")


def row(cfg, task, K, fixed=False, seed=0):
    return atlas.measure(cfg, task, K, atlas.probe(task, seed), fixed=fixed)


# ---- the enumeration is the library, outcome by outcome ---------------------------------------


@pytest.mark.slow  # in process, but 1-11 s per configuration
@pytest.mark.parametrize(
    "cfg",
    [
        ("reinforce_pp", "token_mean", "kl_reward", "all"),
        ("rpp_baseline", "token_mean", "k3", "all"),
        ("batch_std", "seq_sum", "kl_reward", "all"),
        ("std", "seq_mean_token_mean", "k3+", "trunc"),
        ("loo", "constant", "ent_bonus", "dapo"),
        ("remax", "seq_sum", "rho_k3", "overlen"),
        ("opo", "token_mean", "kl_reward", "all"),
    ],
)
def test_enumeration_equals_the_library_batch_by_batch(cfg, main_task):
    theta = atlas.probe(main_task, 1)
    Eg, var = atlas.moments(cfg, theta, main_task, 2)
    Eb, vb = atlas.brute_force_moments(cfg, theta, main_task, 2)  # every joint outcome, library
    assert np.abs(Eg - Eb).max() < 1e-13
    assert abs(var - vb) < 1e-13


# ---- the exact claims -------------------------------------------------------------------------


@pytest.mark.parametrize("K", [2, 3, 4])
@pytest.mark.parametrize("adv", ["loo", "remax", "none"])
def test_leave_one_out_remax_and_no_baseline_are_unbiased(adv, K, main_task):
    r = row((adv, "seq_sum", "kl_reward", "all"), main_task, K)
    assert abs(r["scale"] - 1) < 1e-12 and abs(r["cosine"] - 1) < 1e-12


@pytest.mark.parametrize("K", [2, 3, 4])
def test_mean_centring_is_shrunk_by_k_minus_1_over_k(K, main_task):
    r = row(("mean", "seq_sum", "kl_reward", "all"), main_task, K)
    assert abs(r["scale"] - (K - 1) / K) < 1e-12 and abs(r["cosine"] - 1) < 1e-12


@pytest.mark.parametrize("K", [2, 3, 5])
def test_dynamic_sampling_reweights_each_prompt(K):
    task = atlas.make_task("binary")
    theta = atlas.probe(task, 0)
    E_all, _ = atlas.moments(("mean", "seq_sum", "none", "all"), theta, task, K)
    E_dapo, _ = atlas.moments(("mean", "seq_sum", "none", "dapo"), theta, task, K)
    py = atlas.tables(theta, task)["py"]
    prompt = np.repeat([task["mdp"].prefix_of(s)[0] for s in range(task["mdp"].S)], task["mdp"].V)
    for n in range(task["N"]):
        p = py[n] @ task["R"][n]  # P(r = 1 | x_n)
        blk = prompt == n
        assert np.abs(E_dapo[blk] - resample_factor(p, K) * E_all[blk]).max() < 1e-14
        assert np.abs(E_all[blk]).max() > 1e-3


def test_entropy_in_the_reward_trains_to_the_closed_form(main_task):
    r = atlas.measure(("loo", "seq_sum", "ent_reward", "all"), main_task, 3, atlas.probe(main_task, 0))
    assert r["tv"] < 1e-9 and abs(r["scale"] - 1) < 1e-12


def test_entropy_bonus_fixed_point_closed_form_on_one_token_responses():
    task = atlas.make_task("bandit")
    r = atlas.measure(("loo", "seq_sum", "ent_bonus", "all"), task, 3, atlas.probe(task, 0))
    assert r["tv"] < 1e-9
    pi = atlas.optimum(task, atlas.C_ENT)  # pi_ref^(b/(b+c)) e^(r/(b+c))
    ref = np.exp(atlas.tables(task["theta_ref"], task)["seq"])
    want = ref ** (atlas.BETA / (atlas.BETA + atlas.C_ENT)) * np.exp(task["R"] / (atlas.BETA + atlas.C_ENT))
    assert np.abs(pi - want / want.sum(1, keepdims=True)).max() < 1e-15


def test_per_token_entropy_bonus_misses_the_closed_form_on_longer_responses(main_task):
    r = atlas.measure(("loo", "seq_sum", "ent_bonus", "all"), main_task, 3, atlas.probe(main_task, 0))
    assert r["tv"] > 1e-3 and r["residual"] < 1e-9 and r["cosine"] < 1 - 1e-3


@pytest.mark.parametrize(
    "cfg",
    [
        ("std", "seq_sum", "kl_reward", "all"),
        ("loo", "seq_mean_token_mean", "kl_reward", "all"),
        ("batch_std", "seq_sum", "kl_reward", "all"),
    ],
)
def test_std_scaling_and_seq_mean_token_mean_change_the_direction(cfg, main_task):
    assert row(cfg, main_task, 3)["cosine"] < 1 - 1e-3


def test_straight_through_and_importance_weighted_k3_are_k2_in_expectation(main_task):
    theta = atlas.probe(main_task, 0)
    E2, v2 = atlas.moments(("loo", "seq_sum", "k2", "all"), theta, main_task, 3)
    for kl in ("k1+", "k3+", "rho_k3"):
        E, v = atlas.moments(("loo", "seq_sum", kl, "all"), theta, main_task, 3)
        assert np.abs(E - E2).max() < 1e-15 and abs(v - v2) < 1e-15


COUPLED = [c for c in atlas.CONFIGS if atlas.coupled(c)]


@pytest.mark.slow  # in process, about 1 s per row at K = 5
@pytest.mark.parametrize("task_name", ["main", "bandit"])
@pytest.mark.parametrize("cfg", COUPLED, ids=" ".join)
def test_the_continuation_in_k_reaches_the_zero_the_search_from_pi_ref_reaches(cfg, task_name):
    # above K = 4 a coupled row's fixed point is continued from K = 4 (measure); at K = 5 the
    # search from pi_ref is still cheap. Where the continuation converges, the search ends next to
    # its point: the response distributions within 10x the search's own residual (the search may
    # stop short of the zero: it Newton-polishes each prompt's block alone). Where it declines,
    # the row has no smooth zero (a standardized advantage) and the search cannot settle either.
    task, K = atlas.make_task(task_name), 5
    found = atlas.continued(cfg, task, K)
    th, res = atlas.fixed_point(cfg, task, K)
    if found is None:
        assert res > 1e-2 and cfg[0] == "std"
        return
    py = lambda t: atlas.tables(t, task, entropy=False)["py"]  # noqa: E731
    assert np.abs(py(found[0]) - py(th)).max() <= 10 * res + 1e-10


@pytest.mark.parametrize("adv", ["batch_std seq_sum", "reinforce_pp seq_sum", "reinforce_pp token_mean"])
def test_the_search_finds_a_coupled_zero_its_diagonal_blocks_miss(adv, monkeypatch):
    # on the bandit the prompts' coupling matters: Newton on each prompt's block alone stalls
    # above 1e-6 for these rows, and the full Jacobian's polish takes them to a smooth zero
    cfg, task = (*adv.split(), "kl_reward", "all"), atlas.make_task("bandit")
    assert atlas.fixed_point(cfg, task, 3)[1] < 1e-9
    monkeypatch.setattr(atlas, "broyden", lambda Eg, theta, act, J, steps, tol: (theta, Eg(theta)))  # no polish
    assert atlas.fixed_point(cfg, task, 3)[1] > 1e-6


def test_the_atlas_continues_only_the_coupled_rows_and_only_above_k_4(main_task, monkeypatch):
    calls, searched = [], []
    decline = lambda cfg, task, K: calls.append((cfg, K))  # noqa: E731  returns None: declined
    search = lambda cfg, task, K: searched.append(cfg) or (task["theta_ref"], 0.5)  # noqa: E731
    monkeypatch.setattr(atlas, "continued", decline)
    monkeypatch.setattr(atlas, "fixed_point", search)
    theta = atlas.probe(main_task, 0)
    loo, bstd = ("loo", "seq_sum", "kl_reward", "all"), ("batch_std", "seq_sum", "kl_reward", "all")
    tmean = ("loo", "token_mean", "kl_reward", "all")  # coupled by its token count alone
    assert not atlas.coupled(loo) and atlas.coupled(bstd) and atlas.coupled(tmean)
    for K in (4, 5):
        for cfg in (loo, bstd, tmean):
            row = atlas.measure(cfg, main_task, K, theta)
            assert row["continued"] is False and row["residual"] == 0.5
    assert calls == [(bstd, 5), (tmean, 5)] and len(searched) == 6
    # a continuation that converges is taken, and the search from pi_ref is not run
    calls.clear(), searched.clear()
    moved = atlas.probe(main_task, 3)
    monkeypatch.setattr(atlas, "continued", lambda cfg, task, K: calls.append(K) or (moved, 1e-13))
    row = atlas.measure(bstd, main_task, 8, theta)
    assert row["continued"] is True and row["residual"] == 1e-13 and calls == [8] and searched == []
    assert row["tv"] == atlas.tv_to_optimum(moved, main_task, 0.0)


# ---- the program ------------------------------------------------------------------------------


def run(*args):
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "atlas.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, str(ROOT / "examples" / "atlas.py"), *a]
    for a in (("--quick", "--K", "2"), ("--plot", "{out}/atlas.svg"))
]


@pytest.mark.slow
def test_quick_run_prints_every_configuration_in_form():
    out = run("--quick", "--K", "2")
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("atlas ")]
    assert len(lines) >= 30 and all(LINE.match(l) for l in lines)
    cfgs = {LINE.match(l).groups()[:4] for l in lines}
    assert len(cfgs) == len(lines)


@pytest.mark.slow
@pytest.mark.docs_extra
def test_full_run_claims_and_figure():
    out = run("--plot", "{out}/atlas.svg")
    assert out.returncode == 0, out.stderr
    rows = {m.groups()[:4]: m.groups()[4:] for m in map(LINE.match, out.stdout.splitlines()) if m}
    assert len(rows) >= 30
    for adv in ("loo", "remax"):
        scale, cos, _, tv = rows[(adv, "seq_sum", "kl_reward", "all")]
        assert scale == "1.000000" and cos == "1.000000" and float(tv) < 1e-9
    assert rows[("mean", "seq_sum", "kl_reward", "all")][0] == "0.666667"
    assert float(rows[("std", "seq_sum", "kl_reward", "all")][1]) < 1
    assert float(rows[("loo", "seq_mean_token_mean", "kl_reward", "all")][1]) < 1
    assert float(rows[("loo", "seq_sum", "ent_reward", "all")][3]) < 1e-9
    assert "leave-one-out scale 1.000000000000" in out.stdout
    for adv in ("maxrl", "passk", "otb", "otb_group", "gdpo", "std_sum", "loo_sum"):
        assert any(k[0] == adv for k in rows), adv
    assert any(k[1] == "luspo" for k in rows) and any(k[1] == "token_sum" for k in rows)
    assert rows[("otb", "seq_sum", "kl_reward", "all")][:2] == ("1.000000", "1.000000")
    assert re.search(r"target pass@3 \(no KL\): .*passk scale 1\.000000, cosine 1\.000000", out.stdout)
    # verl's group estimate of the token baseline: its lower variance is its scale, and it turns the direction
    grp = re.search(
        r"from the group: scale (\S+), cosine (\S+), variance (\S+), variance / scale\^2 (\S+) "
        r"\(leave-one-out's, scale 1: (\S+)\)$",
        out.stdout,
        re.M,
    )
    scale, cos, var, per_scale, loo = map(float, grp.groups())
    assert abs(per_scale - var / scale**2) < 2e-3 * per_scale and per_scale >= loo and cos < 1 and scale < 1
    assert "rewards of the task: 0, 0.5, 1" in out.stdout  # not 0/1: the MaxRL sentence says so
    assert out.text("atlas.svg").lstrip().startswith("<?xml")


# ---- the objectives of 2025-26 ----------------------------------------------------------------


@pytest.mark.slow  # in process, 1-3 s per configuration
@pytest.mark.parametrize(
    "cfg",
    [
        ("maxrl", "seq_sum", "none", "all"),
        ("passk", "seq_sum", "none", "all"),
        ("otb_group", "seq_sum", "kl_reward", "all"),
        ("loo", "luspo", "kl_reward", "all"),
        ("std", "token_sum", "k3", "all"),
        ("gdpo", "seq_sum", "kl_reward", "all"),
        ("std_sum", "seq_sum", "kl_reward", "all"),
    ],
)
def test_new_rows_equal_the_library_batch_by_batch(cfg, main_task):
    task = atlas.two_rewards(main_task)  # R + F; the rows that do not read F see one reward
    theta = atlas.probe(task, 1)
    Eg, var = atlas.moments(cfg, theta, task, 2)
    Eb, vb = atlas.brute_force_moments(cfg, theta, task, 2)
    assert np.abs(Eg - Eb).max() < 1e-13
    assert abs(var - vb) < 1e-13


@pytest.mark.parametrize("K", [2, 3, 4])
def test_the_optimal_token_baseline_has_the_lowest_variance_of_the_unbiased_rows(K, main_task):
    theta = atlas.probe(main_task, 0)
    rows = [atlas.measure(cfg, main_task, K, theta, fixed=False) for cfg in atlas.CONFIGS]
    unbiased = [r for r in rows if abs(r["scale"] - 1) < 1e-9 and r["cosine"] > 1 - 1e-9]
    otb = [r for r in unbiased if r["cfg"][0] == "otb"]
    assert len(otb) == 1 and len(unbiased) >= 5
    assert all(otb[0]["variance"] < r["variance"] for r in unbiased if r is not otb[0])


@pytest.mark.parametrize("K", [2, 3, 4])
def test_passk_advantages_are_the_gradient_of_pass_at_k(K, main_task):
    theta = atlas.probe(main_task, 2)
    Eg, _ = atlas.moments(("passk", "seq_sum", "none", "all"), theta, main_task, K, second=False)
    target = atlas.passk_target(theta, main_task, K)
    assert np.abs(Eg - target).max() < 1e-14 and np.abs(target).max() > 1e-3
    E1, _ = atlas.moments(("loo", "seq_sum", "none", "all"), theta, main_task, K, second=False)
    assert np.abs(E1 - atlas.passk_target(theta, main_task, 1)).max() < 1e-14  # pass@1 = E[R]


def test_luspo_on_policy_is_seq_sum_and_token_sum_is_b_times_it(main_task):
    theta = atlas.probe(main_task, 0)
    E, v = atlas.moments(("loo", "seq_sum", "kl_reward", "all"), theta, main_task, 3)
    El, vl = atlas.moments(("loo", "luspo", "kl_reward", "all"), theta, main_task, 3)
    Et, vt = atlas.moments(("loo", "token_sum", "kl_reward", "all"), theta, main_task, 3)
    assert np.abs(El - E).max() < 1e-15 and abs(vl - v) < 1e-15
    assert np.abs(Et - 9 * E).max() < 1e-14 and abs(vt - 81 * v) < 1e-12


def test_gdpo_with_a_constant_format_reward_is_the_standardized_sum(main_task):
    task = atlas.two_rewards(main_task)
    task["parts"] = task["parts"].copy()
    task["parts"][..., 1] = 1.0  # F constant: every group
    task["R"] = task["parts"].sum(-1)
    theta = atlas.probe(task, 0)
    Eg, vg = atlas.moments(("gdpo", "seq_sum", "kl_reward", "all"), theta, task, 3)
    Es, vs = atlas.moments(("std_sum", "seq_sum", "kl_reward", "all"), theta, task, 3)
    assert np.abs(Eg - Es).max() < 1e-12 and abs(vg - vs) < 1e-12
    varied = atlas.two_rewards(main_task)
    Eg, _ = atlas.moments(("gdpo", "seq_sum", "kl_reward", "all"), theta, varied, 3)
    Es, _ = atlas.moments(("std_sum", "seq_sum", "kl_reward", "all"), theta, varied, 3)
    assert np.abs(Eg - Es).max() > 1e-3
