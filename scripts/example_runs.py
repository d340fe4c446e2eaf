"""Run the examples once per build or test session, each in a process forked from a warm one.

The docs pages and tests/examples/ run the example programs (`python examples/NAME.py ARGS`) and
read what they print. Two costs dominate such a run besides its own work: starting Python and
importing NumPy, Numba, the package and matplotlib (one to two seconds a process), and running
the same command again for another page or test. This module removes both:

- `run(cmd)` runs a command and keeps its result for the rest of the process, keyed by the
  command, its working directory, its environment and a hash of every source it can read
  (`minirl_lm/`, `examples/`, `scripts/`, `docs/records/`, `tests/fixtures/`): a command asked
  for twice runs once, and an edited source means a new key, never a stale output.
- A `python examples/NAME.py ...` command runs in a child forked from a server process that has
  imported NumPy, Numba, the package and matplotlib already (`python scripts/example_runs.py
  --serve`, one per thread that runs examples; it forks a child per command). The
  child is set up as `python NAME.py ...` would be: `sys.argv`, `sys.path[0]` (the script's
  folder) and the interpreter's own path after it, the working directory, the environment, fresh
  standard streams on the files that collect them (stdout buffered, stderr line-buffered), the
  script run as `__main__`, its exit status from `sys.exit`, an uncaught exception printed as
  a traceback with status 1, and its `atexit` functions run at the end. Anything else (`-c`, an
  interpreter flag, an environment that sets `NUMBA_*` or `PYTHON*` differently from the server's)
  runs as a plain subprocess.
- `prefetch(cmds)` starts commands on a pool of threads (one per core), so that independent
  examples run side by side while the caller does other work; `run` then waits for the result.
- `use_disk_cache(folder)` (the docs build turns it on: scripts/mkdocs_hooks.py) also keeps each
  successful result on disk, one file per command, working directory, environment and
  interpreter, with the digest of every file the run read: a later process replays it while those
  files are unchanged. A forked child records what it read when it ends: the file of every module
  it has loaded from the repository (the script among them), every file it opened and every
  folder it listed there (an audit hook, installed in the server before its imports); a run that
  started a process, or was not forked, depends on every source (SOURCES). A run that wrote a
  file (but into `{out}`), or failed, is not kept. The test suite does not turn it on.

A command may write files: `{out}` in it is replaced by a fresh temporary folder, and the
result's `files` maps each file the run left there to its bytes (`result.text("fig.svg")`).

    import example_runs
    r = example_runs.run("python examples/k_sweep.py --plot {out}/k_sweep.svg")
    r.stdout, r.text("k_sweep.svg")
"""

import atexit
import base64
import hashlib
import io
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("minirl_lm", "examples", "scripts", "docs/records", "tests/fixtures")
# modules the server imports once; every forked child finds them loaded. matplotlib is the docs
# extra's: preloaded where it is installed (the test extra alone does not have it), else each
# example that plots reports its absence itself, as `python examples/X.py --plot F` does.
PRELOAD = ["numpy", "numba", "minirl_lm", "minirl_lm.tasks", "minirl_lm.oracle"]
# environment variables read when those modules are imported: a run that changes one needs its
# own interpreter
IMPORT_TIME_ENV = ("NUMBA_", "PYTHON", "MPL", "OMP_", "MKL_", "OPENBLAS_", "KMP_", "LD_")


@dataclass
class Result:
    """What `subprocess.run(..., capture_output=True, text=True)` returns, and the files written."""

    args: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    files: dict = field(default_factory=dict)

    def text(self, name):
        return self.files[name].decode()

    def check_returncode(self):
        if self.returncode:
            raise subprocess.CalledProcessError(self.returncode, self.args, self.stdout, self.stderr)


# ---------------------------------------------------------------- the cache key


_stamp = {"stat": None, "digest": None}
_stamp_lock = threading.Lock()


def _source_files():
    for part in SOURCES:
        base = ROOT / part
        if base.is_file():
            yield base
        elif base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".nbi", ".nbc", ".pyc"):
                    yield p


