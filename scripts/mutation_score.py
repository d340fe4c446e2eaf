"""The mutation score of the estimator files, per file, from mutmut's records.

    NUMBA_THREADING_LAYER=workqueue mutmut run --max-children 2   # fills mutants/
    python scripts/mutation_score.py    # one line per file, then the total

(`[tool.mutmut]` in pyproject.toml says which files and tests.) The threading layer matters:
mutmut forks one process per mutant, and after numba's GNU OpenMP layer has run in the parent,
a forked child that calls a parallel kernel kills itself with SIGTERM. Such mutants come back
with exit code -15 and no verdict; this script counts them and says so.

For every mutated file mutmut keeps `mutants/minirl_lm/<file>.py.meta`, a JSON object whose
`exit_code_by_key` maps each mutant to the exit code of its test run (mutmut 3.x). The codes are
read as mutmut reads them: 1 or 3 killed, 0 survived, 24, 36, 152, 255 or -24 a timeout (counted
as killed, as mutmut's own score does), anything else (a run interrupted, or none yet) no verdict.

A survivor listed in tests/mutation_equivalents.md (its name in backticks, under the heading
`## <file>.py` of its file) is equivalent: no
input can tell it from the original, and the file says why. The score is

    killed / (mutants - equivalent - no verdict)

so an equivalent mutant neither helps nor hurts, and a mutant without a verdict is reported, never
counted. Survivors that are not listed are printed by name: each is a missing test. The script
exits 1 when such a survivor exists or when a listed equivalent is no longer a survivor (the list
must follow the code), and 0 otherwise.

Standard library only.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KILLED = {1, 3}
SURVIVED = {0}
TIMEOUT = {24, 36, 152, 255, -24}


def load(meta_dir):
    """{file name: {mutant: exit code or None}} from mutmut's .meta files."""
    out = {}
    for path in sorted(Path(meta_dir).glob("*.py.meta")):
        codes = json.loads(path.read_text())["exit_code_by_key"]
        out[path.name[: -len(".meta")]] = codes
    return out


def equivalents_from_text(text):
    """The mutants listed (in backticks) in the text of an equivalents file, as
    ``(file, short name)`` pairs; a ``## <file>.py`` heading says which file the rows below
    belong to."""
    names, fname = set(), None
    for line in text.splitlines():
        heading = re.match(r"##\s+(\S+\.py)\s*$", line)
        if heading:
            fname = heading.group(1)
            continue
        for short in re.findall(r"`(x_[A-Za-z0-9_]+__mutmut_\d+)`", line):
            names.add((fname, short))
        # "`x_f__mutmut_59`, `_61`": a bare suffix continues the previous name.
        for base, rest in re.findall(r"`(x_[A-Za-z0-9_]+__mutmut_)\d+`((?:,\s*`_\d+`)+)", line):
            names.update((fname, base + n) for n in re.findall(r"`_(\d+)`", rest))
    return names


def equivalents(path):
    """The mutant names listed in the equivalents file at ``path`` (none if it does not exist)."""
    path = Path(path)
    return equivalents_from_text(path.read_text()) if path.is_file() else set()


def score(records, equiv):
    """Per-file counts and the list of unexplained survivors."""
    rows, unexplained, stale = [], [], set(equiv)
    for fname, codes in records.items():
        n = {"mutants": 0, "killed": 0, "survived": 0, "equivalent": 0, "no verdict": 0}
        for key, code in codes.items():
            short = (fname, key.rsplit(".", 1)[-1])
            n["mutants"] += 1
            if code in KILLED or code in TIMEOUT:
                n["killed"] += 1
            elif code in SURVIVED and short in equiv:
                n["equivalent"] += 1
                stale.discard(short)
            elif code in SURVIVED:
                n["survived"] += 1
                unexplained.append(key)
            else:
                n["no verdict"] += 1
                stale.discard(short)
        rows.append((fname, n))
    return rows, unexplained, sorted(stale)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--meta", default=str(ROOT / "mutants" / "minirl_lm"),
                        help="folder of mutmut's .meta files (default: mutants/minirl_lm)")
    parser.add_argument("--equivalents", default=str(ROOT / "tests" / "mutation_equivalents.md"))
    args = parser.parse_args(argv)
    if not Path(args.meta).is_dir():
        parser.error(f"--meta: expected a folder of mutmut .meta files, got {args.meta!r} "
                     "(run `mutmut run` first)")
    records = load(args.meta)
    if not records:
        parser.error(f"--meta: no *.py.meta file in {args.meta!r}")
    rows, unexplained, stale = score(records, equivalents(args.equivalents))
    total = {k: 0 for k in rows[0][1]}
    print(f"{'file':<16}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv.':>8}{'no verdict':>11}{'score':>9}")
    for fname, n in rows + [("total", total)]:
        if fname != "total":
            for k in total:
                total[k] += n[k]
        judged = n["mutants"] - n["equivalent"] - n["no verdict"]
        pct = f"{100.0 * n['killed'] / judged:.1f} %" if judged else "-"
        print(f"{fname:<16}{n['mutants']:>8}{n['killed']:>8}{n['survived']:>9}{n['equivalent']:>8}"
              f"{n['no verdict']:>11}{pct:>9}")
    sigterm = sum(code == -15 for codes in records.values() for code in codes.values())
    if sigterm:
        print(f"{sigterm} mutants ended by SIGTERM (exit -15): rerun them with "
              "NUMBA_THREADING_LAYER=workqueue")
    for key in unexplained:
        print(f"SURVIVED (not listed as equivalent): {key}")
    for key in stale:
        print(f"STALE equivalent (no longer a survivor): {key[0]} {key[1]}")
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
