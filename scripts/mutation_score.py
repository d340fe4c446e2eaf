"""The mutation score of the estimator files, per file, from mutmut's records.

    NUMBA_THREADING_LAYER=workqueue mutmut run --max-children 2   # fills mutants/
    python scripts/mutation_score.py    # one line per file, then the total

    python scripts/mutation_score.py --own minirl_lm/pg/shaping.py ...   # the layout's measure

(`[tool.mutmut]` in pyproject.toml says which files and tests.) The threading layer matters:
mutmut forks one process per mutant, and after numba's GNU OpenMP layer has run in the parent,
a forked child that calls a parallel kernel kills itself with SIGTERM. Such mutants come back
with exit code -15 and no verdict; this script counts them and says so.

For every mutated file mutmut keeps `mutants/minirl_lm/<part>/<file>.py.meta`, a JSON object
whose `exit_code_by_key` maps each mutant to the exit code of its test run (mutmut 3.x). The codes
are read as mutmut reads them: 1 or 3 killed, 0 survived, 33 "no tests" (no selected test
reaches the mutant: counted as survived, where it would otherwise raise the score), 24, 36, 152,
255 or -24 a timeout (counted as killed, as mutmut's own score does), anything else (a run
interrupted, or none yet) no verdict. A file is named by its path in the package, `pg/kl.py`.

A survivor listed in tests/mutation_equivalents.md (its name in backticks, under the heading
`## <part>/<file>.py` of its file) is equivalent: no input can tell it from the original, and the
file says why. The score is

    killed / (mutants - equivalent - no verdict)

so an equivalent mutant neither helps nor hurts, and a mutant without a verdict is reported, never
counted. Survivors that are not listed are printed by name: each is a missing test. The script
exits 1 when such a survivor exists or when a listed equivalent is no longer a survivor (the list
must follow the code), and 0 otherwise.

`--own FILE ...` measures the layout rather than the suite: each file is mutated alone, in a
scratch copy of the project, and its mutants get only the tests beside it, its own
`tests/<part>/test_<module>.py` and the test files of the library modules that import it
(`--own-tests FILE` prints that selection and runs nothing; `--keep` keeps the scratch copy, where
`mutmut show NAME` prints a survivor's diff). mutmut still runs, of those, the
tests that call the mutated function. A mutant that only another module's tests kill counts as
a survivor here: its test belongs in the module's own file. `--alone` gives the mutants the
file's own test file only (for `boundary.py`, which every module imports).

Standard library only.
"""

import argparse
import ast
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KILLED = {1, 3}
SURVIVED = {0, 33}  # 33: mutmut found no test that reaches the mutant, which no test then kills
TIMEOUT = {24, 36, 152, 255, -24}


def load(meta_dir):
    """{file path in the package (`pg/kl.py`): {mutant: exit code or None}} from mutmut's .meta files."""
    out = {}
    meta_dir = Path(meta_dir)
    for path in sorted(meta_dir.rglob("*.py.meta")):
        codes = json.loads(path.read_text())["exit_code_by_key"]
        out[path.relative_to(meta_dir).as_posix()[: -len(".meta")]] = codes
    return out


def equivalents_from_text(text):
    """The mutants listed (in backticks) in the text of an equivalents file, as
    ``(file, short name)`` pairs; a ``## <part>/<file>.py`` heading says which file the rows below
    belong to."""
    names, fname = set(), None
    for line in text.splitlines():
        heading = re.match(r"##\s+`?(\S+?\.py)`?\s*$", line)
        if heading:
            fname = heading.group(1)
            continue
        # a function `x_f__mutmut_1`, or a method `xǁClassǁname__mutmut_1`
        for short in re.findall(r"`(x[_ǁ][A-Za-z0-9_ǁ]+__mutmut_\d+)`", line):
            names.add((fname, short))
        # "`x_f__mutmut_59`, `_61`": a bare suffix continues the previous name.
        for base, rest in re.findall(r"`(x[_ǁ][A-Za-z0-9_ǁ]+__mutmut_)\d+`((?:,\s*`_\d+`)+)", line):
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


