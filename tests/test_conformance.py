"""Conformance: the recorded outputs of verl, OpenRLHF and TRL replayed on minirl_lm (NumPy only).

The fixtures in tests/fixtures/conformance/ were written by scripts/conformance.py with the
frameworks installed; this file needs neither torch nor the frameworks. Each (pair, case) agrees
within the pair's tolerance, or the pair is a documented difference that is actually seen. A case
on a mask with holes that minirl_lm refuses is skipped as "needs holes".
"""

import importlib.util
import json
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location(
    "conformance_example", os.path.join(ROOT, "examples", "conformance.py")
)
conf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conf)

META, ARRAYS = conf.load()
PAIRS = META["pairs"]
SUMMARY = re.compile(
    r"^conformance: (\d+) pairs over (\d+) framework functions \(verl (\d+), OpenRLHF (\d+), TRL (\d+)\), "
    r"(\d+) documented differences, 0 mismatches, max rel err (\S+)$"
)


def test_fixtures_record_the_pinned_versions_and_the_stand_ins():
    v = META["versions"]
    assert (v["verl"], v["openrlhf"], v["trl"]) == ("0.9.1", "0.11.2", "1.16.0")
    assert META["dtype"] == "float64"
    assert all(s["why"] for s in META["stand_ins"])
    size = sum(os.path.getsize(os.path.join(conf.FIXTURES, f)) for f in os.listdir(conf.FIXTURES))
    assert size < 2_500_000  # 2.09 MB at 228 pairs: most of it is the zip's per-array overhead


def test_enough_pairs_per_framework():
    count = {fw: sum(p["framework"] == fw for p in PAIRS) for fw in ("verl", "OpenRLHF", "TRL")}
    assert len(PAIRS) >= 130 and min(count.values()) >= 20, count


def test_the_newer_objectives_are_recorded():
    """At least 20 framework functions each for verl and TRL, and the features of 2025-26 among the pairs."""
    fns = {(p["framework"], conf.base_name(p["fw_function"])) for p in PAIRS}
    assert sum(fw == "verl" for fw, _ in fns) >= 20 and sum(fw == "TRL" for fw, _ in fns) >= 20
    names = " ".join(f"{p['framework']}:{p['fw_function']}" for p in PAIRS)
    for feature in [
        "TRL:GRPOTrainer._compute_loss(loss_type='sapo'",
        "TRL:GRPOTrainer._compute_loss(loss_type='vespo'",
        "TRL:GRPOTrainer._compute_loss(loss_type='luspo'",
        "TRL:GRPOTrainer.get_high_entropy_mask",
        "TRL:GRPOTrainer entropy_coef update",
        "TRL:DPOTrainer._compute_loss(loss_type='hinge'",
        "f_divergence_type='js_divergence'",
        "TRL:GKDTrainer.generalized_jsd_loss",
        "TRL:DistillationTrainer _chunked_divergence_loss",
        "TRL:RewardTrainer.compute_loss(margin, center_rewards_coefficient=0.01)",
        "verl:compute_policy_loss_sapo",
        "verl:compute_policy_loss_dppo_tv",
        "verl:compute_policy_loss_geo_mean",
        "verl:compute_policy_loss_clip_cov",
        "verl:compute_policy_loss_kl_cov",
        "verl:compute_grpo_passk_outcome_advantage",
        "verl:compute_optimal_token_baseline_advantage",
        "verl:compute_gdpo_outcome_advantage",
        "OpenRLHF:PairWiseLoss(margin)",
    ]:
        assert feature in names, feature
    assert {"verl_dppo_clamp", "trl_vespo_clamp", "trl_vespo_lambda", "trl_entropy_f32"} <= {
        p["diff"] for p in PAIRS
    }


