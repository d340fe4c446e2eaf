"""The exact examples on the engine (`minirl_lm.exact`) reproduce what they printed before it.

The fixtures (`tests/fixtures/exact/`) were recorded from the examples as they were at commit
f8ae078, each with enumeration code of its own (`make_before.py` there says how). Every
quantity the math determines agrees to 1e-12. One kind does not: the fixed point of a row with
no smooth zero (a standardized advantage keeps unit size as the spread vanishes, so the
expected update jumps at its zero; the atlas then stops after a decaying step, within ~1e-4
steps of the zero). There the last digits are set by rounding: the old code itself moves its
TV by as much when pi_ref moves by 1e-15 (`test_a_fixed_point_with_no_smooth_zero_is_set_by_rounding`).

The printed outputs (multi_turn, preferences) are compared number by number (`same_output`): the
text between the numbers is identical and every number agrees to 1e-12, except a value the math
makes zero, which prints the run's residual (rounding, or where a solver stops) and varies with
the CPU (a machine with other SIMD widths sums in another order); two such values agree when
both are below 1e-9.
"""

import json
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "exact"
sys.path.insert(0, str(ROOT / "examples"))
import atlas  # noqa: E402
import off_policy  # noqa: E402

BEFORE = np.load(FIX / "before.npz")
TOL = 1e-12
# the configurations the fixtures hold: the atlas's first table (rows appended later have none)
RECORDED = atlas.CONFIGS[: atlas.FIRST_TABLE]
OFF_POLICY_NEW = ("sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo")  # rows appended later


def test_the_fixtures_cover_the_first_table_and_nothing_more():
    for key in ("atlas/main/K3", "atlas/bandit/K3"):
        n = len({k.split("/")[3] for k in BEFORE.files if k.startswith(key + "/")})
        assert n == atlas.FIRST_TABLE == 38, key


@pytest.mark.parametrize("task_name, K", [("main", 2), ("main", 3), ("binary", 3), ("bandit", 3)])
def test_atlas_moments_equal_the_fixtures(task_name, K):
    task = atlas.make_task(task_name)
    theta = atlas.probe(task, 0)
    for i, cfg in enumerate(RECORDED):
        Eg, _ = atlas.moments(cfg, theta, task, K)
        row = atlas.measure(cfg, task, K, theta, fixed=False)
        got = [row["scale"], row["cosine"], row["variance"], row["bias"]]
        old = BEFORE[f"atlas/{task_name}/K{K}/{i}/row"][:4]
        assert np.abs(Eg - BEFORE[f"atlas/{task_name}/K{K}/{i}/Eg"]).max() <= TOL, cfg
        assert np.abs(np.array(got) - old).max() <= TOL, cfg


def test_atlas_k4_moments_equal_the_fixtures():
    before = np.load(FIX / "before_k4.npz")
    task = atlas.make_task("main")
    theta = atlas.probe(task, 0)
    for i, cfg in enumerate(RECORDED):
        Eg, var = atlas.moments(cfg, theta, task, 4)
        assert np.abs(Eg - before[f"atlas/main/K4/{i}/Eg"]).max() <= TOL, cfg
        assert abs(var - before[f"atlas/main/K4/{i}/row"][2]) <= TOL, cfg


def _fixed_argv(part):
    """The fixed points of the recorded rows i = part, part + 2, ... (tests/examples/_atlas_fixed_points.py:
    seconds in all, so the session runs them in two halves beside the in-process tests)."""
    rows = [str(i) for i in range(part, len(RECORDED), 2)]
    return [sys.executable, str(ROOT / "tests" / "examples" / "_atlas_fixed_points.py"), *rows]


@pytest.mark.slow
def test_atlas_fixed_points_equal_the_fixtures():
    got = {}
    for part in (0, 1):
        rows = json.loads(example_runs.run(_fixed_argv(part), cwd=ROOT, check=True).stdout)
        got.update(zip(range(part, len(RECORDED), 2), rows))
    assert sorted(got) == list(range(len(RECORDED)))
    rough = 0
    for i, cfg in enumerate(RECORDED):
        row_tv, row_res = (float.fromhex(x) for x in got[i])
        tv, res = BEFORE[f"atlas/main/K3/{i}/row"][4:]
        if res < 1e-6:  # a smooth zero: Newton-polished, determined
            assert abs(row_tv - tv) <= TOL and row_res < 1e-6, cfg
        else:  # no smooth zero: the same verdict, the digits set by rounding
            rough += 1
            assert row_res > 1e-6 and (row_tv > 1e-3) == (tv > 1e-3), cfg
            assert abs(row_tv - tv) <= 2e-5, cfg
    assert rough == 10  # the rows the page lists as having no smooth zero


