"""examples/network.py runs as a program and prints its line forms; the pipeline's pieces
(the task, the flawed demonstrations, the verifier) do what the page says."""

import json
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "network.py"
sys.path.insert(0, str(ROOT / "examples"))
import network  # noqa: E402

ESTIMATORS = ("grpo", "rloo", "ppo", "online_dpo")
FORMS = [
    r"^  network sft: held-out accuracy \d\.\d{3} \(demonstrations \d\.\d{3} correct\)$",
    r"^  network rl ppo value head: v\(s_1\) against pi\(y\*\|x\) on held-out problems: correlation -?\d\.\d{2}, "
    r"means -?\d\.\d{3} and \d\.\d{3}$",
    r"^  network rl clip fraction \(mean over the logged steps\): grpo \d\.\d{3}, rloo \d\.\d{3}, ppo \d\.\d{3}$",
] + [
    rf"^  network rl {est}: held-out accuracy \d\.\d{{3}} after 5 steps, "
    r"KL to sft -?\d\.\d{3}, entropy \d+\.\d{2}$"
    for est in ESTIMATORS
]
# started when the session starts (tests/conftest.py); the test below then reads its result
QUICK = [sys.executable, str(SCRIPT), "--quick"]
EXAMPLE_RUNS = [QUICK]
UNSEEN = r"^  network rl unseen: accuracy \d\.\d{2} -> \d\.\d{2} on problems RL never sampled$"


@pytest.mark.slow
def test_quick_run_prints_every_form():
    proc = example_runs.run(QUICK, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for form in FORMS:
        assert sum(bool(re.match(form, line)) for line in lines) == 1, (form, proc.stdout)
    assert sum(bool(re.match(UNSEEN, line)) for line in lines) == len(ESTIMATORS)


def test_task_answers_and_verifier():
    a, b = np.array([7, 99, 12]), np.array([35, 99, 34])
    assert network.prompts(a, b)[0].tolist() == [0, 7, network.PLUS, 3, 5, network.EQ]
    assert network.answers(a, b).tolist() == [[2, 4, 0], [8, 9, 1], [6, 4, 0]]  # units first
    assert network.answers(a, b, carry=False).tolist() == [[2, 3, 0], [8, 8, 0], [6, 4, 0]]
    assert network.verifier(a, b, network.answers(a, b, carry=False)).tolist() == [0.0, 0.0, 1.0]


def test_split_is_seeded_and_disjoint():
    (a, b), (ha, hb) = network.split(np.random.default_rng(0), 1000)
    (a2, _), _ = network.split(np.random.default_rng(0), 1000)
    assert np.array_equal(a, a2) and a.size == 9000 and ha.size == 1000
    assert not set(zip(a.tolist(), b.tolist())) & set(zip(ha.tolist(), hb.tolist()))


def test_the_record_holds_every_seed_the_mean_and_the_claims():
    """docs/records/network.txt (the full run the page prints with --show): three seeds of the
    three forms, their mean, and the run's claims, each of which held when it was recorded."""
    text = (ROOT / network.RECORD).read_text()
    assert text.startswith("$ python examples/network.py")
    lines = text.splitlines()
    for est in ESTIMATORS:
        form = rf"^  network rl {est}: held-out accuracy \d\.\d{{3}} after 100 steps, KL to sft"
        assert sum(bool(re.match(form, line)) for line in lines) == 4  # 3 seeds and the mean
        assert any(line.startswith(f"{est} ends above the SFT model") for line in lines)
    assert "mean over 3 seeds:" in lines
    curves = json.loads((ROOT / network.CURVES).read_text())
    assert set(curves) == set(ESTIMATORS) and all(len(runs) == 3 for runs in curves.values())
