"""select: best-of-N (the law of the best of N draws, its reward, win rate and KL, the frontier
against the tilted optimum) and rejection sampling fine-tuning (expert iteration, RAFT, STaR)."""
