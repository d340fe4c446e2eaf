"""The exact examples as they were before the shared engine (`minirl_lm.exact`), for comparison.

`load("atlas")` imports `examples/atlas.py` as it was at commit `f8ae078` (read with `git show`,
so a clone with its history is needed): its enumeration in code of its own. Used by the
benchmark's section `exact` (engine against before, side by side) and by
`tests/fixtures/exact/make_before.py` (the fixtures the engine is held to).
"""

import functools
import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COMMIT = "f8ae078"  # the last commit before the engine


def available():
    """True when this checkout has the commit (a shallow clone may not)."""
    cmd = ["git", "-C", HERE, "cat-file", "-e", f"{COMMIT}:examples/atlas.py"]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def load(name):
    """examples/NAME.py as it was at COMMIT, imported as a module (its helpers from examples/)."""
    cmd = ["git", "-C", HERE, "show", f"{COMMIT}:examples/{name}.py"]
    src = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    path = os.path.join(tempfile.mkdtemp(), f"before_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location(f"before_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for k, v in vars(mod).items():  # the library's options became keyword-only since: as then
        if callable(v) and getattr(v, "__module__", "").startswith("minirl_lm") and _keyword_only(v):
            setattr(mod, k, _in_order(v))
    return mod


def _keyword_only(f):
    try:
        return any(p.kind == p.KEYWORD_ONLY for p in inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return False


def _in_order(f):
    """`f` called as the old code calls it: its options by position, in the signature's order."""
    names = list(inspect.signature(f).parameters)

    @functools.wraps(f)
    def call(*args, **kwargs):
        return f(**dict(zip(names, args)), **kwargs)

    return call
