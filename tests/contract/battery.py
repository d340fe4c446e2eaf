"""One table of the public functions' arguments and their kinds, and the bad inputs made from it.

``TABLE`` lists every public function with a factory of valid arguments and, per argument, its
kind (``float2``: a finite float array of fixed shape, ``mask``, ``ids``, ``pos``: a finite
number > 0, ``option``, ``generator``, ``policy``, ``grader``, ...). ``BAD[kind]`` turns a valid
value into bad ones (wrong type, NaN, inf, wrong shape, empty, out of range, unhashable option,
...), each with the argument whose name must start the error message. ``cases()`` crosses the
two; ``tests/contract/test_hardening.py`` runs every case. A new public function gets its cases by being
listed in ``TABLE``.

    $ python tests/contract/battery.py          # the number of bad-input cases by function
"""

import inspect
from collections import Counter

import numpy as np

from minirl_lm.pg import advantages as adv_mod
from minirl_lm.pg import clip
from minirl_lm.values import critic
from minirl_lm.direct import dpo
from minirl_lm.pg import grpo
from minirl_lm import kernels
from minirl_lm.pg import kl
from minirl_lm.core import logprob
from minirl_lm.values import optimum
from minirl_lm.core import policy as pol_mod
from minirl_lm.pg import reinforce
from minirl_lm import tasks
from minirl_lm.scale import bigvocab
from minirl_lm.multiturn import calculator
from minirl_lm.pg import entropy
from minirl_lm.multiturn import env as multiturn
from minirl_lm.multiturn import values as multiturn_values
from minirl_lm.pg import offpolicy
from minirl_lm.direct import preferences
from minirl_lm.pg import seqclip
from minirl_lm.pg import shaping
from minirl_lm.core.mdp import Rollout, TokenMDP
from minirl_lm.multiturn.env import MultiTurnMDP
from minirl_lm.core.policy import TabularPolicy

NAN, INF = float("nan"), float("inf")
B, T = 2, 3

# ---------------------------------------------------------------- valid values

def LOGP():
    return np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]])          # (B, T)


def LOGP2():
    return np.array([[-1.1, -1.9, -0.7], [-0.2, -1.0, 0.0]])          # (B, T)


def MASK():
    return np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])               # (B, T)


def ADV():
    return np.array([1.0, -0.5])                                      # (B,)


def R():
    return np.array([[1.0, 0.0], [0.5, 2.0]])                         # (N, K)


def PROBS():
    return np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])               # (N, Y)


def PROBS2():
    return np.array([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])             # (N, Y)


def THETA():
    return np.array([[0.0, 1.0, -1.0], [0.5, -np.inf, 0.2]])          # (S, V)


def MDP():
    return TokenMDP(["a", "b"], V=3, eos=0, max_len=2)                 # S = 6


def POLICY():
    return TabularPolicy(np.linspace(-1, 1, 18).reshape(6, 3))


def TOY_POLICY():
    return TabularPolicy(tasks.reference_theta())


def GRADER(prompt, response):
    return float(len(response))


def RNG():
    return np.random.default_rng(0)


def ROLLOUT():
    return MDP().rollout(POLICY(), 2, np.random.default_rng(1))


def LOGITS():
    return np.random.default_rng(2).standard_normal((B, T, 4))        # (B, T, V)


def MT():
    return calculator.calculator(0.8, max_turns=2, turn_len=2)        # S = 44, V = 5


def MT_POLICY():
    return TabularPolicy(np.zeros((44, 5)))


def MT_PROBS():
    return np.full((44, 5), 0.2)                                      # (S, V)


def EPISODES():
    return MT().rollout(MT_POLICY(), 2, np.random.default_rng(3))


def ACTION_MASK():
    return np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])               # (B, T) a hole at (0, 1)


def MT_REWARDS():
    return np.array([[0.0, 0.0, 1.0], [0.0, 0.5, 0.0]])               # (B, T) on policy tokens


def TURN_REWARD(w, turns, done):
    return float(done and w == 0)


def JUDGE(prompt, y_a, y_b):
    return 0.5


def H():
    return np.random.default_rng(4).standard_normal((4, 3))           # (N, d)


def W_UNEMBED():
    return np.random.default_rng(5).standard_normal((4, 3))           # (V, d)


def LOSS_FN(logp, rows):
    return float(-logp.sum()), -np.ones_like(logp)


def IDS(high, shape=(B, T)):
    return lambda: np.arange(int(np.prod(shape))).reshape(shape) % high


def K_IDS(high):
    return lambda: np.ascontiguousarray(IDS(high)(), dtype=np.int64)


# ---------------------------------------------------------------- bad values per kind

def _first(v, x):
    a = np.array(v, dtype=np.float64)
    a.flat[0] = x
    return a


def _empty(v):
    a = np.asarray(v)
    return np.zeros((0,) + a.shape[1:], a.dtype)


def bad_float(v, finite_neginf=False):
    out = [("str", "x"), ("None", None), ("ragged", [[1.0], [1.0, 2.0]]),
           ("complex", np.asarray(v) + 1j), ("nan", _first(v, NAN)), ("+inf", _first(v, INF)),
           ("extra axis", np.asarray(v)[..., None]), ("empty", _empty(v))]
    if not finite_neginf:
        out.append(("-inf", _first(v, -INF)))
    return out