@pytest.mark.slow
def test_a_fixed_point_with_no_smooth_zero_is_set_by_rounding():
    # the old code, run here on pi_ref as recorded and moved by +-1e-15 and +-1e-14: its TV spreads over more
    # than the engine's distance from the recorded TV, and than this machine's distance from the
    # machine that recorded it (a CPU with other SIMD widths rounds sums otherwise)
    from _before import available, load

    if not available():
        pytest.skip("this clone does not have the commit of the old code")
    old = load("atlas")
    cfg = ("std", "token_mean", "kl_reward", "all")
    i = atlas.CONFIGS.index(cfg)
    tvs = []
    for eps in (0.0, 1e-15, -1e-15, 1e-14, -1e-14):
        task = old.make_task("main")
        th = task["theta_ref"]
        task["theta_ref"] = np.where(np.isfinite(th) & (th != 0), th + eps, th)
        tvs.append(old.tv_to_optimum(old.fixed_point(cfg, task, 3)[0], task, 0.0))
    recorded = BEFORE[f"atlas/main/K3/{i}/row"][4]
    spread = max(tvs) - min(tvs)
    # the engine (which sums the batch statistics in another order) on the same perturbed starts
    ours = []
    for eps in (0.0, 1e-15, -1e-15, 1e-14, -1e-14):
        task = atlas.make_task("main")
        th = task["theta_ref"]
        task["theta_ref"] = np.where(np.isfinite(th) & (th != 0), th + eps, th)
        ours.append(atlas.measure(cfg, task, 3, atlas.probe(atlas.make_task("main"), 0))["tv"])
    spread_ours = max(ours) - min(ours)
    # the two codes' values lie within what rounding alone moves them by
    assert spread + spread_ours > abs(ours[0] - recorded) > 0
    assert spread > abs(tvs[0] - recorded)


def test_off_policy_lab_equals_the_fixtures():
    class Args:
        c, delta, geo = 1.5, 0.1, 1.1

    rng = np.random.default_rng(0)
    mdp = off_policy.make_task()
    ex = off_policy.Exact(mdp, off_policy.TabularPolicy(rng.normal(size=(mdp.S, mdp.V))))
    taus = [ex.tau_for(t) for t in (0.0, 0.02, 0.05, 0.1, 0.2)]
    assert np.abs(np.array(taus) - BEFORE["off_policy/taus"]).max() <= TOL
    assert np.abs(ex.grad_J - BEFORE["off_policy/grad_J"]).max() <= TOL
    assert np.abs(np.array([ex.var_W(t) for t in taus]) - BEFORE["off_policy/var_W"]).max() <= TOL
    rows = off_policy.measure(ex, Args, taus)
    recorded = {k.split("/")[2] for k in BEFORE.files if k.startswith("off_policy/rows/")}
    assert recorded <= set(rows)
    assert all(any(n in k for n in OFF_POLICY_NEW) for k in set(rows) - recorded)
    for name, rs in rows.items():
        if name not in recorded:
            continue
        old = BEFORE[f"off_policy/rows/{name}"]
        assert np.abs(np.array(rs) - old).max() <= TOL, name
    for d, est in off_policy.one_depth(ex, Args, taus[-1]).items():
        for name, r in est.items():
            assert np.abs(np.array(r) - BEFORE[f"off_policy/depth{d}/{name}"]).max() <= TOL, (d, name)


def _argv(name):
    return [sys.executable, str(ROOT / "examples" / f"{name}.py")]


# started when the session starts (tests/conftest.py): test_output_is_unchanged and
# test_atlas_fixed_points_equal_the_fixtures read them
EXAMPLE_RUNS = [_argv("multi_turn"), _argv("preferences"), _fixed_argv(0), _fixed_argv(1)]
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
# a value the math makes zero (a bias, a TV to the optimum) prints the run's residual: rounding,
# or where an iteration stops; two such values agree when both are below this floor
RESIDUAL = 1e-9


def same_output(got, before):
    """The text between the numbers is identical, and each number agrees to TOL (or both are residuals)."""
    if NUMBER.split(got) != NUMBER.split(before):
        return False
    pairs = zip(map(float, NUMBER.findall(got)), map(float, NUMBER.findall(before)))
    return all(abs(a - b) <= TOL or max(abs(a), abs(b)) <= RESIDUAL for a, b in pairs)


def test_same_output_compares_numbers_not_digits():
    assert same_output("bias 4.4e-16, var 3.087e-02", "bias 4.2e-16, var 3.087e-02")
    assert same_output("TV 1.7e-10 (K = 8)", "TV 4.8e-10 (K = 8)")
    assert not same_output("var 3.088e-02", "var 3.087e-02")
    assert not same_output("TV 2e-9", "TV 1e-9")
    assert not same_output("K = 8: bias", "K = 8; bias")
    assert not same_output("K = 8 2", "K = 8")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["multi_turn", "preferences"])
def test_output_is_unchanged(name):
    out = example_runs.run(_argv(name), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    before = (FIX / f"{name}.txt").read_text()
    got = out.stdout
    if name == "preferences":  # the DPO family's rows come after every recorded line, unchanged
        cut = got.index("\nthe DPO family")
        assert cut > 0 and got[cut:].count("\n") > 1
        got = got[:cut]
    assert same_output(got, before)