# ---- --own: each file against the tests beside it ----------------------------------------------
def _module(path):
    """The dotted module name of a library file given by its path from the root."""
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def own_test_file(path):
    """`tests/<part>/test_<module>.py` of `minirl_lm/<part>/<module>.py` (`tests/test_tasks.py` for
    `minirl_lm/tasks.py`), relative to the root."""
    rel = Path(path).relative_to("minirl_lm")
    folder = Path("tests", *rel.parts[:-1])
    stem = rel.parent.name if rel.name == "__init__.py" else rel.stem
    return (folder / f"test_{stem}.py").as_posix()


def importers(path, root=ROOT):
    """The library files (paths from the root) that import the module at `path`."""
    target = _module(path)
    out = []
    for f in sorted((Path(root) / "minirl_lm").rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel == Path(path).as_posix():
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if target in names:
                out.append(rel)
                break
    return out


def own_tests(path, root=ROOT, alone=False):
    """The test files of the layout's measure for `path`: its own, then its importers' (not with
    `alone`), those that exist. A part's `__init__.py` (the kernels' checked entries) owns every
    test file of its part."""
    files = [own_test_file(path)] + ([] if alone else [own_test_file(f) for f in importers(path, root)])
    if Path(path).name == "__init__.py":
        folder = Path(own_test_file(path)).parent
        files += sorted(p.relative_to(root).as_posix() for p in (Path(root) / folder).glob("test_*.py"))
    return [f for i, f in enumerate(files) if f not in files[:i] and (Path(root) / f).is_file()]


def _toml_list(values):
    return "[\n" + "".join(f"    {json.dumps(v)},\n" for v in values) + "]"


def with_selection(pyproject, only, tests):
    """The text of pyproject.toml with `[tool.mutmut]`'s only_mutate and test selection replaced."""
    for key, values in (("only_mutate", only), ("pytest_add_cli_args_test_selection", tests)):
        pyproject, n = re.subn(
            rf"^{key}\s*=\s*\[.*?\]",
            lambda _, key=key, values=values: f"{key} = {_toml_list(values)}",
            pyproject,
            count=1,
            flags=re.M | re.S,
        )
        if n != 1:
            raise ValueError(f"pyproject.toml: expected one `{key} = [...]` in [tool.mutmut], found {n}")
    return pyproject


def _jitted(decorator):
    """Whether a decorator is Numba's (`@njit`, `@njit(cache=True)`, `@numba.jit(...)`)."""
    f = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name in ("njit", "jit", "vectorize", "guvectorize")


def undecorated(text):
    """The source `text` with each decorated top-level function's decorators applied after its
    `def` (`f = boundary(...)(f)`) instead of above it: the same module, but mutmut (3.x skips a
    decorated function whole) then mutates the bodies of the declared public functions too. A
    method of a top-level class whose decorators are all calls (`@boundary(...)`) is treated the
    same way inside its class (`step = ...(step)`); `@property` and `@staticmethod` stay, and so
    does a Numba kernel (`@njit`): mutmut skips it, as Numba cannot compile its trampoline.

    The `def` line is written on one line with `# pragma: no mutate`: the decorator reads the
    defaults from the signature of mutmut's trampoline (the original one) and passes every
    argument, so a mutated default would never be used here, though in the library it would.

    A decorator that calls a function of the file (kl.py's `where=[_support("theta", ...)]`, or
    a constant built with one, batch.py's `**PROMPTS`, written out in its place) is applied anew
    at each call: applied once, at import, it would run before any mutant is active, and the
    mutants of that function could never be told apart."""
    tree = ast.parse(text)
    local = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    built = {  # constants built by calling a function of the file: `PROMPTS = dict(P=_per_prompt(...))`
        n.targets[0].id: n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        if local
        & {c.func.id for c in ast.walk(n.value) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    }

    class Inline(ast.NodeTransformer):
        def visit_Name(self, name):  # such a constant in a declaration is built anew with it
            return built.get(name.id, name) if isinstance(name.ctx, ast.Load) else name

    lines = text.splitlines(keepends=True)
    methods = [(m, " " * m.col_offset) for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
    nodes = sorted([(n, "") for n in tree.body] + methods, key=lambda pair: pair[0].lineno)
    for node, indent in reversed(nodes):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.decorator_list:
            continue
        if indent and not all(isinstance(d, ast.Call) for d in node.decorator_list):
            continue  # a method's @property or @staticmethod stays
        if any(_jitted(d) for d in node.decorator_list):
            continue  # Numba cannot compile mutmut's trampoline: a kernel stays whole (tested against its twin)
        decorators = [
            Inline().visit(ast.parse(ast.get_source_segment(text, d), mode="eval")) for d in node.decorator_list
        ]
        applied = "f"
        for d in reversed(decorators):
            applied = f"({ast.unparse(d)})({applied})"
        calls = {
            c.func.id
            for d in decorators
            for c in ast.walk(d)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        }
        if calls & local - {node.name}:
            declare = f"lambda: {applied}"  # the declared function, built when called
            wrapper = "__import__('functools').update_wrapper(lambda *a, **k: declare()(*a, **k), declare())"
            applied = f"(lambda declare: {wrapper})({declare})"
        lines.insert(node.end_lineno, f"{indent}{node.name} = (lambda f: {applied})({node.name})\n")
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        head = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        if node.body[0].lineno > node.lineno:  # not `def f(): return x`
            lines[node.lineno - 1 : node.body[0].lineno - 1] = [
                f"{indent}{head} {node.name}({ast.unparse(node.args)}){returns}:  # pragma: no mutate\n"
            ]
        del lines[node.decorator_list[0].lineno - 1 : node.lineno - 1]
    return "".join(lines)


# The grader's bug-zoo test executes a library file's text with the zoo's edits: under mutmut the
# text of the mutated file is the trampolines, where the edits do nothing, and the test fails before
# any mutant runs. It is deselected when the mutated file is one the zoo edits (`zoo_files`).
ZOO_RELOAD = (
    'pytest_add_cli_args = ["-m", "not slow"',
    'pytest_add_cli_args = ["-m", "not slow", "--deselect", '
    '"tests/test_grade.py::test_every_bug_of_the_zoo_is_flagged_and_named"',
)


# mutmut forks each mutant's run from the process that ran the clean tests: a cache filled there
# (`functools.lru_cache` on a mutated function) would answer with the original's results, and
# those mutants could never be told apart. Each run starts with the library's caches empty.
FRESH_CACHES = """

@pytest.fixture(autouse=True, scope="session")
def _mutmut_fresh_caches():
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("minirl_lm"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
"""


def zoo_files(root=ROOT):
    """The library files the bug zoo edits: the fourth argument of each `Mutant(...)` in
    scripts/bugzoo.py, read from its syntax tree."""
    tree = ast.parse((Path(root) / "scripts" / "bugzoo.py").read_text())
    return {
        c.args[3].value
        for c in ast.walk(tree)
        if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "Mutant" and len(c.args) > 3
        if isinstance(c.args[3], ast.Constant)
    }


def address_space_cap(gib):
    """A function for `preexec_fn` that caps each process of the run (mutmut and every mutant it
    forks) at `gib` GiB of address space: a mutant that allocates without bound (a loop bound
    mutated) then fails its tests with a MemoryError, killed, where it would exhaust the machine."""
    limit = int(gib * 2**30)
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_own(path, max_children=2, memory=8.0, alone=False):
    """Mutate `path` alone in a scratch copy of the project, its mutants given only its own tests,
    each process capped at `memory` GiB; returns (the folder of the .meta files, the scratch
    folder, mutmut's exit code), or (None, None, None) with no test file."""
    tests = own_tests(path, alone=alone)
    if not tests:  # an empty selection would make mutmut run every test
        return None, None, None
    work = Path(tempfile.mkdtemp(prefix="mutscore-"))
    for part in ("minirl_lm", "tests", "examples", "scripts", "docs"):  # tests load examples, scripts, docs
        shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "README.md", work / "README.md")  # the grader's tests load it as a bad FILE
    conftest = work / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text() + FRESH_CACHES)
    (work / path).write_text(undecorated((ROOT / path).read_text()))  # its declared functions mutated too
    conf = with_selection((ROOT / "pyproject.toml").read_text(), [path], tests)
    (work / "pyproject.toml").write_text(conf.replace(*ZOO_RELOAD, 1) if path in zoo_files() else conf)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(NUMBA_THREADING_LAYER="workqueue", NUMBA_CACHE_DIR=str(work / ".numba"))
    print(f"{path}: mutants get {', '.join(tests) or 'no test file'}", flush=True)
    run = subprocess.run(
        ["mutmut", "run", "--max-children", str(max_children)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        check=False,
        preexec_fn=address_space_cap(memory),
    )
    if run.returncode:  # e.g. a selected test fails before any mutant: every mutant without a verdict
        print(f"{path}: mutmut run exited with {run.returncode}", flush=True)
    return work / "mutants" / "minirl_lm", work, run.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--meta",
        default=str(ROOT / "mutants" / "minirl_lm"),
        help="folder of mutmut's .meta files (default: mutants/minirl_lm)",
    )
    parser.add_argument("--equivalents", default=str(ROOT / "tests" / "mutation_equivalents.md"))
    parser.add_argument(
        "--own",
        nargs="+",
        metavar="FILE",
        help="mutate each library FILE alone against only its own and its importers' test files",
    )
    parser.add_argument("--own-tests", metavar="FILE", help="print the test files --own gives FILE, run nothing")
    parser.add_argument("--max-children", type=int, default=2, help="mutmut's parallel workers (--own)")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="--own with the file's own test file only, not its importers' (boundary.py: every file imports it)",
    )
    parser.add_argument(
        "--memory",
        type=float,
        default=8.0,
        metavar="GIB",
        help="address space of each process of an --own run, in GiB (default 8; a mutant beyond it is killed)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep --own's scratch copy and print its path (for `mutmut show NAME`)"
    )
    args = parser.parse_args(argv)
    for f in (args.own or []) + ([args.own_tests] if args.own_tests else []):
        if not (f.startswith("minirl_lm/") and f.endswith(".py") and (ROOT / f).is_file()):
            parser.error(f"--own: expected a library file such as minirl_lm/pg/kl.py, got {f!r}")
    if not 0.5 <= args.memory <= 1024:
        parser.error(f"--memory: expected GiB between 0.5 and 1024, got {args.memory:g}")
    if args.own_tests:
        print("\n".join(own_tests(args.own_tests, alone=args.alone)))
        return 0
    if args.own:
        status = 0
        for f in args.own:
            meta, work, code = run_own(f, args.max_children, args.memory, args.alone)
            if meta is None:
                print(f"{f}: no test file of its own ({own_test_file(f)}) nor of an importer: 0 killed")
                status = 1
                continue
            try:
                status |= report(meta, args.equivalents, parser, only_recorded=True) | (code != 0)
            finally:
                if args.keep:
                    print(f"{f}: scratch copy kept in {work} (there: mutmut show NAME)")
                else:
                    shutil.rmtree(work, ignore_errors=True)
        return status
    return report(args.meta, args.equivalents, parser)