@pytest.mark.parametrize("entry", PAIRS, ids=[p["id"] for p in PAIRS])
def test_pair_replays(entry):
    results = []
    for case in entry["cases"]:
        status, ev, eg, why = conf.replay_case(entry, case, ARRAYS)
        if status == "holes":
            continue  # needs holes: see test_hole_cases
        results.append((case["name"], status, ev, eg, why))
    if not results:
        pytest.skip(f"{entry['id']}: every case needs holes")
    if entry["diff"] is None:
        bad = [r for r in results if r[1] != "ok"]
        assert not bad, f"{entry['fw_function']} vs {entry['minirl']}: {bad} (tol {entry['tol']})"
    else:
        assert entry["diff"] in conf.DIFFERENCES
        assert any(r[1] != "ok" for r in results), f"{entry['id']}: documented difference not seen"


HOLES = [(p, c) for p in PAIRS for c in p["cases"] if c["kind"] == "holes"]


@pytest.mark.parametrize("entry,case", HOLES, ids=[f"{p['id']}-{c['name']}" for p, c in HOLES])
def test_hole_cases(entry, case):
    status, ev, eg, why = conf.replay_case(entry, case, ARRAYS)
    if status == "holes":
        # only functions over prefixes (the critic's values and returns) refuse holes, by design:
        # their error names the function that takes an interleaved mask
        assert "right padding" in why and "use minirl_lm." in why, why
        pytest.skip(f"a function over prefixes keeps right padding: {why[:60]}")
    if entry["diff"] is None:
        assert status == "ok", (entry["fw_function"], ev, eg, why)


def test_every_documented_difference_has_a_pair_and_a_file_line():
    used = {p["diff"] for p in PAIRS if p["diff"]}
    assert used == set(conf.DIFFERENCES)
    for label, why, where in conf.DIFFERENCES.values():
        assert label and why and re.search(r"\.py:\d+", where)


def test_extracted_pairs_cite_a_line():
    ext = [p for p in PAIRS if p["extracted"]]
    assert len(ext) >= 8
    assert all(re.search(r"\.py:\d+$", p["where"]) for p in PAIRS)


def test_a_wrong_output_is_caught():
    """The replay can fail: scale one recorded framework gradient by 1 + 1e-6."""
    entry = next(p for p in PAIRS if p["replay"] == "dual_clip" and p["diff"] is None)
    case = entry["cases"][0]
    key = f"{entry['id']}|{case['name']}|out|grad"
    arrays = {k: ARRAYS[k] for k in ARRAYS.files if k.startswith(entry["id"])}
    assert conf.replay_case(entry, case, arrays)[0] == "ok"
    arrays[key] = arrays[key] * (1 + 1e-6)
    assert conf.replay_case(entry, case, arrays)[0] == "bad"


def test_rel_err():
    assert conf.rel_err(np.zeros(3), np.zeros(3)) == 0.0
    assert conf.rel_err(np.ones(3), np.zeros(3)) == float("inf")
    assert conf.rel_err(np.array([1.0, 2.0]), np.array([1.0, 2.5])) == pytest.approx(0.2)
    assert conf.rel_err(np.ones(2), np.ones(3)) == float("inf")


def test_summary_line_has_the_stated_form():
    rows = conf.replay(META, ARRAYS)
    line = conf.summary(rows)
    m = SUMMARY.match(line)
    assert m, line
    n, f, a, b, c, d = (int(x) for x in m.groups()[:6])
    assert n == len(PAIRS) and f == a + b + c and d == sum(1 for p in PAIRS if p["diff"])
    assert float(m.group(7)) < 1e-5


def test_index_is_json_of_the_npz():
    with open(os.path.join(conf.FIXTURES, "index.json")) as fh:
        meta = json.load(fh)
    names = set(ARRAYS.files)
    for p in meta["pairs"]:
        for c in p["cases"]:
            for k in c["inputs"]:
                assert f"{p['id']}|{c['name']}|in|{k}" in names
            for k in c["outputs"]:
                assert f"{p['id']}|{c['name']}|out|{k}" in names


def test_example_prints_the_table_and_ends_with_the_summary():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "conformance.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.rstrip("\n").split("\n")
    assert SUMMARY.match(lines[-1]), lines[-1]
    assert lines[1].startswith("framework | framework function | minirl_lm function | configuration")
    assert sum(1 for x in lines if x.startswith(("verl | ", "OpenRLHF | ", "TRL | "))) == len(PAIRS)
