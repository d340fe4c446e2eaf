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


# ---- the program ------------------------------------------------------------------------------


def run(*args):
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "atlas.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_quick_run_prints_every_configuration_in_form():
    out = run("--quick", "--K", "2")
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("atlas ")]
    assert len(lines) >= 30 and all(LINE.match(l) for l in lines)
    cfgs = {LINE.match(l).groups()[:4] for l in lines}
    assert len(cfgs) == len(lines)


@pytest.mark.slow
def test_full_run_claims_and_figure(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "atlas.svg"
    out = run("--plot", str(path))
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
    assert path.read_text().lstrip().startswith("<?xml")