def sources_digest():
    """sha256 of the path and bytes of every source a run can read (rehashed when one changes)."""
    with _stamp_lock:
        files = list(_source_files())
        stat = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
        if stat != _stamp["stat"]:
            h = hashlib.sha256()
            for p in files:
                h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
            _stamp.update(stat=stat, digest=h.hexdigest())
        return _stamp["digest"]


_file_digests = {}  # path -> (mtime_ns, size, sha256): each file hashed once while it is unchanged
_file_digests_lock = threading.Lock()
# under the repository but never an input: the environments, caches and outputs
_NOT_SOURCE = {"site", "mutants", "build", "dist", "node_modules", "__pycache__"}


def _installed():
    """The folders of the interpreter and its packages: never an input a run's key follows."""
    import site

    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, site.getusersitepackages()}
    return tuple(os.path.join(d, "") for d in found if d) + ("/proc/", "/sys/", "/dev/")


_INSTALLED = _installed()


def _input_path(path):
    """The name a read of `path` is recorded under: a source of the repository relative to it; a
    file outside it that the child itself read (a script or a data file in a test's temporary
    folder) by its absolute path; None for what is never an input (the interpreter and its
    packages, /proc, the run's own scratch folders, hidden folders such as .venv, .git and .cache,
    `__pycache__`, and in the repository the build outputs)."""
    full = os.path.abspath(path)
    p = Path(full)
    if p.is_relative_to(ROOT):
        parts = p.relative_to(ROOT).parts
        if not parts or not all(_source_name(q) for q in parts):
            return None
        return None if p.is_relative_to(sys.prefix) else str(p.relative_to(ROOT))
    if not _reads["child"] or full.startswith(_INSTALLED + _reads["scratch"]):
        return None
    return full if all(_source_name(q) for q in p.parts[1:]) else None


def file_digest(rel):
    """sha256 of the file `rel` (relative to the repository, or absolute); None when there is none."""
    p = ROOT / rel
    try:
        st = p.stat()
    except OSError:
        return None
    if not p.is_file():
        return None
    with _file_digests_lock:
        known = _file_digests.get(rel)
    if known and known[:2] == (st.st_mtime_ns, st.st_size):
        return known[2]
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    with _file_digests_lock:
        _file_digests[rel] = (st.st_mtime_ns, st.st_size, digest)
    return digest


def _source_name(name):
    return not (name.startswith(".") or name in _NOT_SOURCE or name.endswith(".egg-info"))


def listing_digest(rel):
    """sha256 of the sorted names in the folder `rel` (the sources among them: a cache or a build
    folder appearing beside them changes nothing); None when there is none."""
    try:
        names = sorted(n for n in os.listdir(ROOT / rel) if _source_name(n))
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode()).hexdigest()


# ---------------------------------------------------------------- what a forked child reads

# the server's own reads while it imports (the child inherits them), then the child's
_reads = {"files": set(), "dirs": set(), "wrote": False, "spawned": False, "child": False, "scratch": ()}
_SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.forkpty"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(event, args):
    """Records the files opened and the folders listed (_input_path), and whether a process was
    started or a file opened for writing (in the repository, or by the child anywhere but its
    scratch folders and the interpreter's)."""
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return
        rel = _input_path(os.fsdecode(path))
        if rel is None:
            return
        if any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITE_FLAGS):
            _reads["wrote"] = True  # a side effect a replay would not have
        else:
            _reads["files"].add(rel)
    elif event in ("os.listdir", "os.scandir"):
        path = args[0]
        if isinstance(path, int):
            return
        rel = _input_path(os.path.join(os.fsdecode(path if path is not None else "."), "x"))
        if rel is not None:
            _reads["dirs"].add(os.path.dirname(rel) or ".")
    elif event in _SPAWN_EVENTS:
        _reads["spawned"] = True


