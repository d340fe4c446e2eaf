"""examples/logprob.py runs as a program and its output shows what the primitive page says."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    proc = example_runs.run(
        [sys.executable, str(ROOT / "examples" / "logprob.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [[sys.executable, str(ROOT / "examples" / "logprob.py"), *a] for a in ((), ("--seed", "0"))]


def rows(out):
    """[(length, sum, mean)] of the sum-vs-mean table."""
    return [tuple(float(x) for x in m) for m in re.findall(r"^\s+\d+\s+(\d+)\s+(\S+)\s+(\S+)$", out, re.M)]


def test_the_default_batch_is_ranked_differently_by_sum_and_mean():
    out = run()
    (n0, s0, m0), (n1, s1, m1) = rows(out)
    assert (n0, n1) == (5, 3)
    assert s1 > s0 and m0 > m1  # the short response by the sum, the long one by the mean
    assert "ranked first by the sum: response 1; by the mean: response 0 (the two orders differ)" in out
    assert "max |seq_logp - masked sum of token log-probs| = 0.0e+00" in out


def test_another_seed_reports_its_own_order_and_asserts_nothing():
    out = run("--seed", "0")  # with seed 0 the two orders agree: printed, no claim
    (_, s0, m0), (_, s1, m1) = rows(out)
    agree = (s0 > s1) == (m0 > m1)
    assert ("(the two orders agree)" in out) == agree and agree
