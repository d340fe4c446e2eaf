"""What a committed record carries (the files in docs/records/): the command, where and when it
ran (commit, CPU, cores, platform, Python, NumPy, Numba, the load at the start), and how closely a
fresh run reproduces it. One description for every record, so every page says it the same way.

    stamp()             the machine and versions of this run, as a dict
    describe(m)         one line a page prints above a record
    TIMING, NUMBERS     the reproduction tolerance of a record of timings, of computed numbers
"""

import datetime
import os
import platform
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# How closely a fresh run reproduces a record. Times are measured, never tested (a timed test
# fails on a loaded machine and passes on a fast one); computed numbers are tested.
TIMING = (
    "times are measurements of the machine and load named above, not reproduced by the tests (a timed "
    "test fails on a loaded machine): another CPU or load moves them, the ratios within one run less; a "
    "fresh run prints its own"
)
NUMBERS = (
    "float64 and seeded: the same commit, versions and CPU kind print the same digits, and the tests run "
    "the quick form fresh and compare every number with the record's to one unit of its last printed digit; "
    "another BLAS or CPU, or a change in the order of a sum, moves a full run's figures beyond its printed "
    "digits (record again after such a change)"
)


KEYS = ("date", "commit", "cpu", "cores", "load average", "platform", "python", "numpy", "numba")


def stamp():
    """The machine, the versions and the commit of this run."""
    import numba

    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    try:

        def git(*args):
            return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()

        dirty = git("status", "--porcelain", "minirl_lm", "examples")  # the library or the examples edited
        commit = (git("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if dirty else "")) or None
    except OSError:
        commit = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load average": round(os.getloadavg()[0], 2),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
    }


def describe(m):
    """One line: when, at which commit, on what, with which versions ("not recorded" for a field an
    older record lacks)."""
    m = {k: m.get(k, "not recorded") for k in KEYS}
    return (
        f"recorded {m['date']} at commit {m['commit']}: {m['cpu']}, {m['cores']} cores (load average "
        f"{m['load average']} at the start), {m['platform']}, Python {m['python']}, NumPy {m['numpy']}, "
        f"Numba {m['numba']}"
    )