def _record_reads(script, path):
    """Writes what the child read (the files of its modules, the script, the files it opened,
    the folders it listed; _input_path says which count) to `path`, as JSON."""
    files = set(_reads["files"])
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        rel = _input_path(f) if isinstance(f, str) else None
        if rel is not None:
            files.add(rel)
    rel = _input_path(script)
    if rel is not None:
        files.add(rel)
    record = dict(
        files=sorted(files), dirs=sorted(_reads["dirs"]), wrote=_reads["wrote"], spawned=_reads["spawned"]
    )
    with open(path, "w") as f:
        json.dump(record, f)


# ---------------------------------------------------------------- the forked child


_ENCODING = "utf-8"


def _exit_code(e):
    """The status `python script.py` exits with after `SystemExit(e.code)`."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def _print_traceback(e):
    """Python's own report of an uncaught exception, without the frames of this module and runpy."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__, "<frozen runpy>"):
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


def _child(script, argv, cwd, env, out_path, err_path, base_path, reads_path=None, scratch=()):
    """Runs in the forked child: `python script *argv` as far as the script can tell."""
    # the server's fork is not the script's; its streams and its `{out}` folder are not inputs
    scratch = (os.path.dirname(out_path), *scratch)
    _reads.update(wrote=False, spawned=False, child=True, scratch=tuple(os.path.join(d, "") for d in scratch))
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out_path), (2, err_path)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=_ENCODING)
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding=_ENCODING,
        errors="backslashreplace",
        line_buffering=True,
    )
    sys.argv = [script, *argv]
    path = os.path.abspath(os.path.join(cwd, script))
    sys.path[:] = [os.path.dirname(os.path.realpath(path))] + base_path
    atexit._clear()  # the server's own exit functions are not the script's
    code = 0
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException as e:  # noqa: BLE001  (what the interpreter does with an uncaught one)
        _print_traceback(e)
        code = 1
    atexit._run_exitfuncs()
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:  # noqa: BLE001
            pass
    if reads_path is not None:
        try:
            _record_reads(path, reads_path)
        except Exception:  # noqa: BLE001  (no record: the run depends on every source)
            pass
    os._exit(code)


# ---------------------------------------------------------------- the server


