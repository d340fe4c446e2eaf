"""The bad-input battery and the declarations agree: every argument a public function declares
(`@boundary`) has its row in the battery (so its bad inputs are tried), and every argument the
battery tries is declared (so no check hides in a body)."""

import importlib
import inspect
import pkgutil
import re

import minirl_lm
from battery import TABLE, fname


def _declared():
    """Every declared public function and method of the package: {name: function}."""
    out = {}
    for info in pkgutil.walk_packages(minirl_lm.__path__, "minirl_lm."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            members = [obj] + (
                [m for n, m in vars(obj).items() if not n.startswith("_")] if inspect.isclass(obj) else []
            )
            for f in members:
                if hasattr(f, "kinds") and hasattr(f, "core"):
                    out[f"{mod.__name__}.{f.__qualname__}"] = f
    return out


def test_every_declared_argument_is_tried_and_every_tried_one_declared():
    rows = {}
    for func, args in TABLE:
        rows.setdefault(func, set()).update(a for a, (kind, _) in args.items() if kind is not None)
    gaps = []
    for func, tried in rows.items():
        target = getattr(func, "__wrapped__", func)  # a method's row calls it on an instance
        if hasattr(target, "kinds"):
            declared = set(target.kinds)
            if declared - tried:
                gaps.append(f"{fname(func)}: declared, never tried: {sorted(declared - tried)}")
            if tried - declared:
                gaps.append(f"{fname(func)}: tried, not declared: {sorted(tried - declared)}")
    assert not gaps, "\n".join(gaps)


def test_every_declared_function_is_in_the_battery():
    listed = {getattr(func, "__wrapped__", func) for func, _ in TABLE} | {func for func, _ in TABLE}
    missing = [name for name, f in _declared().items() if f not in listed]
    assert not missing, "declared but not in the battery: " + ", ".join(sorted(missing))


def _args_section(doc):
    """The names the `Args:` section of a Google-style docstring documents."""
    args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
    args = re.split(r"\n\S", args, maxsplit=1)[0]  # up to the next section
    names = set(re.findall(r"^    (\w+)(?: \(|:| and )", args, re.M))
    for group in re.findall(r"^    ((?:\w+, )+\w+):", args, re.M):  # "a, b: ..." names both
        names |= set(group.split(", "))
    return names


def test_every_declared_argument_is_documented():
    """The docstring's `Args:` names every declared argument (the API page renders it), or the
    docstring says whose arguments it shares ("Arguments as `f`", "as those of `f`"), and `f`'s
    `Args:` names them."""
    declared = _declared()
    gaps = []
    for name, f in declared.items():
        doc = inspect.getdoc(f) or ""
        known = _args_section(doc)
        for ref in re.findall(r"(?:[Aa]rguments?|[Aa]rgs|options)[^.]*?\s(?:as|of)\s(?:those\sof\s)?`(\w+)`", doc):
            anywhere = [g for n, g in declared.items() if n.endswith("." + ref)]
            here = [g for g in anywhere if g.__module__ == f.__module__]
            found = here or anywhere  # a name of the same module first; elsewhere only if one has it
            if len(found) > 1:
                gaps.append(f"{name}: the reference `{ref}` is ambiguous ({len(found)} declared functions)")
            elif found:
                known |= _args_section(inspect.getdoc(found[0]) or "")
        missing = [a for a in f.kinds if a not in known]
        if missing:
            gaps.append(f"{name}: Args does not name {missing}")
    assert not gaps, "\n".join(gaps)
