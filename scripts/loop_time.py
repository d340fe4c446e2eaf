"""Time the contributor's loop of two commits side by side: the full test suite and the docs build.

    python scripts/loop_time.py                         # f8ae078 against HEAD, medians of 3
    python scripts/loop_time.py --repeats 1 --only docs
    python scripts/loop_time.py BEFORE AFTER --only tests

Each commit is checked out into its own detached git worktree (under --workdir, reused when it is
already there; `git worktree remove` it when done). Both run with this interpreter (its virtual
environment holds the dependencies, and its folder goes first on PATH, for the pages' `python`)
and with PYTHONPATH set to their worktree, so each imports its own `minirl_lm` (checked before
timing), also in the subprocesses of its tests and pages. The numba cache lives in each
worktree's `__pycache__` folders; it is warmed the same way for both before anything is timed:
one untimed run of `pytest tests/kernels` and of `examples/benchmark.py --quick --sections adv`
(the library's kernels with the tests' signatures, and the examples' own kernels); whatever a
timed run still compiles, it compiles in the first repeat only, which a median of three leaves
out.

The runs alternate between the two commits, and their order flips every repeat (before, after,
after, before, ...), so a change of load hits both alike. The command timed is `python -m pytest
-p no:cacheprovider` (the suite as `python -m pytest` runs it) and `python -m mkdocs build --strict`
into a temporary site folder. It prints the time of every run as it ends, then one line per
loop:

    loop tests: before 198.1 s, after 92.4 s (2.14x); cpu 190.3 s, 120.8 s (1.58x)

The CPU seconds (user and system time of the command and of every process it waited for) are
printed beside the wall seconds: on a loaded machine the wall time of a run depends on the
neighbours, its CPU time much less. The goal is stated on the wall time, on a quiet machine.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout.strip()


def worktree(commit, workdir):
    """A clean checkout of `commit` in workdir/<sha>: (sha, path)."""
    sha = sh(["git", "rev-parse", commit], cwd=ROOT)
    path = workdir / sha[:10]
    if not (path / ".git").exists():
        workdir.mkdir(parents=True, exist_ok=True)
        sh(["git", "worktree", "add", "--detach", "--force", str(path), sha], cwd=ROOT)
    head = sh(["git", "rev-parse", "HEAD"], cwd=path)
    if head != sha:
        raise SystemExit(f"{path}: expected commit {sha}, found {head}")
    return sha, path


def env_for(path):
    # `python` on PATH is this interpreter: the pages' console blocks run `python examples/...`
    path_var = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, PYTHONPATH=str(path), PATH=path_var, NO_MKDOCS_2_WARNING="1")
    env.pop("MINIRL_EXAMPLES_SUBPROCESS", None)
    # the worktree's own package, from a folder that is not the worktree (as an example sees it)
    where = sh(
        [sys.executable, "-c", "import minirl_lm; print(minirl_lm.__file__)"], cwd=tempfile.gettempdir(), env=env
    )
    if not Path(where).resolve().is_relative_to(path.resolve()):
        raise SystemExit(f"{path}: imports minirl_lm from {where}")
    return env


COMMANDS = {
    "tests": lambda site: [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
    "docs": lambda site: [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", site],
}


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(kind, path, env, log):
    """Wall seconds, CPU seconds (of the command and every process it waited for), exit code."""
    with tempfile.TemporaryDirectory(prefix="loop-site-") as site:
        t0, c0 = time.perf_counter(), cpu_of_children()
        proc = subprocess.run(COMMANDS[kind](site), cwd=path, env=env, capture_output=True, text=True)
        seconds, cpu = time.perf_counter() - t0, cpu_of_children() - c0
    log.write_text(proc.stdout + "\n" + proc.stderr)
    return seconds, cpu, proc.returncode


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", nargs="?", default="f8ae078")
    p.add_argument("after", nargs="?", default="HEAD")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", choices=("tests", "docs"))
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "minirl-loop-time")
    p.add_argument("--no-warm", action="store_true", help="skip the untimed warm-up runs")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats: expected at least 1, got {args.repeats}")
    kinds = [args.only] if args.only else ["tests", "docs"]
    sides = {}
    for label, commit in (("before", args.before), ("after", args.after)):
        sha, path = worktree(commit, args.workdir)
        sides[label] = (sha, path, env_for(path))
        print(f"{label}: {sha[:10]} in {path}", flush=True)
    if not args.no_warm:
        for label, (_, path, env) in sides.items():
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/kernels"],
                cwd=path,
                env=env,
                capture_output=True,
            )
            subprocess.run(
                [sys.executable, "examples/benchmark.py", "--quick", "--sections", "adv"],
                cwd=path,
                env=env,
                capture_output=True,
            )
            print(f"{label}: numba cache warmed ({time.perf_counter() - t0:.0f} s, untimed)", flush=True)
    times = {(k, s): [] for k in kinds for s in sides}
    cpus = {(k, s): [] for k in kinds for s in sides}
    failed = []
    for r in range(args.repeats):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for kind in kinds:
            for label in order:
                sha, path, env = sides[label]
                log = args.workdir / f"{kind}-{label}-{r + 1}.log"
                seconds, cpu, code = timed(kind, path, env, log)
                times[(kind, label)].append(seconds)
                cpus[(kind, label)].append(cpu)
                if code:
                    failed.append(f"{kind} {label} repeat {r + 1}: exit {code} (log {log})")
                print(
                    f"  repeat {r + 1} {kind:5s} {label:6s} {seconds:7.1f} s  cpu {cpu:7.1f} s  exit {code}",
                    flush=True,
                )
    for kind in kinds:
        b, a = (statistics.median(times[(kind, s)]) for s in ("before", "after"))
        cb, ca = (statistics.median(cpus[(kind, s)]) for s in ("before", "after"))
        print(
            f"loop {kind}: before {b:.1f} s, after {a:.1f} s ({b / a:.2f}x); "
            f"cpu {cb:.1f} s, {ca:.1f} s ({cb / ca:.2f}x)"
        )
    for line in failed:
        print("FAILED", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
