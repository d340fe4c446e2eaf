"""The on-disk cache of every kernel (the contract of kernels/__init__.py): two fresh processes
call every jitted function; the second must load them all from the cache and compile nothing."""

import os
import subprocess
import sys
import textwrap


def test_second_process_loads_cache():
    """The threaded variants are separate functions, so each has its own cache entry (the cache key
    ignores ``parallel``: one function with two option sets would share, and alias, one entry).
    The validators the entries call are jitted too, and are listed with the cores."""
    code = textwrap.dedent("""
        import numpy as np
        from minirl_lm import kernels as K
        from minirl_lm.kernels import validate as C
        th = np.zeros((2, 3)); st = np.zeros((1, 2), np.int64); m = np.ones((1, 2))
        lg = np.zeros((1, 2, 3)); w = np.ones((1, 2)); f4 = np.float32
        calls = [(K._tabular_logp, (th, st, st, m)), (K._tabular_backward, (th, st, st, m, w)),
                 (K._tabular_logp_per_token, (th, st, st, m)),
                 (K._tabular_backward_per_token, (th, st, st, m, w)),
                 (K._dense_logp, (lg, st, m)),
                 (K._dense_backward_into, (lg, st, m, w, np.empty_like(lg))),
                 (K._exp_array, (np.zeros(3),)), (K._exp32_array, (np.zeros(3, f4),)),
                 (K._dense_logp, (lg.astype(f4), st, m)),
                 (K._dense_backward_into, (lg.astype(f4), st, m, w, np.empty(lg.shape, f4))),
                 (K._dense_logp_parallel, (lg, st, m)),
                 (K._dense_backward_parallel_into, (lg, st, m, w, np.empty_like(lg))),
                 (K._chunk_logp, (lg[0], st[0], np.empty(2))),
                 (K._chunk_grad_inplace, (lg[0].copy(), st[0], w[0])),
                 (C._batch_fault, (m, st, 3, st, 2, w)),
                 (C._batch_fault, (m, st, 3, None, 0, None)),
                 (C._logp_fault, (m, m)), (C._dlogits_fault, (lg, st, m)),
                 (C._dtheta_fault, (th, st, st, m, 1.0)), (C._dead_row, (th, st[0])),
                 (C._abs_sum, (w, m))]
        for f, args in calls:
            f(*args)
        funcs = {id(f): f for f, _ in calls}.values()
        hits = sum(sum(f.stats.cache_hits.values()) for f in funcs)
        misses = sum(sum(f.stats.cache_misses.values()) for f in funcs)
        print(len(calls), hits, misses)
    """)
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    n, hits, misses = map(int, runs[1].stdout.split())
    assert misses == 0 and hits == n, runs[1].stdout
