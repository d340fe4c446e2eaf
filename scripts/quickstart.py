"""The README's Quickstart, run as a newcomer types it: each command in a fresh clone, a fresh venv.

README.md's `## Quickstart` section holds the commands a new user types, one ```bash block each.
CI runs them from here, so what the README says and what CI proves cannot drift apart:

    python scripts/quickstart.py --list    # the commands, one per line
    python scripts/quickstart.py           # each in its own clean clone of HEAD, in a shell of its own

A run clones the repository's committed HEAD into a new temporary folder (no venv, no Numba cache,
no build left over), runs the command there with `bash -c`, as typed into a shell, in an environment that has no
virtual environment active, and prints its wall time and last line. It exits 1 when a command
fails, and 2 when the Quickstart section is missing or holds no command block.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = re.compile(r"^## Quickstart\s*$(.*?)(?=^## |\Z)", re.M | re.S)
BLOCK = re.compile(r"^```(?:bash|sh|console)\s*\n(.*?)^```\s*$", re.M | re.S)


def commands(readme_text):
    """The Quickstart's commands: each bash block's lines joined (a block is one command; a line
    ending in a backslash continues), comments and blank lines dropped. Raises ValueError when the
    section is missing or holds no command."""
    section = SECTION.search(readme_text)
    if section is None:
        raise ValueError("README.md: expected a '## Quickstart' section, found none")
    found = []
    for body in BLOCK.findall(section.group(1)):
        lines = [ln.strip() for ln in re.sub(r"\s*\\\n\s*", " ", body).splitlines()]
        lines = [ln.removeprefix("$ ") for ln in lines if ln and not ln.startswith("#")]
        if lines:
            found.append(" && ".join(lines))
    if not found:
        raise ValueError("README.md: the Quickstart section holds no ```bash command block")
    return found


def clean_env():
    """This process's environment without an active virtual environment (CI runs inside one)."""
    env = dict(os.environ)
    venv = env.pop("VIRTUAL_ENV", None)
    if venv:
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(venv))
    for k in ("PYTHONHOME", "PYTHONPATH", "NUMBA_CACHE_DIR"):
        env.pop(k, None)
    return env


def run(cmd, index):
    with tempfile.TemporaryDirectory(prefix=f"quickstart-{index}-") as tmp:
        clone = Path(tmp, "minirl_lm")
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        print(f"[quickstart {index}] in a fresh clone ({clone}):\n$ {cmd}", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["bash", "-c", cmd],
            cwd=clone,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        seconds = time.perf_counter() - t0
    out = proc.stdout.rstrip().splitlines()
    tail = out[-15:] if proc.returncode else out[-3:]
    print("\n".join("    " + ln for ln in tail))
    print(f"[quickstart {index}] exit {proc.returncode} in {seconds:.0f} s", flush=True)
    return proc.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the commands and exit")
    parser.add_argument(
        "--readme", default=str(ROOT / "README.md"), help="the README to read (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        cmds = commands(Path(args.readme).read_text())
    except (OSError, ValueError) as e:
        parser.error(str(e))
    if args.list:
        print("\n".join(cmds))
        return 0
    failed = [i for i, cmd in enumerate(cmds, 1) if run(cmd, i)]
    if failed:
        print(f"quickstart: command {', '.join(map(str, failed))} of {len(cmds)} failed", file=sys.stderr)
        return 1
    print(f"quickstart: all {len(cmds)} commands passed, each in a fresh clone and venv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
