"""examples/preferences.py runs as a program and its output shows the facts its page claims."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test runs the example in a subprocess

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "preferences.py"
LINE = re.compile(
    r"^preference (\w+) *: TV to pi\* (\S+), KL\(pi\*\|\|pi\) (\S+), "
    r"mean length (\d+\.\d\d) \(pi\* (\d+\.\d\d)\)$"
)


def run(*args):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def out():
    return run()


def rows(out):
    return {m.group(1): [float(v) for v in m.groups()[1:]] for m in map(LINE.match, out.splitlines()) if m}


def test_one_line_per_loss_in_the_stated_form(out):
    lines = [l for l in out.splitlines() if l.startswith("preference ")]
    assert len(lines) == 7 and all(LINE.match(l) for l in lines)
    assert all(l.index(":") == len("preference dpo        ") for l in lines)  # aligned names
    assert list(rows(out)) == ["dpo", "cdpo", "ipo_sum", "ipo_avg", "simpo", "orpo", "kto"]


def test_dpo_lands_on_pi_star_and_the_others_do_not(out):
    r = rows(out)
    tv, kl, m, m_star = r["dpo"]
    assert tv < 1e-8 and kl < 1e-15 and m == m_star
    for name, (tv, kl, _, m_star) in r.items():
        assert m_star == r["dpo"][3]  # one pi* for every loss
        if name != "dpo":
            assert tv > 1e-2 and kl > 1e-2


def test_length_claims_of_the_page(out):
    r = rows(out)
    assert r["ipo_avg"][2] > r["ipo_sum"][2]  # averaging lengthens
    assert r["simpo"][2] > r["simpo"][3]  # SimPO: longer than pi*
    assert r["orpo"][2] < r["orpo"][3]  # ORPO: shorter than pi*
    assert "kto: no interior optimum" in out


def test_online_beats_offline_which_overfits(out):
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("online DPO")) + 2
    table = []
    for l in lines[start:]:
        try:
            table.append([float(v) for v in l.split()])
        except ValueError:
            break
    steps, online, offline = zip(*table)
    assert steps[0] == 0 and online[0] == offline[0]  # both start at pi_ref
    assert online[-1] < 0.2 * online[0]  # online gets close to pi*
    assert min(offline) < offline[0] and offline[-1] > 1.2 * min(offline)  # overfits
    assert online[-1] < min(offline)


def test_quick_run_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "lengths.svg"
    out = run("--quick", "--plot", str(path))
    assert len(rows(out)) == 7 and rows(out)["dpo"][0] < 1e-8
    assert path.read_text().lstrip().startswith("<?xml")


def test_help_exits_zero():
    assert "--plot" in run("--help")
