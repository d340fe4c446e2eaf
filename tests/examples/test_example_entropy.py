"""examples/entropy.py as a program: the identity lines, one line per knob in the page's form, the
sampled lines, the claims; the --quick run. The identity and every knob are tested as library
functions in tests/pg/test_entropy_knobs.py."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
NUM = r"([-+0-9.e]+)"
KNOBS = (
    "none",
    "clip_higher",
    "bonus_loss",
    "bonus_reward",
    "adaptive",
    "clip_cov",
    "kl_cov",
    "entropy_mask",
    "kl_ref",
)


def run(*args, env=None):
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "entropy.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=env,
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
# (the full run with MINIRL_CLAIMS=1 in its environment: the suite's longest command, first)
EXAMPLE_RUNS_FIRST = [
    (
        [sys.executable, str(ROOT / "examples" / "entropy.py")],
        {"MINIRL_CLAIMS": "1"},
    ),
]
EXAMPLE_RUNS = [[sys.executable, str(ROOT / "examples" / "entropy.py"), "--quick"]]


@pytest.fixture(scope="module")
def out():
    proc = run("--quick")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_identity_lines_and_linear_error(out):
    pat = re.compile(rf"^entropy identity: eta {NUM}: predicted {NUM}, exact {NUM}, rel err {NUM}$")
    rows = [tuple(float(x) for x in m.groups()) for m in map(pat.match, out.splitlines()) if m]
    assert [r[0] for r in rows] == [1.0, 1e-1, 1e-2, 1e-3, 1e-4]
    rel = [r[3] for r in rows]
    for r1, r2 in zip(rel[1:], rel[2:]):
        assert 9.0 < r1 / r2 < 11.0  # linear in eta
    assert all(r[1] < 0 and r[2] < 0 for r in rows)


def test_one_line_per_knob_in_the_page_form(out):
    pat = re.compile(
        rf"^entropy knob (\w+)\s*: H {NUM} -> {NUM}, J {NUM} -> {NUM} after (\d+) steps; "
        rf"last 10 steps: H {NUM}, J {NUM}; KL to ref {NUM}$"
    )
    got = {m.group(1): m.groups()[1:] for m in map(pat.match, out.splitlines()) if m}
    assert tuple(got) == KNOBS
    assert got["clip_higher"] == got["none"] == got["kl_cov"]  # rho = 1 on the first epoch
    assert float(got["bonus_loss"][1]) > float(got["none"][1])  # the bonus keeps entropy
    samp = re.findall(
        rf"^sampled knob (\w+)\s*: H {NUM} \+- {NUM} \({NUM}\.\.{NUM}\), J {NUM} \+- {NUM}; "
        rf"H - none's {NUM} \+- {NUM}, above in (\d+)/2(: [a-z ,]+)?$",
        out,
        re.M,
    )
    assert tuple(s[0] for s in samp) == KNOBS + ("unclipped", "kl_cov_k1")
    assert all(s[-1] for s in samp[1:]) and not samp[0][-1]  # a verdict on every row but none's


def test_settings_and_toy_checks(out):
    knobs = re.findall(r"^knob (\w+)\s*: (.+); framework: (.+)$", out, re.M)
    assert tuple(k[0] for k in knobs) == KNOBS + ("unclipped", "kl_cov_k1")
    assert "ratio 0.0002 (m = 1 token), band 1 < c_t < 5" in dict((k[0], k[1]) for k in knobs)["clip_cov"]
    assert "k 0.1, no clip" in dict((k[0], k[1]) for k in knobs)["kl_cov"]
    for k in ("bonus_reward", "kl_ref"):
        assert re.search(rf"^toy {k}: groups whose advantage the reward term changes: at most {NUM} ", out, re.M)
        assert re.search(rf"^chain {k}: groups whose advantage the reward term changes: at most {NUM} ", out, re.M)


def test_full_run_claims_hold():
    env = dict(__import__("os").environ, MINIRL_CLAIMS="1")
    proc = run(env=env)
    assert proc.returncode == 0, proc.stderr
    assert "within a tenth of its starting total variation to its closed-form optimum" in proc.stderr
    assert "KL-Cov at verl's k keeps the entropy of its unclipped base within the spread" in proc.stderr
    assert re.search(r"^sampled kl_cov - unclipped: H \S+ \+- \S+ over 30 seeds", proc.stdout, re.M)


def test_bad_arguments_are_usage_errors():
    for bad in (["--seeds", "1"], ["--steps", "0"], ["--toy-steps", "x"]):
        proc = run(*bad)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
