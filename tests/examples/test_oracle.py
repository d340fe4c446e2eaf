"""examples/oracle.py: the hand-written stand-in passes, every bug-zoo mutant is flagged."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bugzoo  # noqa: E402


def _run(*args):
    return example_runs.run(
        [sys.executable, "examples/oracle.py", *args], cwd=ROOT, capture_output=True, text=True
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [[sys.executable, "examples/oracle.py"]]


def test_the_stand_in_passes_and_every_mutant_is_flagged():
    r = _run()
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    head = re.fullmatch(
        r"oracle my_clipped_loss against clipped_surrogate: flagged 0 of (\d+) cases, max rel err (\S+)", lines[0]
    )
    assert head and int(head.group(1)) >= 12 and float(head.group(2)) < 1e-12
    mutants = [
        re.fullmatch(r"mutant (\S+) against (\S+): flagged (\d+) of (\d+) cases \(first: (.+)\)", x)
        for x in lines[1:-1]
    ]
    assert all(mutants) and [m.group(1) for m in mutants] == [m.name for m in bugzoo.MUTANTS]
    assert all(int(m.group(3)) >= 1 for m in mutants)
    z = len(bugzoo.MUTANTS)
    assert lines[-1] == f"oracle: {z} of {z} bug-zoo mutants flagged, 0 of {z} unmutated stand-ins flagged"


def test_a_bad_argument_is_a_usage_error():
    r = _run("--nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "usage:" in r.stderr
