"""Fails when the docs build logged anything but the lines a clean build prints.

`mkdocs build --strict` fails on a WARNING, but an INFO line can be as real: a link to an anchor
that is not on the page, a relative link MkDocs could not resolve, a plugin that cannot do its
job. The build writes its log lines to `site/.build-log` (scripts/mkdocs_hooks.py); this script
reads that file (or a captured console log: the same lines) and lists every INFO, WARNING or
ERROR line that is not one of the few a clean build prints (ALLOWED).

    mkdocs build --strict && python scripts/check_build_log.py            # site/.build-log
    python scripts/check_build_log.py build.txt                            # a captured log

Exit status 0: only allowed lines; 1: other lines (printed); 2: no log to read.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "site" / ".build-log"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LINE = re.compile(r"^(?:\x1b\[[0-9;]*m)?(" + "|".join(LEVELS) + r")\b\s*(?:\x1b\[[0-9;]*m)?\s*-\s+(.*)$")
# what a clean build logs: MkDocs' own progress, and the hook's count of the example runs
ALLOWED = (
    r"Cleaning site directory",
    r"Building documentation to directory: .*",
    r"Documentation built in [0-9.]+ seconds",
    r"examples: .*",
    r"examples, the slowest: .*",
)


def records(text):
    """[(level, message)] of a log: a line that starts with a level opens a record, and the lines
    that follow it without one (a message of several lines) belong to it."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2).rstrip()))
        elif out and line.strip():
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line.rstrip())
    return out


def unexpected(text, allowed=ALLOWED):
    """The records of `text` at INFO or above that no pattern of `allowed` matches in full."""
    return [
        (level, msg)
        for level, msg in records(text)
        if level != "DEBUG" and not any(re.fullmatch(a, msg, re.S) for a in allowed)
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", nargs="?", default=str(DEFAULT), help="the build's log (default: site/.build-log)")
    args = p.parse_args(argv)
    path = Path(args.log)
    if not path.is_file():
        p.error(f"no build log at {path}: run `mkdocs build --strict` first")
    bad = unexpected(path.read_text(errors="replace"))
    for level, msg in bad:
        print(f"{level:<8}-  {msg}")
    if bad:
        print(f"check_build_log: {len(bad)} line(s) a clean build does not print, in {path}", file=sys.stderr)
        return 1
    print(f"check_build_log: {path} holds only the lines a clean build prints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