def report(meta, equivalents_path, parser, only_recorded=False):
    """Print the table of the .meta files in `meta`; 1 if a survivor is unexplained or a listed one stale."""
    if not Path(meta).is_dir():
        parser.error(
            f"--meta: expected a folder of mutmut .meta files, got {str(meta)!r} (run `mutmut run` first)"
        )
    records = load(meta)
    if not records:
        parser.error(f"--meta: no *.py.meta file in {str(meta)!r}")
    equiv = equivalents(equivalents_path)
    if only_recorded:  # a run on some files: only their rows are checked
        equiv = {(f, k) for f, k in equiv if f in records}
    rows, unexplained, stale = score(records, equiv)
    total = {k: 0 for k in rows[0][1]}
    print(f"{'file':<24}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv.':>8}{'no verdict':>11}{'score':>9}")
    for fname, n in rows + [("total", total)]:
        if fname != "total":
            for k in total:
                total[k] += n[k]
        judged = n["mutants"] - n["equivalent"] - n["no verdict"]
        pct = f"{100.0 * n['killed'] / judged:.1f} %" if judged else "-"
        print(
            f"{fname:<24}{n['mutants']:>8}{n['killed']:>8}{n['survived']:>9}{n['equivalent']:>8}"
            f"{n['no verdict']:>11}{pct:>9}"
        )
    sigterm = sum(code == -15 for codes in records.values() for code in codes.values())
    if sigterm:
        print(f"{sigterm} mutants ended by SIGTERM (exit -15): rerun them with NUMBA_THREADING_LAYER=workqueue")
    for key in unexplained:
        print(f"SURVIVED (not listed as equivalent): {key}")
    for key in stale:
        print(f"STALE equivalent (no longer a survivor): {key[0]} {key[1]}")
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
