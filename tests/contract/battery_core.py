"""The bad-input battery's table, part core (minirl_lm/core/):
logprob, mdp, policy and the engine's kinds themselves. See battery.py."""

import numpy as np
from battery_data import GRADER, IDS, LOGITS, LOGP, MASK, MDP, POLICY, RNG, ROLLOUT, THETA, F, V, const

from minirl_lm import boundary as B
from minirl_lm.core import logprob
from minirl_lm.core import policy as pol_mod
from minirl_lm.core import validate as CV
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy


def _mdp_method(name):
    def call(**kw):
        return getattr(MDP(), name)(**kw)

    call.__name__ = f"TokenMDP.{name}"
    call.__wrapped__ = getattr(TokenMDP, name)  # for the defaults
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


def _kind(read):
    """A kind of the engine as a function of (value, name): the rows below try it alone."""

    def kind(x=None, name="x", rng=None):
        return read(x if rng is None else rng, name, {})

    kind.__name__ = kind.__qualname__ = f"kind_{getattr(read, '__name__', 'read')}"
    return kind


TABLE = [
    # logprob.py
    F(logprob.log_softmax, logits=("logits_any", LOGITS)),
    F(logprob.masked_sum, x=("float_neginf", LOGP), mask=("mask", MASK)),
    F(logprob.masked_mean, x=("float_neginf", LOGP), mask=("mask", MASK)),
    F(logprob.token_logp, logits=("logits", LOGITS), tokens=("ids4", IDS(4)), mask=("mask", MASK)),
    F(
        logprob.token_logp_backward,
        logits=("logits", LOGITS),
        tokens=("ids4", IDS(4)),
        mask=("mask", MASK),
        dlogp=("float", LOGP),
    ),
    # mdp.py
    F(
        _tokenmdp,
        prompts=("prompts", lambda: ["a", "b"]),
        V=("int1", const(3)),
        eos=("int0", const(0)),
        max_len=("width", const(2)),
        ids=("option", const("enumerate")),
        max_states=("int1", const(100)),
        capacity=("int1", const(10)),
    ),
    F(_mdp_method("step"), prefix=("nonterminal", const((1,))), y=("int0", const(1))),
    F(_mdp_method("is_terminal"), prefix=("prefix", const((1,)))),
    F(_mdp_method("state_id"), n=("int0", const(1)), prefix=("nonterminal", const((1,)))),
    F(_mdp_method("prefix_of"), s=("int0", const(3))),
    F(_mdp_method("rollback"), cp=("checkpoint", const(None))),
    F(
        _mdp_method("rollout"),
        policy=("policy", POLICY),
        K=("count", const(2)),
        rng=("generator", RNG),
        prompts=("prompt_ids", lambda: np.array([1, 0])),
    ),
    F(_mdp_method("score"), grader=("grader", const(GRADER)), rollout=("rollout", ROLLOUT)),
    # policy.py
    F(pol_mod.softmax_table, theta=("float_neginf", THETA)),
    F(pol_mod.log_softmax_table, theta=("float_neginf", THETA)),
    F(_tabpol, theta=("float_neginf", THETA)),
    F(_pol_method("sample"), states=("ids6_any", IDS(6)), rng=("generator", RNG)),
    F(_pol_method("logp"), states=("ids6", IDS(6)), tokens=("ids3", IDS(3)), mask=("mask", MASK)),
    F(
        _pol_method("backward"),
        states=("ids6", IDS(6)),
        tokens=("ids3", IDS(3)),
        mask=("mask", MASK),
        dlogp=("float", LOGP),
    ),
    # the engine's kinds, read alone (the argument's name is passed as its name: the message starts with it)
    F(_kind(B.TOKENS), x=("any_float", LOGP), name=V(const("x"))),
    F(_kind(B.MASK), x=("mask", MASK), name=V(const("x"))),
    F(_kind(B.POSITIVE), x=("pos", const(0.5)), name=V(const("x"))),
    F(_kind(B.one_of(("a", "b"))), x=("option", const("a")), name=V(const("x"))),
    F(_kind(B.generator), rng=("generator2", RNG), name=V(const("rng"))),
    F(CV.real_result, value=("real_result", const(0.5)), name=V(const("value"))),
]