def bad_logits(v):
    a = np.array(v, dtype=np.float64)
    a.reshape(-1, a.shape[-1])[0] = -INF                                # an all -inf row
    return bad_float(v, finite_neginf=True) + [("all -inf row", a)]


def bad_mask(v):
    left = np.array(v, dtype=np.float64)
    left[0, 0] = 0.0                                                    # 0 then 1: left padding
    return bad_float(v) + [("0.5", _first(v, 0.5)), ("left padded", left)]


def bad_ids(high):
    def gen(v):
        return [("str", "x"), ("None", None), ("float", np.asarray(v) + 0.5),
                ("-1", _first(v, -1).astype(np.int64)), ("high", _first(v, high).astype(np.int64)),
                ("extra axis", np.asarray(v)[..., None])]
    return gen


def bad_number(low=None, high=None, low_open=False, integer=False):
    def gen(v):
        out = [("str", "x"), ("None", None), ("bool", True), ("list", [v]), ("nan", NAN),
               ("inf", INF), ("-inf", -INF)]
        if integer:
            out += [("float", 1.5)]
        if low is not None:
            out.append(("below", low if low_open else low - (1 if integer else 0.5)))
        if high is not None:
            out.append(("above", high + (1 if integer else 0.5)))
        return out
    return gen


def bad_option(v):
    return [("unknown", "nope"), ("unhashable", [v]), ("None", None), ("int", 1)]


def bad_generator(v):
    return [("int", 42), ("None", None), ("RandomState", np.random.RandomState(0))]


def bad_policy(v):
    return [("None", None), ("str", "x"), ("object", object()),
            ("wrong shape", TabularPolicy(np.zeros((2, 2))))]


def bad_grader(v):
    return [("None", None), ("str", "x"), ("one argument", lambda p: 1.0),
            ("returns None", lambda p, r: None), ("returns str", lambda p, r: "1"),
            ("returns NaN", lambda p, r: NAN), ("returns inf", lambda p, r: INF),
            ("returns bool", lambda p, r: True)]


def bad_prob(v):
    a = np.array(v, dtype=np.float64)
    a[0] = a[0] * (1 + 1e-6)                                            # rows summing to 1 + 1e-6
    return bad_float(v) + [("sum 1+1e-6", a), ("negative", _first(v, -0.1))]


def bad_mdp(v):
    return [("None", None), ("str", "x"),
            ("lazy ids", TokenMDP(["a", "b"], V=3, eos=0, max_len=2, ids="lazy", capacity=6))]


def bad_prefix(v):
    return [("str", "ab"), ("None", None), ("-1", (1, -1)), ("V", (3,)), ("float", (0.9,)),
            ("after EOS", (0, 1)), ("too long", (1, 1, 1)), ("bool", (True,))]


def bad_nonterminal(v):
    return bad_prefix(v) + [("ends in EOS", (0,)), ("at max_len", (1, 2))]


def bad_rollout(v):
    r = ROLLOUT()
    bad_prompt = Rollout(r.states, r.tokens, r.mask, r.prompt - 1, r.lengths)
    bad_tok = Rollout(r.states, r.tokens + 5, r.mask, r.prompt, r.lengths)
    return [("None", None), ("str", "x"), ("prompt -1", bad_prompt), ("tokens >= V", bad_tok)]


def bad_record(v):
    return [("str", "x"), ("int", 5), ("-1", [-1]), ("0", [0]), ("beyond", [10**9]),
            ("float", [1.5])]


def bad_karray(dtype, ndim):
    """Kernel arrays: exactly this dtype, ndim, C-contiguous, non-empty."""
    def gen(v):
        other = np.float64 if dtype == np.int64 else np.float16
        out = [("list", np.asarray(v).tolist()), ("None", None),
               ("dtype", np.asarray(v).astype(other)),
               ("extra axis", np.ascontiguousarray(np.asarray(v)[..., None])),
               ("empty", _empty(v))]
        if np.asarray(v).ndim >= 2 and np.asarray(v).shape[-1] > 1:
            out.append(("not contiguous", np.asarray(v)[..., ::-1]))
        return out
    return gen


def bad_kfloat(dtype, ndim, nan_ok=False):
    def gen(v):
        out = bad_karray(dtype, ndim)(v)
        if not nan_ok:
            out.append(("nan", _first(v, NAN).astype(dtype)))
        return out
    return gen


def bad_kmask(v):
    return bad_karray(np.float64, 2)(v) + [("0.5", _first(v, 0.5))]


def bad_kids(high):
    def gen(v):
        return bad_karray(np.int64, 2)(v) + [("-1", _first(v, -1).astype(np.int64)),
                                             ("high", _first(v, high).astype(np.int64))]
    return gen


def bad_flag(v):
    return [("str", "x"), ("None", None), ("int", 1), ("array", np.array([True]))]


