"""examples/best_of_n.py as a program: the best-of-N lines in the page's form for N = 1..32, the
frontier, proxy, identity and training lines, the claims; the --quick run. The library functions
are tested in tests/select/."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
NUM = r"([-+0-9.e]+)"


def run(*args, env=None):
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "best_of_n.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=env,
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    ([sys.executable, str(ROOT / "examples" / "best_of_n.py"), "--quick"], {"MINIRL_CLAIMS": "1"}),
    [sys.executable, str(ROOT / "examples" / "best_of_n.py"), "--no-train"],
    [sys.executable, str(ROOT / "examples" / "best_of_n.py"), "--K", "1"],
]


@pytest.fixture(scope="module")
def out():
    env = dict(__import__("os").environ, MINIRL_CLAIMS="1")
    proc = run("--quick", env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_best_of_n_lines_in_the_page_form(out):
    pat = re.compile(
        rf"^best-of-N N=\s*(\d+): reward {NUM}, win rate {NUM}, "
        rf"KL exact {NUM}, bound {NUM}, pi\* at this KL {NUM}$"
    )
    rows = [m.groups() for m in map(pat.match, out.stdout.splitlines()) if m]
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8, 16, 32]
    assert all(len(x.split(".")[1]) == 4 for r in rows for x in r[1:])  # four decimals
    vals = [[float(x) for x in r[1:]] for r in rows]
    assert vals[0][1] == 0.5 and vals[0][2] == 0.0  # N = 1: the base policy
    assert all(kl <= bound for _, _, kl, bound, _ in vals)
    assert all(star >= reward for reward, _, _, _, star in vals)


def test_the_other_parts_print(out):
    text = out.stdout
    assert len(re.findall(r"^frontier N=", text, re.M)) == 6
    assert len(re.findall(r"^proxy N=", text, re.M)) == 9
    assert re.search(r"^identity K=8: engine vs closed form", text, re.M)
    table = text[text.index("train:") :].splitlines()[2:6]
    assert len(table) == 4 and all(len(line.split()) == 7 for line in table)
    for sentence in (
        "the exact KL never exceeds log N - (N - 1)/N",
        "at equal KL RL earns less gold reward than best-of-N at every N >= 2",
        "RFT with the norm group is REINFORCE without baseline, bit for bit",
        "RFT's success leads REINFORCE's beyond the spread over seeds at every recorded step",
        "the exact engine's ratio of the RFT and REINFORCE steps is eq. (rft_finite_k)'s",
    ):
        assert sentence in out.stderr


def test_weights_ceiling_and_spread_lines(out):
    text = out.stdout
    m = re.search(
        rf"p = {NUM}\), .*\(1 - \(1-p\)\^K\)/p = {NUM} times REINFORCE's "
        rf"\(engine: {NUM}\); .* = {NUM} times GRPO's",
        text,
    )
    p, rft, engine, dapo = map(float, m.groups())
    assert abs(rft - (1 - (1 - p) ** 8) / p) < 0.01 and rft == engine  # eq. (rft_finite_k), not 1/p
    assert abs(dapo - 1 / (1 - p**8 - (1 - p) ** 8)) < 0.01
    m = re.search(rf"KL ceiling .* = {NUM} \(-log P per prompt: {NUM}, {NUM}, {NUM}, {NUM}\)", text)
    ceil, *per = map(float, m.groups())
    assert abs(ceil - sum(per) / 4) < 1e-4
    rows = re.findall(r"^\s+\d+\s+(.*)$", text[text.index("train:") :], re.M)
    cells = [c for row in rows for c in row.split()]
    assert cells and all(re.fullmatch(rf"{NUM}\+-{NUM}", c) for c in cells)  # mean +- std per cell
    verdicts = re.findall(r"^train: step \d+, success beyond mean \+- std .*: (.*)$", text, re.M)
    assert len(verdicts) == 2 and all(len(v.split(", ")) == 3 for v in verdicts)
    assert re.search(r"^train: ceiling 0\.5000 ", text, re.M)


def test_no_train_and_usage_errors():
    proc = run("--no-train")
    assert proc.returncode == 0 and "train:" not in proc.stdout and "best-of-N N= 32" in proc.stdout
    bad = run("--K", "1")
    assert bad.returncode == 2 and "--K" in bad.stderr.splitlines()[-1]