def serve():
    """The warm process (`python scripts/example_runs.py --serve`): imports PRELOAD, then for each
    request line on stdin forks a child that runs it, and answers with the child's exit status."""
    import importlib
    import importlib.util

    sys.addaudithook(_audit)  # before the imports: a file a module reads when imported counts too
    for name in PRELOAD:
        importlib.import_module(name)
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib

        matplotlib.use("Agg")  # what every example that plots selects; then pyplot, loaded once
        importlib.import_module("matplotlib.pyplot")
    import gc

    gc.collect()
    gc.freeze()  # the preloaded objects: never traversed by a child's collections, never copied
    base_path = sys.path[1:]  # this interpreter's path after the script's folder
    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            _child(
                req["script"],
                req["argv"],
                req["cwd"],
                req["env"],
                req["out"],
                req["err"],
                base_path,
                req.get("reads"),
                req.get("scratch", ()),
            )
        deadline = None if req["timeout"] is None else time.monotonic() + req["timeout"]
        timed_out = False
        while True:
            done, status, usage = os.wait4(pid, 0 if deadline is None else os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                timed_out = True
                deadline = None
            else:
                time.sleep(0.02)
        cpu = usage.ru_utime + usage.ru_stime  # the child's own user and system seconds
        answer = {"code": os.waitstatus_to_exitcode(status), "timeout": timed_out, "cpu": cpu}
        print(json.dumps(answer), flush=True)


class _Server:
    def __init__(self):
        self.env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=self.env,
            text=True,
        )

    def run(self, req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("example_runs: the server process ended")
        return json.loads(line)


_idle = []  # servers not in use
_started = []  # every server started, closed and waited for at exit
_servers_lock = threading.Lock()
_server_env = {}


def _take_server():
    with _servers_lock:
        if _idle:
            return _idle.pop()
    s = _Server()
    with _servers_lock:
        _started.append(s)
    _server_env.setdefault("env", s.env)
    return s


@atexit.register
def _close_servers():
    # a server ends when its input closes; waiting for it leaves no process behind and counts its
    # time (and its children's) in this process's resource usage
    for s in _started:
        try:
            s.proc.stdin.close()
            s.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            s.proc.kill()


def _forkable(argv, env):
    if len(argv) < 2 or argv[0] not in ("python", "python3", sys.executable):
        return False
    if argv[1].startswith("-") or not argv[1].endswith(".py") or not hasattr(os, "fork"):
        return False
    # opt out: every run (with the variable in this process's environment), or one command (in its
    # own environment) gets a new interpreter
    if "1" in (os.environ.get("MINIRL_EXAMPLES_SUBPROCESS"), env.get("MINIRL_EXAMPLES_SUBPROCESS")):
        return False
    start = _server_env.get("env", os.environ)
    keys = {k for k in set(env) | set(start) if k.startswith(IMPORT_TIME_ENV)}
    return all(env.get(k) == start.get(k) for k in keys)


def _run_forked(argv, cwd, env, timeout, scratch=()):
    server = _take_server()
    with tempfile.TemporaryDirectory(prefix="example-run-") as d:
        out, err, reads = (os.path.join(d, name) for name in ("stdout", "stderr", "reads"))
        req = dict(script=argv[1], argv=argv[2:], cwd=cwd, env=env, out=out, err=err, timeout=timeout)
        req.update(reads=reads, scratch=list(scratch))
        try:
            answer = server.run(req)
        except BaseException:
            server.proc.kill()
            raise
        with _servers_lock:
            _idle.append(server)
        if answer["timeout"]:
            raise subprocess.TimeoutExpired(argv, timeout)
        read = lambda f: Path(f).read_bytes().decode(_ENCODING, errors="replace") if os.path.exists(f) else ""
        try:
            record = json.loads(Path(reads).read_text())
        except (OSError, ValueError):
            record = None
        return answer["code"], read(out), read(err), answer["cpu"], record


def _run_subprocess(argv, cwd, env, timeout, scratch=()):
    if argv[0] in ("python", "python3"):
        argv = [sys.executable, *argv[1:]]
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    # its CPU time is unknown: this process's children's usage mixes it with the other threads' runs;
    # what it read is unknown too
    return proc.returncode, proc.stdout, proc.stderr, None, None


# ---------------------------------------------------------------- on disk


_disk = {"folder": None}
# shell bookkeeping that differs between two terminals and that no example reads
_ENV_IGNORED = ("_", "OLDPWD", "SHLVL")
_ALL_SOURCES = "*sources*"  # a run whose reads are unknown: it depends on every source


def use_disk_cache(folder):
    """Keeps every successful result in `folder` (None: in this process only, the default)."""
    _disk["folder"] = None if folder is None else Path(folder)


def _interpreter():
    """The interpreter and the versions of the packages the examples import: not in the repository."""
    if "id" not in _disk:
        from importlib import metadata

        versions = []
        for name in ("numpy", "numba", "llvmlite", "matplotlib"):
            try:
                versions.append(f"{name}=={metadata.version(name)}")
            except metadata.PackageNotFoundError:
                versions.append(f"{name} missing")
        _disk["id"] = [os.path.realpath(sys.executable), sys.prefix, sys.version, *versions]
    return _disk["id"]


def _disk_path(argv, cwd, env):
    kept = sorted((k, v) for k, v in env.items() if not k.startswith("PYTEST_") and k not in _ENV_IGNORED)
    key = json.dumps([list(argv), str(cwd), kept, _interpreter()])
    return _disk["folder"] / (hashlib.sha256(key.encode()).hexdigest()[:40] + ".json")


def _unchanged(reads):
    """True iff every file and folder listed in `reads` is as it was when the run read it."""
    for rel, digest in reads["files"]:
        if (sources_digest() if rel == _ALL_SOURCES else file_digest(rel)) != digest:
            return False
    return all(listing_digest(rel) == digest for rel, digest in reads["dirs"])


def _disk_load(argv, cwd, env):
    """The kept result of the command, or None (none kept, an input changed, or a corrupt file)."""
    if _disk["folder"] is None:
        return None
    try:
        entry = json.loads(_disk_path(argv, cwd, env).read_text())
        if entry["argv"] != list(argv) or not _unchanged(entry["reads"]):
            return None
        r = entry["result"]
        files = {name: base64.b64decode(b, validate=True) for name, b in r["files"].items()}
        return Result(list(argv), int(r["returncode"]), r["stdout"], r["stderr"], float(r["seconds"]), files)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _disk_store(argv, cwd, env, result, record):
    """Keeps `result` with the digest of what the run read (`record`, from the forked child, or
    None: every source), written to a temporary file and renamed over the old one."""
    if _disk["folder"] is None or result.returncode != 0 or (record and record["wrote"]):
        return
    files = [] if record else [(_ALL_SOURCES, sources_digest())]
    if record:
        files = [(rel, file_digest(rel)) for rel in record["files"]]
        if record["spawned"]:
            files.append((_ALL_SOURCES, sources_digest()))
    dirs = [(rel, listing_digest(rel)) for rel in (record["dirs"] if record else [])]
    r = result
    entry = dict(
        argv=list(argv),
        reads=dict(files=files, dirs=dirs),
        result=dict(
            returncode=r.returncode,
            stdout=r.stdout,
            stderr=r.stderr,
            seconds=r.seconds,
            files={name: base64.b64encode(b).decode() for name, b in r.files.items()},
        ),
    )
    path = _disk_path(argv, cwd, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------- run, cached


_cache = {}  # key -> Future-like (threading.Event, [Result])
_cache_lock = threading.Lock()
_log = []  # (command, seconds, "ran" | "cached" | "disk", CPU seconds of a forked run or None)


def _split(cmd):
    return shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]


def _key(argv, cwd, env):
    # pytest names the running test in the environment; no example reads it
    kept = sorted((k, v) for k, v in env.items() if not k.startswith("PYTEST_"))
    env_digest = hashlib.sha256(json.dumps(kept).encode()).hexdigest()
    return (tuple(argv), str(cwd), env_digest, sources_digest())


def _resolve(cmd, cwd=None, env=None):
    """(argument list, working directory, environment, cache key) of a command, the defaults
    filled in: the repository, this process's environment."""
    argv = _split(cmd)
    cwd = str(cwd if cwd is not None else ROOT)
    env = dict(os.environ if env is None else env)
    return argv, cwd, env, _key(argv, cwd, env)


def run(cmd, *, cwd=None, env=None, check=False, timeout=None, fresh=False, capture_output=True, text=True):
    """The result of `cmd` (a string split like a shell does, or an argument list) run in `cwd`
    (default: the repository) with `env` (default: this process's), computed once per process
    (and kept on disk while its inputs are unchanged, with `use_disk_cache`).

    `{out}` in an argument becomes a new temporary folder; the files left there are returned in
    `files`. `fresh=True` runs it again whatever ran before (and does not keep the result);
    `check=True` raises CalledProcessError on a non-zero status, as `subprocess.run` does
    (`capture_output` and `text` are accepted for the same reason: the output is always captured,
    as text).
    """
    if not (capture_output and text):
        raise ValueError("example_runs.run: the output is always captured as text")
    argv, cwd, env, key = _resolve(cmd, cwd, env)
    with _cache_lock:
        slot = None if fresh else _cache.get(key)
        owner = slot is None
        if owner:
            slot = (threading.Event(), [])
            if not fresh:
                _cache[key] = slot
    if not owner:
        slot[0].wait()
        result = slot[1][0]
        _log.append((" ".join(argv), 0.0, "cached", None))
    else:
        try:
            result = None if fresh else _disk_load(argv, cwd, env)
            if result is not None:
                _log.append((" ".join(argv), result.seconds, "disk", None))
            else:
                result, record = _execute(argv, cwd, env, timeout)
                _disk_store(argv, cwd, env, result, record)
        except BaseException as e:
            slot[1].append(e)
            with _cache_lock:
                _cache.pop(key, None)
            slot[0].set()
            raise
        slot[1].append(result)
        slot[0].set()
    if isinstance(result, BaseException):
        raise result
    if check:
        result.check_returncode()
    return result


def _execute(argv, cwd, env, timeout):
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="example-out-") as out:
        real = [a.replace("{out}", out) for a in argv]
        runner = _run_forked if _forkable(real, env) else _run_subprocess
        code, stdout, stderr, cpu, record = runner(real, cwd, env, timeout, scratch=[out])
        files = (
            {p.name: p.read_bytes() for p in Path(out).iterdir() if p.is_file()}
            if "{out}" in " ".join(argv)
            else {}
        )
    seconds = time.perf_counter() - t0
    _log.append((" ".join(argv), seconds, "ran", cpu))
    return Result(list(argv), code, stdout, stderr, seconds, files), record