def bad_bools(v):
    return [("str", "x"), ("None", None), ("int", np.asarray(v).astype(np.int64)),
            ("extra axis", np.asarray(v)[..., None]), ("short", np.asarray(v)[:1])]


def bad_callable(nargs):
    def gen(v):
        return [("None", None), ("str", "x"),
                (f"{nargs - 1} arguments", eval("lambda " + ", ".join("a" * i for i in range(
                    1, nargs)) + ": 0.5")),
                (f"{nargs + 1} arguments", eval("lambda " + ", ".join("a" * i for i in range(
                    1, nargs + 2)) + ": 0.5")), ("a class", float)]
    return gen


def bad_judge(v):
    return bad_callable(3)(v) + [
        ("returns None", lambda p, a, b: None), ("returns str", lambda p, a, b: "0.5"),
        ("returns 1.5", lambda p, a, b: 1.5), ("returns NaN", lambda p, a, b: NAN)]


def bad_turn_reward(v):
    return bad_callable(3)(v) + [
        ("returns None", lambda w, t, d: None), ("returns str", lambda w, t, d: "1"),
        ("returns NaN", lambda w, t, d: NAN), ("returns inf", lambda w, t, d: INF),
        ("returns bool", lambda w, t, d: True)]


def bad_loss_fn(v):
    return bad_callable(2)(v) + [
        ("returns None", lambda lp, r: None), ("returns NaN", lambda lp, r: (NAN, 0 * lp)),
        ("returns str", lambda lp, r: ("x", 0 * lp)),
        ("wrong shape", lambda lp, r: (0.0, np.zeros(lp.size + 1))),
        ("NaN gradient", lambda lp, r: (0.0, lp * NAN))]


def bad_spans(v):
    return [("None", None), ("str", "x"), ("not tuples", [2, 3]), ("empty span", [(), (2, 4)]),
            ("id V", [(2, 5), (2, 4)]), ("-1", [(2, -1), (2, 4)]), ("prefix", [(2,), (2, 4)]),
            ("float", [(2.5, 3), (2, 4)])]


def bad_episodes(v):
    return [("None", None), ("str", "x"), ("object", object()), ("Rollout", ROLLOUT())]


def bad_mtenv(v):
    return [("None", None), ("str", "x"), ("TokenMDP", MDP())]


def _no_extra_axis(gen):
    return lambda v: [(label, x) for label, x in gen(v) if label != "extra axis"]


BAD = {
    "float": bad_float, "float_neginf": lambda v: bad_float(v, True), "logits": bad_logits,
    "mask": bad_mask, "pos": bad_number(0.0, low_open=True), "nonneg": bad_number(0.0),
    "unit": bad_number(0.0, 1.0), "eps": bad_number(0.0, 1.0, low_open=True),
    "half": bad_number(0.0, 0.5), "int1": bad_number(1, integer=True),
    "int0": bad_number(0, integer=True), "ddof": bad_number(0, 1, integer=True),
    "option": bad_option, "generator": bad_generator, "policy": bad_policy,
    "grader": bad_grader, "prob": bad_prob, "mdp": bad_mdp, "prefix": bad_prefix,
    "nonterminal": bad_nonterminal, "rollout": bad_rollout, "record_at": bad_record,
    "real": bad_number(), "kmask": bad_kmask,
    "gt1": bad_number(1.0, low_open=True), "ge1": bad_number(1.0), "flag": bad_flag,
    "bools": bad_bools, "callable2": bad_callable(2), "judge": bad_judge,
    "turn_reward": bad_turn_reward, "loss_fn": bad_loss_fn, "spans": bad_spans,
    "episodes": bad_episodes, "mtenv": bad_mtenv, "ids5": bad_ids(5),
    "tokids": lambda v: [(label, x) for label, x in bad_ids(3)(v) if label != "high"],
    "amask": lambda v: bad_float(v) + [("0.5", _first(v, 0.5)), ("1 off mask", np.ones((B, T)))],
    "mask1": lambda v: bad_float(v) + [("0.5", _first(v, 0.5))],
}
for _h in (2, 3, 4, 6, 9):
    BAD[f"ids{_h}"] = bad_ids(_h)
    BAD[f"kids{_h}"] = bad_kids(_h)
BAD["klogits"] = bad_kfloat(np.float64, 3, nan_ok=False)
BAD["ktheta"] = bad_kfloat(np.float64, 2)
BAD["kw"] = bad_kfloat(np.float64, 2)
BAD["kx"] = bad_kfloat(np.float64, 1)
BAD["kx32"] = bad_kfloat(np.float32, 1)


# ---------------------------------------------------------------- the table

def F(func, **args):
    """A public function and its arguments: name -> (kind or None (not varied), valid factory)."""
    return func, args


V = lambda f: (None, f)                                                # noqa: E731 (valid only)


def const(x):
    return lambda: x


def _mdp_method(name):
    def call(**kw):
        return getattr(MDP(), name)(**kw)
    call.__name__ = f"TokenMDP.{name}"
    call.__wrapped__ = getattr(TokenMDP, name)                          # for the defaults
    return call


