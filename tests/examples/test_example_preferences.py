"""examples/preferences.py runs as a program and its output shows the facts its page claims."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

pytestmark = pytest.mark.slow  # every test runs the example in a subprocess

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "preferences.py"
LINE = re.compile(
    r"^preference (\w+) *: TV to pi\* (\S+), KL\(pi\*\|\|pi\) (\S+), "
    r"mean length (\d+\.\d\d) \(pi\* (\d+\.\d\d)\)$"
)


def run(*args):
    proc = example_runs.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
QUICK_PLOT = [sys.executable, str(SCRIPT), "--quick", "--plot", "{out}/lengths.svg"]
EXAMPLE_RUNS = [[sys.executable, str(SCRIPT)], QUICK_PLOT]


@pytest.fixture(scope="module")
def out():
    return run()


def rows(out):
    return {m.group(1): [float(v) for v in m.groups()[1:]] for m in map(LINE.match, out.splitlines()) if m}


FAMILY = ["hinge", "robust", "robust_flip", "exo_pair", "discopop", "bco_pair", "nca_pair", "sppo_hard"]
FAMILY += ["apo_zero", "apo_down", "fdpo_fkl", "fdpo_js", "fdpo_alpha", "tr_dpo"]


def test_one_line_per_loss_in_the_stated_form(out):
    lines = [l for l in out.splitlines() if l.startswith("preference ")]
    assert len(lines) == 7 + len(FAMILY) and all(LINE.match(l) for l in lines)
    assert all(l.index(":") == len("preference dpo        ") for l in lines)  # aligned names
    assert list(rows(out)) == ["dpo", "cdpo", "ipo_sum", "ipo_avg", "simpo", "orpo", "kto", *FAMILY]


def test_dpo_lands_on_pi_star_and_the_others_do_not(out):
    r = rows(out)
    tv, kl, m, m_star = r["dpo"]
    assert tv < 1e-8 and kl < 1e-15 and m == m_star
    for name, (tv, kl, _, m_star) in r.items():
        assert m_star == r["dpo"][3]  # one pi* for every loss
        if name not in (
            "dpo",
            "robust_flip",
        ):  # robust DPO on flipped labels: pi* (tests/examples/test_preferences_family.py)
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


@pytest.mark.docs_extra
def test_quick_run_and_plot():
    r = example_runs.run(QUICK_PLOT, cwd=ROOT, check=True)
    assert len(rows(r.stdout)) == 7 + len(FAMILY) and rows(r.stdout)["dpo"][0] < 1e-8
    assert r.text("lengths.svg").lstrip().startswith("<?xml")


def test_help_exits_zero():
    assert "--plot" in run("--help")


def _example():
    import importlib.util

    sys.path.insert(0, str(ROOT / "examples"))
    spec = importlib.util.spec_from_file_location("preferences_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_takeaway_is_three_lines_and_a_reversed_claim_stops_the_run():
    """The page's claims on synthetic figures: they hold, the takeaway has three lines; with
    SimPO shorter than pi* the run stops (ClaimFailed), so the build would fail."""
    ex = _example()
    res = {
        "dpo": (1e-10, 1e-19, 3.19, 3.19),
        "cdpo": (0.26, 0.2, 2.7, 3.19),
        "ipo_sum": (0.47, 0.8, 2.4, 3.19),
        "ipo_avg": (0.32, 0.4, 2.5, 3.19),
        "simpo": (0.7, 3.5, 3.9, 3.19),
        "orpo": (0.5, 1.1, 1.8, 3.19),
        "kto": (0.45, 11.0, 3.1, 3.19),
    }
    trace = [(0, 1.0, 1.0), (10, 0.5, 0.6), (100, 0.1, 0.5), (300, 0.08, 0.8)]
    lines = ex.conclusions(res, trace, 1e-17)
    assert len(lines) == 3 and lines[0].startswith("only DPO lands on pi*")
    res["simpo"] = (0.7, 3.5, 3.0, 3.19)
    with pytest.raises(AssertionError, match="claim no longer holds: SimPO lands on longer"):
        ex.conclusions(res, trace, 1e-17)