# ---------------------------------------------------------------- several at once


_pool = {"executor": None}


def prefetch(cmds, workers=None, **kw):
    """Start every command of `cmds` (distinct ones once) on a pool of `workers` threads (one per
    core by default); `run` with the same command then returns its result, waiting if needed."""
    if _pool["executor"] is None:
        _pool["executor"] = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    seen = []
    for c in cmds:
        if c not in seen:
            seen.append(c)
            _pool["executor"].submit(_quiet_run, c, kw)


def _quiet_run(cmd, kw):
    # a command its caller already asked for (running, or done) is not waited for here: the
    # thread goes on to the next one
    if _resolve(cmd, kw.get("cwd"), kw.get("env"))[3] in _cache:
        return
    try:
        run(cmd, **kw)
    except BaseException:  # noqa: BLE001  (the caller's own `run` raises it again)
        pass


def console(cmd, grep=None, after=0, **kw):
    """A page's console block of `cmd`'s run (its result once per build, as `run` gives it): the
    command as a reader types it (`{out}/` dropped: the files land in the working folder) and
    what it printed, or, as `| grep -E PATTERN` (`-A N` with `after`) would, the lines that match
    the regular expression `grep` and the `after` lines that follow each. Returns (result, the
    block as Markdown), so that one run gives a page its output, parts of it, and its files."""
    r = run(cmd, check=True, **kw)
    shown = (cmd if isinstance(cmd, str) else shlex.join(cmd)).replace("{out}/", "")
    out = r.stdout.rstrip("\n").splitlines()
    if grep is not None:
        shown += " | grep" + (f" -A{after}" if after else "") + f' -E "{grep}"'
        keep = set()
        for i, line in enumerate(out):
            if re.search(grep, line):
                keep.update(range(i, min(i + after + 1, len(out))))
        out = [out[i] for i in sorted(keep)]
    return r, "```console\n$ " + shown + "\n" + "\n".join(out) + "\n```\n"