def _pol_method(name):
    def call(**kw):
        return getattr(POLICY(), name)(**kw)
    call.__name__ = f"TabularPolicy.{name}"
    call.__wrapped__ = getattr(TabularPolicy, name)
    return call


def _tokenmdp(**kw):
    return TokenMDP(**kw)


_tokenmdp.__name__ = "TokenMDP"
_tokenmdp.__wrapped__ = TokenMDP.__init__


def _tabpol(**kw):
    return TabularPolicy(**kw)


_tabpol.__name__ = "TabularPolicy"
_tabpol.__wrapped__ = TabularPolicy.__init__


def _multiturn(**kw):
    return MultiTurnMDP(**kw)


_multiturn.__name__ = "MultiTurnMDP"
_multiturn.__wrapped__ = MultiTurnMDP.__init__


def _mt_method(name):
    def call(**kw):
        return getattr(MT(), name)(**kw)
    call.__name__ = f"MultiTurnMDP.{name}"
    call.__wrapped__ = getattr(MultiTurnMDP, name)
    return call

LOSS_ARGS = dict(logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
                 mask=("mask", MASK), eps=("eps", const(0.2)), eps_high=("pos", const(0.28)),
                 agg=("option", const("token_mean")), max_len=("int1", const(3)))

TABLE = [
    # advantages.py
    F(adv_mod.no_baseline, rewards=("float", R)),
    F(adv_mod.centred, rewards=("float", R)),
    F(adv_mod.standardized, rewards=("float", R), eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    F(adv_mod.leave_one_out, rewards=("float", R)),
    F(adv_mod.advantages, rewards=("float", R), baseline=("option", const("mean")),
      eps=("nonneg", const(1e-8)), ddof=("ddof", const(0))),
    F(adv_mod.broadcast, adv=("float_any", ADV), mask=("mask", MASK)),
    F(adv_mod.reinforce_pp, token_rewards=("float", LOGP), mask=("mask", MASK),
      gamma=("unit", const(0.9)), eps=("nonneg", const(1e-8)), ddof=("ddof", const(1))),
    F(adv_mod.reinforce_pp_baseline, rewards=("float_any", lambda: np.array([[1.0], [0.0]])),
      mask=("mask", MASK), eps=("nonneg", const(1e-8)), ddof=("ddof", const(1))),
    F(adv_mod.remax, rewards=("float", R), greedy_rewards=("float", ADV)),
    F(adv_mod.opo, rewards=("float", R), lengths=("float", lambda: np.array([[1.0, 2.0],
                                                                           [3.0, 0.0]]))),
    F(adv_mod.batch_std, rewards=("float", R), eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    # clip.py
    F(clip.clipped_surrogate, **LOSS_ARGS),
    F(clip.clip_fraction, **{k: v for k, v in LOSS_ARGS.items() if k not in ("agg", "max_len")}),
    # critic.py
    F(critic.per_token_rewards, terminal_reward=("float", ADV), logp=("float", LOGP),
      logp_ref=("float", LOGP2), mask=("mask", MASK), beta=("nonneg", const(0.1))),
    F(critic.td_errors, values=("float", lambda: np.arange(6.0)), states=("ids6", IDS(6)),
      rewards=("float", LOGP), mask=("mask", MASK), gamma=("unit", const(0.9))),
    F(critic.gae, deltas=("float", LOGP), mask=("mask", MASK), gamma=("unit", const(0.9)),
      lam=("unit", const(0.5))),
    F(critic.monte_carlo_returns, rewards=("float", LOGP), mask=("mask", MASK),
      gamma=("unit", const(0.9))),
    F(critic.value_loss, values=("float", lambda: np.arange(6.0)), states=("ids6", IDS(6)),
      targets=("float", LOGP), mask=("mask", MASK)),
    F(critic.clipped_value_loss, vpreds=("float", LOGP), values_old=("float", LOGP2),
      returns=("float", MASK), mask=("mask", MASK), clip=("pos", const(0.2))),
    F(critic.fit_values, values=("float", lambda: np.arange(6.0)), states=("ids6", IDS(6)),
      rewards=("float", LOGP), mask=("mask", MASK), gamma=("unit", const(0.9)),
      lr=("pos", const(0.5)), target=("option", const("td0"))),
    # dpo.py
    F(dpo.bradley_terry_loss, r_chosen=("float", ADV), r_rejected=("float", lambda: ADV()[::-1])),
    F(dpo.reward_table_loss, r_phi=("float", R), prompt=("ids2", IDS(2, (2,))),
      chosen=("ids2", IDS(2, (2,))), rejected=("ids2", lambda: np.array([1, 0]))),
    F(dpo.dpo_loss, seq_logp_c=("float", ADV), seq_logp_r=("float", lambda: ADV() - 1),
      seq_logp_ref_c=("float", ADV), seq_logp_ref_r=("float", ADV), beta=("pos", const(0.5)),
      variant=("option", const("conservative")), label_smoothing=("half", const(0.1)),
      weights=("float", lambda: np.array([0.5, 0.5]))),
    F(dpo.token_grad, dseq=("float", ADV), mask=("mask", MASK)),
    F(dpo.bt_sample_preferences, reward=("float", R), mu=("prob", lambda: np.array(
        [[0.5, 0.5], [0.25, 0.75]])), n_pairs=("int1", const(4)), rng=("generator", RNG),
      mu0=("prob", lambda: np.array([0.5, 0.5]))),
    # grpo.py
    F(grpo.grpo_loss, logp=("float", LOGP), logp_old=("float", LOGP2), logp_ref=("float", LOGP),
      adv=("float", ADV), mask=("mask", MASK), eps=("eps", const(0.2)),
      eps_high=("pos", const(0.28)), beta=("nonneg", const(0.04)),
      kl_estimator=("option", const("k3")), agg=("option", const("token_mean")),
      max_len=("int1", const(3))),
    F(grpo.grpo_step, policy=("policy", POLICY), ref_policy=("policy", POLICY), mdp=("mdp_any", MDP),
      grader=("grader", const(GRADER)), rng=("generator", RNG), K=("int1", const(2)),
      mu=("int1", const(2)), lr=("pos", const(0.1)), eps=("eps", const(0.2)),
      eps_high=("pos", const(0.28)), beta=("nonneg", const(0.04)),
      kl_estimator=("option", const("k3")), agg=("option", const("token_mean")),
      baseline=("option", const("standardized")), adv_eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    # kl.py
    F(kl.kl_per_token, logp=("float", LOGP), logp_ref=("float", LOGP2), mask=("mask", MASK),
      estimator=("option", const("k3"))),
    F(kl.kl_penalty, logp=("float", LOGP), logp_ref=("float", LOGP2), mask=("mask", MASK),
      estimator=("option", const("k2")), agg=("option", const("seq_sum")),
      max_len=("int1", const(3))),
    F(kl.kl_in_reward, rewards=("float", ADV), logp=("float", LOGP), logp_ref=("float", LOGP2),
      mask=("mask", MASK), beta=("nonneg", const(0.1))),
    F(kl.kl_penalty_straight_through, logp=("float", LOGP), logp_ref=("float", LOGP2),
      mask=("mask", MASK), estimator=("option", const("k3")), agg=("option", const("token_mean")),
      max_len=("int1", const(3))),
    F(kl.kl_penalty_is, logp=("float", LOGP), logp_old=("float", LOGP2), logp_ref=("float", LOGP),
      mask=("mask", MASK), agg=("option", const("token_mean")), max_len=("int1", const(3))),
    F(kl.adaptive_kl_coef, beta=("nonneg", const(0.1)), current_kl=("real", const(0.3)),
      target_kl=("pos", const(0.2)), horizon=("pos", const(100.0)),
      n_steps=("nonneg", const(8.0))),
    F(kl.exact_kl, p=("prob", PROBS2), q=("prob", PROBS2)),
    F(kl.exact_kl_grad_theta, theta=("float_neginf", THETA), theta_ref=("float_neginf", THETA),
      weights=("float", lambda: np.array([1.0, 2.0]))),
    F(kl.exact_reverse_kl_grad_theta, theta=("float_neginf", THETA),
      theta_ref=("float_neginf", THETA), weights=("float", lambda: np.array([1.0, 2.0]))),
    # logprob.py
    F(logprob.log_softmax, logits=("logits_any", LOGITS)),
    F(logprob.masked_sum, x=("float_neginf", LOGP), mask=("mask", MASK)),
    F(logprob.masked_mean, x=("float_neginf", LOGP), mask=("mask", MASK)),
    F(logprob.token_logp, logits=("logits", LOGITS), tokens=("ids4", IDS(4)), mask=("mask", MASK)),
    F(logprob.token_logp_backward, logits=("logits", LOGITS), tokens=("ids4", IDS(4)),
      mask=("mask", MASK), dlogp=("float", LOGP)),
    # mdp.py
    F(_tokenmdp, prompts=V(lambda: ["a", "b"]), V=("int1", const(3)), eos=("int0", const(0)),
      max_len=("int1", const(2)), ids=("option", const("enumerate")),
      max_states=("int1", const(100)), capacity=("int1", const(10))),
    F(_mdp_method("step"), prefix=("nonterminal", const((1,))), y=("int0", const(1))),
    F(_mdp_method("is_terminal"), prefix=("prefix", const((1,)))),
    F(_mdp_method("state_id"), n=("int0", const(1)), prefix=("nonterminal", const((1,)))),
    F(_mdp_method("prefix_of"), s=("int0", const(3))),
    F(_mdp_method("rollout"), policy=("policy", POLICY), K=("int1", const(2)),
      rng=("generator", RNG), prompts=("ids2", lambda: np.array([1, 0]))),
    F(_mdp_method("score"), grader=("grader", const(GRADER)), rollout=("rollout", ROLLOUT)),
    # optimum.py
    F(optimum.tilted_optimum, pi_ref=("prob", PROBS), reward=("float", lambda: PROBS2() * 3),
      beta=("pos", const(0.5))),
    F(optimum.kl_objective, pi=("prob", PROBS2), pi_ref=("prob", PROBS2),
      reward=("float", lambda: PROBS() * 3), beta=("nonneg", const(0.5)),
      weights=("prob", lambda: np.array([0.5, 0.5]))),
    F(optimum.optimal_value, pi_ref=("prob", PROBS), reward=("float", lambda: PROBS2() * 3),
      beta=("pos", const(0.5)), weights=("prob", lambda: np.array([0.5, 0.5]))),
    F(optimum.soft_values, mdp=("mdp", MDP), pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)),
      grader=("grader", const(GRADER)), beta=("pos", const(0.5))),
    F(optimum.tilted_optimum_tree, mdp=("mdp", MDP),
      pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)), grader=("grader", const(GRADER)),
      beta=("pos", const(0.5))),
    F(optimum.kl_objective_tree, mdp=("mdp", MDP), pi=("prob", lambda: np.full((6, 3), 1 / 3)),
      pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)), grader=("grader", const(GRADER)),
      beta=("nonneg", const(0.5)), weights=("prob", lambda: np.array([0.5, 0.5]))),
    F(optimum.exploit_threshold, gap=("pos", const(1.0)), log_odds=("pos", const(4.0))),
    F(optimum.hedge_odds, gap=("real", const(1.0)), log_odds=("real", const(4.0)),
      beta=("pos", const(0.25))),
    # policy.py
    F(pol_mod.softmax_table, theta=("float_neginf", THETA)),
    F(pol_mod.log_softmax_table, theta=("float_neginf", THETA)),
    F(_tabpol, theta=("float_neginf", THETA)),
    F(_pol_method("sample"), states=("ids6_any", IDS(6)), rng=("generator", RNG)),
    F(_pol_method("logp"), states=("ids6", IDS(6)), tokens=("ids3", IDS(3)), mask=("mask", MASK)),
    F(_pol_method("backward"), states=("ids6", IDS(6)), tokens=("ids3", IDS(3)),
      mask=("mask", MASK), dlogp=("float", LOGP)),
    # reinforce.py
    F(reinforce.token_weights, mask=("mask", MASK), agg=("option", const("constant")),
      max_len=("int1", const(3))),
    F(reinforce.reinforce_loss, logp=("float", LOGP), adv=("float", ADV), mask=("mask", MASK),
      agg=("option", const("seq_sum")), max_len=("int1", const(3))),
    F(reinforce.sequence_reinforce_loss, seq_logp=("float", ADV), adv=("float", ADV)),
    # tasks.py
    F(tasks.gold_grader, prompt=("toy_prompt", const("3*4")), response=("toy_response", const((4,)))),
    F(tasks.sloppy_grader, prompt=("toy_prompt", const("3*4")),
      response=("toy_response", const((8,)))),
    F(tasks.reward_table, grader=("toy_grader", const("gold"))),
    F(tasks.evaluate, policy=("policy", TOY_POLICY)),
    F(tasks.train, K=("int1", const(2)), n_responses=("int1", const(4)), seed=("int0", const(0)),
      grader=("toy_grader", const("sloppy")), beta=("nonneg", const(0.1)), lr=("nonneg", const(1.0)),
      baseline=("option", const("mean")), record_at=("record_at", const([1, 2]))),
    # kernels/__init__.py (the public, validated entry points)
    F(kernels.exp_array, x=("kx", lambda: np.linspace(-5.0, 5.0, 4))),
    F(kernels.exp32_array, x=("kx32", lambda: np.linspace(-5.0, 5.0, 4).astype(np.float32))),
    F(kernels.dense_logp, logits=("klogits", LOGITS), tokens=("kids4", K_IDS(4)),
      mask=("kmask", MASK), parallel=("flag", const(False))),
    F(kernels.dense_backward, logits=("klogits", LOGITS), tokens=("kids4", K_IDS(4)),
      mask=("kmask", MASK), w=("kw", LOGP), out=V(lambda: np.zeros((B, T, 4))),
      parallel=("flag", const(True))),
    F(kernels.tabular_logp, theta=("ktheta", POLICY_THETA := lambda: POLICY().theta.copy()),
      states=("kids6", K_IDS(6)), tokens=("kids3", K_IDS(3)), mask=("kmask", MASK)),
    F(kernels.tabular_logp_per_token, theta=("ktheta", POLICY_THETA), states=("kids6", K_IDS(6)),
      tokens=("kids3", K_IDS(3)), mask=("kmask", MASK)),
    F(kernels.tabular_backward, theta=("ktheta", POLICY_THETA), states=("kids6", K_IDS(6)),
      tokens=("kids3", K_IDS(3)), mask=("kmask", MASK), w=("kw", LOGP)),
    F(kernels.tabular_backward_per_token, theta=("ktheta", POLICY_THETA),
      states=("kids6", K_IDS(6)), tokens=("kids3", K_IDS(3)), mask=("kmask", MASK),
      w=("kw", LOGP)),
]

