"""Every committed record (docs/records/) names its command, its commit, its machine and the
versions it ran with, and says how closely a fresh run reproduces it; the network's record is
reproduced: a fresh quick run prints the record's quick lines, every number to one unit of its
last printed digit."""

import json
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import _record  # noqa: E402

RECORDS = ROOT / "docs" / "records"
TIMINGS = ["benchmark.json", "big_vocab.json", "exact.json", "network_bench.json"]
QUICK = [sys.executable, str(ROOT / "examples" / "network.py"), "--quick"]
EXAMPLE_RUNS = [QUICK]
NUMBER = re.compile(r"-?\d+\.\d+")


def test_every_record_is_one_this_file_knows():
    kept = {p.name for p in RECORDS.iterdir()}
    assert kept == set(TIMINGS) | {"network.txt", "network_curves.json"}, kept


@pytest.mark.parametrize("name", TIMINGS)
def test_a_timing_record_names_its_run(name):
    rec = json.loads((RECORDS / name).read_text())
    assert rec["command"].startswith("python ")
    missing = [k for k in _record.KEYS if k != "load average" and rec["machine"].get(k) in (None, "")]
    assert not missing, f"{name}: the machine lacks {missing}"
    assert re.fullmatch(r"[0-9a-f]{7,40}( with uncommitted changes)?", rec["machine"]["commit"])
    assert rec["reproduces"] == _record.TIMING


def _network():
    lines = (RECORDS / "network.txt").read_text().splitlines()
    quick = lines.index("$ python examples/network.py --quick  (this quick run:)")
    return lines, lines[quick + 1 :]


def test_the_network_record_names_its_run():
    lines, _ = _network()
    assert lines[0] == "$ python examples/network.py"
    m = re.fullmatch(r"recorded (.+) UTC at commit (\S+)(?: with uncommitted changes)?: (.+)", lines[1])
    assert m and re.fullmatch(r"[0-9a-f]{7,40}", m.group(2)), lines[1]
    assert "not recorded" not in lines[1] and all(k in lines[1] for k in ("Python", "NumPy", "Numba", "cores"))
    assert lines[2] == f"reproduces: {_record.NUMBERS}"
    curves = json.loads((RECORDS / "network_curves.json").read_text())  # written by the same run
    seeds = int(re.search(r"^mean over (\d+) seeds:$", "\n".join(lines), re.M).group(1))
    assert all(len(runs) == seeds for runs in curves.values())


def _numbers(lines):
    """Every number of the lines but the CPU time's, with its last printed digit's unit."""
    out = []
    for line in lines:
        if not line.startswith("CPU time"):
            out += [(float(x), 10.0 ** -len(x.split(".")[1])) for x in NUMBER.findall(line)]
    return out


def test_the_numbers_are_compared_to_their_last_digit():
    assert _numbers(["a 0.25 and -1.5", "CPU time 3.0 s"]) == [(0.25, 0.01), (-1.5, 0.1)]


@pytest.mark.slow
def test_a_fresh_quick_run_reproduces_the_record():
    proc = example_runs.run(QUICK, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    fresh, (_, kept) = out[out.index("this quick run:") + 1 :], _network()
    a, b = _numbers(fresh), _numbers(kept)
    assert len(a) == len(b) and len(a) > 10, (fresh, kept)
    off = [(x, y) for (x, u), (y, _) in zip(a, b) if abs(x - y) > u * (1 + 1e-9)]
    assert not off, f"fresh vs recorded, beyond one unit of the last digit: {off}"
