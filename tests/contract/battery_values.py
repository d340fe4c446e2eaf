"""The bad-input battery's table, part values: values (minirl_lm/values/). See battery.py."""

import numpy as np
from battery_data import ADV, GRADER, IDS, LOGP, LOGP2, MASK, MDP, PROBS, PROBS2, F, const

from minirl_lm.values import critic, optimum

TABLE = [
    # critic.py
    F(
        critic.per_token_rewards,
        terminal_reward=("float", ADV),
        logp=("float", LOGP),
        logp_ref=("float", LOGP2),
        mask=("pmask", MASK),
        beta=("nonneg", const(0.1)),
    ),
    F(
        critic.td_errors,
        values=("float", lambda: np.arange(6.0)),
        states=("ids6", IDS(6)),
        rewards=("float", LOGP),
        mask=("pmask", MASK),
        gamma=("unit", const(0.9)),
    ),
    F(
        critic.gae,
        deltas=("float", LOGP),
        mask=("pmask", MASK),
        gamma=("unit", const(0.9)),
        lam=("unit", const(0.5)),
    ),
    F(critic.monte_carlo_returns, rewards=("float", LOGP), mask=("pmask", MASK), gamma=("unit", const(0.9))),
    F(
        critic.value_loss,
        values=("float", lambda: np.arange(6.0)),
        states=("ids6", IDS(6)),
        targets=("float", LOGP),
        mask=("pmask", MASK),
    ),
    F(
        critic.clipped_value_loss,
        vpreds=("float", LOGP),
        values_old=("float", LOGP2),
        returns=("float", MASK),
        mask=("pmask", MASK),
        clip=("pos", const(0.2)),
    ),
    F(
        critic.fit_values,
        values=("float", lambda: np.arange(6.0)),
        states=("ids6", IDS(6)),
        rewards=("float", LOGP),
        mask=("pmask", MASK),
        gamma=("unit", const(0.9)),
        lr=("pos", const(0.5)),
        target=("option", const("td0")),
    ),
    # optimum.py
    F(
        optimum.tilt,
        pi_ref=("prob", lambda: np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])),
        q=("float", lambda: np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]])),
        beta=("pos", const(0.5)),
    ),
    F(
        optimum.tilted_optimum,
        pi_ref=("prob", PROBS),
        reward=("float", lambda: PROBS2() * 3),
        beta=("pos", const(0.5)),
    ),
    F(
        optimum.kl_objective,
        pi=("prob", PROBS2),
        pi_ref=("prob", PROBS2),
        reward=("float", lambda: PROBS() * 3),
        beta=("nonneg", const(0.5)),
        weights=("prob", lambda: np.array([0.5, 0.5])),
    ),
    F(
        optimum.optimal_value,
        pi_ref=("prob", PROBS),
        reward=("float", lambda: PROBS2() * 3),
        beta=("pos", const(0.5)),
        weights=("prob", lambda: np.array([0.5, 0.5])),
    ),
    F(
        optimum.soft_values,
        mdp=("mdp", MDP),
        pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)),
        grader=("grader", const(GRADER)),
        beta=("pos", const(0.5)),
    ),
    F(
        optimum.tilted_optimum_tree,
        mdp=("mdp", MDP),
        pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)),
        grader=("grader", const(GRADER)),
        beta=("pos", const(0.5)),
    ),
    F(
        optimum.kl_objective_tree,
        mdp=("mdp", MDP),
        pi=("prob", lambda: np.full((6, 3), 1 / 3)),
        pi_ref=("prob", lambda: np.full((6, 3), 1 / 3)),
        grader=("grader", const(GRADER)),
        beta=("nonneg", const(0.5)),
        weights=("prob", lambda: np.array([0.5, 0.5])),
    ),
    F(optimum.exploit_threshold, gap=("pos", const(1.0)), log_odds=("pos", const(4.0))),
    F(optimum.hedge_odds, gap=("real", const(1.0)), log_odds=("real", const(4.0)), beta=("pos", const(0.25))),
]