# the off-policy, regularizer, preference, multi-turn and big-vocabulary modules
TABLE += [
    # seqclip.py
    F(seqclip.dual_clip_surrogate, **LOSS_ARGS, c=("gt1", const(3.0))),
    F(seqclip.sequence_ratio, logp=("float", LOGP), logp_old=("float", LOGP2),
      mask=("mask", MASK), ratio=("option", const("geometric"))),
    F(seqclip.gspo_surrogate, logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
      mask=("mask", MASK), eps=("eps", const(0.2)), eps_high=("pos", const(0.28)),
      ratio=("option", const("product"))),
    F(seqclip.cispo_loss, logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
      mask=("mask", MASK), rho_min=("unit", const(0.5)), rho_max=("ge1", const(5.0)),
      agg=("option", const("token_mean")), max_len=("int1", const(3))),
    # offpolicy.py
    F(offpolicy.is_weights, logp_old=("float", LOGP2), logp_mu=("float", LOGP),
      mask=("mask", MASK), level=("option", const("sequence")), mode=("option", const("truncate")),
      c_max=("ge1", const(2.0)), c_min=("unit", const(0.5))),
    F(offpolicy.off_policy_sequence_mask, logp=("float", LOGP), logp_mu=("float", LOGP2),
      adv=("float", ADV), mask=("mask", MASK), delta=("nonneg", const(0.1))),
    F(offpolicy.rejection_mask, logp_old=("float", LOGP2), logp_mu=("float", LOGP),
      mask=("mask", MASK), option=("option", const("seq_mean_k1")), hi=("ge1", const(2.0)),
      lo=("eps", const(0.5))),
    F(offpolicy.corrected_pg_loss, logp=("float", LOGP), adv=("float", ADV), mask=("mask", MASK),
      weights=("float", lambda: np.ones((B, T))), agg=("option", const("seq_sum")),
      max_len=("int1", const(3))),
    F(offpolicy.minibatch_rows, B=("int1", const(4)), M=("int1", const(2)),
      rng=("generator", RNG)),
    F(offpolicy.accumulation_weights, mask=("mask", MASK), G=("int1", const(2)),
      mode=("option", const("dapo")), max_len=("int1", const(3))),
    # entropy.py
    F(entropy.entropy_table, theta=("float_neginf", THETA)),
    F(entropy.entropy_grad_table, theta=("float_neginf", THETA)),
    F(entropy.entropy_bonus, theta=("float_neginf", THETA), states=("ids2", IDS(2)),
      mask=("mask", MASK), agg=("option", const("token_mean")), max_len=("int1", const(3))),
    # shaping.py
    F(shaping.filter_groups, rewards=("float", R)),
    F(shaping.acceptance_probability, p=("unit", const(0.3)), K=("int1", const(2))),
    F(shaping.resample_factor, p=("unit", const(0.3)), K=("int1", const(2))),
    F(shaping.overlong_penalty, lengths=("ids4", IDS(4, (B,))), max_len=("int1", const(3)),
      buffer_len=("int1", const(2)), penalty_factor=("nonneg", const(1.0))),
    F(shaping.truncated, tokens=("tokids", IDS(3)), mask=("mask", MASK), eos=("int0", const(0))),
    F(shaping.mask_truncated, tokens=("tokids", IDS(3)), mask=("mask", MASK),
      eos=("int0", const(0))),
    # preferences.py
    F(preferences.ipo_loss, logp_c=("float", LOGP), mask_c=("mask", MASK),
      logp_r=("float", LOGP2), mask_r=("mask", MASK), seq_logp_ref_c=("float", ADV),
      seq_logp_ref_r=("float", lambda: ADV() - 1), beta=("pos", const(0.5)),
      average=("flag", const(True)), weights=("float", lambda: np.array([0.5, 0.5]))),
    F(preferences.simpo_loss, logp_c=("float", LOGP), mask_c=("mask", MASK),
      logp_r=("float", LOGP2), mask_r=("mask", MASK), beta=("pos", const(2.0)),
      gamma=("nonneg", const(0.5)), weights=("float", lambda: np.array([0.5, 0.5]))),
    F(preferences.orpo_loss, logp_c=("float", LOGP), mask_c=("mask", MASK),
      logp_r=("float", LOGP2), mask_r=("mask", MASK), lam=("nonneg", const(0.1)),
      weights=("float", lambda: np.array([0.5, 0.5]))),
    F(preferences.kto_loss, logp=("float", LOGP), mask=("mask", MASK),
      seq_logp_ref=("float", ADV), desirable=("bools", lambda: np.array([True, False])),
      beta=("pos", const(0.5)), z0=("nonneg", const(0.1)), lambda_d=("nonneg", const(1.0)),
      lambda_u=("nonneg", const(1.5)), weights=("float", lambda: np.array([0.5, 0.5]))),
    F(preferences.bradley_terry_judge, grader=("callable2", const(GRADER))),
    F(preferences.online_dpo_step, mdp=("mdp_any", MDP), policy=("policy", POLICY),
      ref=("policy", POLICY), judge=("judge", const(JUDGE)), beta=("pos", const(0.5)),
      lr=("pos", const(0.1)), rng=("generator", RNG), pairs_per_prompt=("int1", const(1))),
    # multiturn.py (MultiTurnMDP.all_episodes takes no argument: nothing to vary)
    F(_multiturn, V=("int1", const(5)), eos=("int0", const(0)), calls=("ids5", const((1,))),
      spans=("spans", const([(2, 3), (2, 4)])), p_obs=("prob", lambda: np.array(
          [[0.8, 0.2], [0.2, 0.8]])), prior=("prob", lambda: np.array([0.5, 0.5])),
      turn_reward=("turn_reward", const(TURN_REWARD)), max_turns=("int1", const(2)),
      turn_len=("int1", const(2))),
    F(_mt_method("rollout"), policy=("policy", MT_POLICY), K=("int1", const(2)),
      rng=("generator", RNG)),
    F(_mt_method("check"), ep=("episodes", EPISODES)),
    F(multiturn.action_view, env=("mtenv", MT), ep=("episodes", EPISODES)),
    F(multiturn.scatter, x=("float", LOGP), pos=("ids3", IDS(3)), mask=("mask", MASK),
      T=("int1", const(3))),
    # multiturn_values.py
    F(multiturn_values.policy_values, env=("mtenv", MT), probs=("prob", MT_PROBS)),
    F(multiturn_values.soft_optimum, env=("mtenv", MT), pi_ref=("prob", MT_PROBS),
      beta=("pos", const(0.5))),
    F(multiturn_values.kl_objective, env=("mtenv", MT), probs=("prob", MT_PROBS),
      pi_ref=("prob", MT_PROBS), beta=("nonneg", const(0.5))),
    F(multiturn_values.gae_actions, values=("float", LOGP2), rewards=("float", MT_REWARDS),
      mask=("mask", MASK), action_mask=("amask", ACTION_MASK), gamma=("unit", const(0.9)),
      lam=("unit", const(0.5)), carry=("flag", const(True))),
    F(multiturn_values.returns_actions, rewards=("float", MT_REWARDS), mask=("mask", MASK),
      action_mask=("amask", ACTION_MASK), gamma=("unit", const(0.9)),
      carry=("flag", const(False))),
    F(multiturn_values.turn_values, values=("float", lambda: np.arange(6.0)),
      states=("ids6", IDS(6)), mask=("mask", MASK), action_mask=("amask", ACTION_MASK)),
    # calculator.py
    F(calculator.calculator, q=("unit", const(0.8)), cost=("nonneg", const(0.1)),
      max_turns=("int1", const(2)), turn_len=("int1", const(2))),
    F(calculator.calculator_reference, env=("mtenv", MT), eq=("real", const(-3.0)),
      stop=("real", const(3.0))),
    # bigvocab.py (h, W: numpy float32/float64 arrays only, by design: no list form)
    F(bigvocab.chunked_logp, h=("float", H), W=("float", W_UNEMBED),
      tokens=("ids4", IDS(4, (4,))), mask=("mask1", lambda: np.array([1.0, 1.0, 0.0, 1.0])),
      chunk=("int1", const(2))),
    F(bigvocab.chunked_loss_grad, h=("float", H), W=("float", W_UNEMBED),
      tokens=("ids4", IDS(4, (4,))), loss_fn=("loss_fn", const(LOSS_FN)),
      mask=("mask1", lambda: np.array([1.0, 1.0, 0.0, 1.0])), chunk=("int1", const(2))),
]

