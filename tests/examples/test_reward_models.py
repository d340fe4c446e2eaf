"""examples/reward_models.py runs as a program and its output shows the facts its page claims."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

pytestmark = pytest.mark.slow  # every test runs the example in a subprocess

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "reward_models.py"
SD = r"\+-\d+\.\d+"  # the spread over data sets after every mean
MODEL = re.compile(
    rf"^reward model (.+?) +n= *(\d+): gold reward of pi\* (\d\.\d{{3}}){SD} at KL (\d+\.\d\d){SD}, "
    rf"hedge (\d\.\d\d){SD}, max error off a constant (\d+\.\d{{3}}){SD} \((\d+\.\d{{3}}){SD} off the hedge\)$"
)
OVER = re.compile(
    r"^over-optimization BT tabular n= *(\d+): peak gold (\S+)\+-\S+ at KL \S+, at beta 0.02 (\S+)\+-\S+ "
    r"at KL \S+; turns down in (\d+) of (\d+) data sets, a response above the right answer on a solvable "
    r"prompt in (\d+) \(the hedge in (\d+)\); the figure's \(the first\): peak (\S+) at KL \S+, then (\S+) at"
)
PRM = re.compile(
    r"^PRM (exact|n= *\d+) *: error on pi_ref's steps (\d\.\d{3}); progress: J\(pi\*\) - J (\S+), "
    r"calls (\d\.\d{3}); direct: J\(pi\*\) - J (\S+), calls (\d\.\d{3})$"
)
IDENT = re.compile(r"tabular (\S+), linear (\d\.\d{3}) \((\d\.\d{3}) off the hedge\)$")


def run(*args):
    proc = example_runs.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [[sys.executable, str(SCRIPT), *a] for a in (("--quick",), ("--quick", "--seed", "5"))]


@pytest.fixture(scope="module")
def out():
    return run("--quick")


def test_identifiability_line(out):
    first = out.splitlines()[0]
    assert first.startswith("identifiability (exact expected BT loss")
    tab, lin, lin_num = (float(v) for v in IDENT.search(first).groups())
    assert tab < 1e-8 and lin > 0.1 and lin_num < lin / 2


def test_one_line_per_model_and_data_size(out):
    rows = [MODEL.match(l) for l in out.splitlines() if l.startswith("reward model ")]
    assert rows and all(rows)
    names = ["BT tabular", "BT linear", "BT margin tabular", "outcome (bce) tabular"]
    assert [(m.group(1), int(m.group(2))) for m in rows] == [(k, n) for n in (10, 100, 1000) for k in names]
    gold = float(re.search(r"gold reward of pi\* (\d\.\d{3})", out.split("reward model")[0]).group(1))
    tab = {int(m.group(2)): float(m.group(3)) for m in rows if m.group(1) == "BT tabular"}
    assert tab[1000] > tab[10] and max(tab.values()) <= 0.5  # the ceiling: two prompts unsolvable
    assert 0 < gold <= 0.5


def test_overoptimization_lines(out):
    rows = [OVER.match(l).groups() for l in out.splitlines() if l.startswith("over-optimization BT")]
    assert [int(r[0]) for r in rows] == [10, 100, 1000]
    for _, peak, end, down, draws, wrong, hedge, fig_peak, fig_end in rows:
        assert float(end) <= float(peak) and float(fig_end) <= float(fig_peak)
        assert int(down) <= int(wrong) and int(hedge) <= int(wrong) <= int(draws) == 10


def test_margin_and_constant_are_explained(out):
    assert "the true gold gap: oracle information" in out
    assert "BT sees only r_c - r_r, where the constant feature cancels" in out.splitlines()[1]
    assert re.search(r"weights on \(.*\): 0\.000, ", out)


def test_prm_lines(out):
    rows = [PRM.match(l) for l in out.splitlines() if l.startswith("PRM ")]
    assert len(rows) == 4 and all(rows)
    exact = rows[0].groups()
    assert exact[0] == "exact" and float(exact[1]) == 0.0 and abs(float(exact[2])) < 1e-12
    assert all(float(m.group(5)) > float(m.group(3)) for m in rows)  # direct further than progress
    assert "max |pi - pi*| over the policy states" in out.splitlines()[-1]


def test_seed_changes_the_data_not_the_exact_lines(out):
    other = run("--quick", "--seed", "5")
    assert other.splitlines()[0] == out.splitlines()[0]
    assert [l for l in other.splitlines() if l.startswith("reward model ")] != [
        l for l in out.splitlines() if l.startswith("reward model ")
    ]


def test_bad_argument_is_a_usage_error():
    proc = example_runs.run(
        [sys.executable, str(SCRIPT), "--beta", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "--beta" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.docs_extra
def test_plot_writes_a_figure(tmp_path):
    path = tmp_path / "reward_models.svg"
    run("--quick", "--plot", str(path))
    assert path.read_text().lstrip().startswith("<?xml") or "<svg" in path.read_text()
