"""Exact expectations over every outcome: the engine the exact examples share.

Every "bias", "variance" and "fixed point" the site prints is an expectation over every outcome,
never a sampled estimate. Three structures keep that cheap:

- `scores`: an update on a tabular softmax is linear in per-token coefficients,
  `g = sum_t c_t (e_{y_t} - pi(.|s_t))` in row `s_t`, eq. (exact_linear); its moments over one
  draw need no dense `(B, T, S V)` array, because a response never visits a state twice.
- `groups`: a group of K i.i.d. responses is a multiset with a multinomial probability,
  eq. (exact_multinomial); the moments of a sum over the group are finite sums over multisets
  (or over index coincidences, `iid_moments`).
- `batch`: statistics shared by the prompts of a batch (a batch standard deviation, a token
  count) couple them; their moments need the joint outcome only through per-prompt marginals,
  one pass over the joint (a Numba kernel beside its NumPy twin).
- `tree`: sums and products along a response go by recursion over the prefix tree, with no list
  of responses: the sequence KL and E[W^2] of the importance weight at any length.
"""