BAD["float_any"] = _no_extra_axis(bad_float)          # (B,) or (N, K): any 2-D shape is valid
BAD["logits_any"] = _no_extra_axis(bad_logits)       # (..., V)
BAD["ids6_any"] = _no_extra_axis(bad_ids(6))         # states of any shape
BAD["mdp_any"] = lambda v: [("None", None), ("str", "x"), ("object", object())]
BAD["toy_prompt"] = lambda v: [("unknown", "1+1"), ("None", None), ("int", 0)]
BAD["toy_response"] = lambda v: [("-1", (-1,)), ("9", (9,)), ("two tokens", (4, 4)),
                                 ("empty", ()), ("float", (0.5,)), ("str", "4"), ("None", None)]
BAD["toy_grader"] = lambda v: bad_grader(v) + [("unknown", "exact"), ("unhashable", ["gold"])]


def fname(func):
    mod = getattr(func, "__module__", "") or ""
    short = mod.rsplit(".", 1)[-1] if mod.startswith("minirl_lm") else ""
    name = func.__name__
    return f"{short}.{name}" if short and "." not in name else name


def cases():
    """Every (function name, func, valid-args factory, arg, label, bad value): one per bad input."""
    out = []
    for func, args in TABLE:
        params = inspect.signature(func).parameters

        def valid(args=args):
            return {k: f() for k, (kind, f) in args.items()}
        for arg, (kind, factory) in args.items():
            if kind is None:
                continue
            optional = arg in params and params[arg].default is None   # None is the default
            for label, bad in BAD[kind](factory()):
                if not (optional and bad is None):
                    out.append((fname(func), func, valid, arg, label, bad))
    return out


def counts():
    return Counter(c[0] for c in cases())


if __name__ == "__main__":
    c = counts()
    for name, n in sorted(c.items()):
        print(f"{name:45s} {n:4d}")
    print(f"{'total':45s} {sum(c.values()):4d} bad-input cases over {len(c)} public functions")