def log():
    """[(command, seconds, 'ran', 'cached' or 'disk', CPU seconds or None)] of every `run` so far,
    in order (the CPU seconds of a forked run: its child's user and system time; a result read
    from disk: the seconds its run took then)."""
    return list(_log)


def summary():
    ran = [(s, c) for _, s, how, c in _log if how == "ran"]
    cached = sum(1 for *_, how, _ in _log if how == "cached")
    disk = sum(1 for *_, how, _ in _log if how == "disk")
    cpu = sum(c for _, c in ran if c is not None)
    work = f"{sum(s for s, _ in ran):.1f} s of work, {cpu:.1f} CPU s forked"
    kept = f", {disk} read from the disk cache" if _disk["folder"] is not None else ""
    return f"{len(ran)} runs ({work}){kept}, {cached} served from the cache"


def slowest(n=8):
    """The `n` runs that took the most CPU time (wall time where a run's CPU time is unknown), as
    one line: `command 12.3 s (cpu 10.1 s); ...` (a command cut at 100 characters)."""
    ran = [(c if c is not None else s, s, c, cmd) for cmd, s, how, c in _log if how == "ran"]
    short = lambda cmd: " ".join(cmd.split())[:100] + ("..." if len(" ".join(cmd.split())) > 100 else "")
    return "; ".join(
        f"{short(cmd)} {s:.1f} s" + (f" (cpu {c:.1f} s)" if c is not None else "")
        for _, s, c, cmd in sorted(ran, key=lambda r: r[0], reverse=True)[:n]
    )


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()
