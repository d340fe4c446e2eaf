"""The K-sweep in plain NumPy: the same experiment as examples/k_sweep.py, without the library.

The benchmark's other column (examples/benchmark.py, section main): what a user who reads the
chapter's toy (a 4 x 9 tabular softmax, the gold grader, beta = 0, lr = 2, 6400 responses per prompt,
np.random.default_rng(1) restarted for each K) writes with NumPy and the standard library only.
It prints the K-sweep lines of examples/k_sweep.py, digit for digit.

    $ python examples/_plain_k_sweep.py
"""

import numpy as np

ANSWERS = ("4", "12", "64", "81")
RESPONSES = ("1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81")
GOLD = np.array([[float(y == a) for y in RESPONSES] for a in ANSWERS])  # (N, V) the verifier
N, V = GOLD.shape


def softmax(theta):
    z = theta - theta.max(axis=1, keepdims=True)  # (N, V)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train(K, n_responses=6400, seed=1, lr=2.0):
    rng = np.random.default_rng(seed)
    theta = np.zeros((N, V))
    theta[:, -1] = -4.0  # the hedge
    for _ in range(n_responses // K):
        pi = softmax(theta)  # (N, V)
        y = np.stack([rng.choice(V, K, p=pi[x]) for x in range(N)])  # (N, K), prompt by prompt
        r = GOLD[np.arange(N)[:, None], y]  # (N, K)
        A = (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, keepdims=True) + 1e-8)  # (N, K)
        onehot = np.eye(V)[y]  # (N, K, V)
        theta += lr * (A[:, :, None] * (onehot - pi[:, None, :])).mean(axis=1)  # (N, V)
    return theta


def main():
    for K in (1, 2, 4, 8, 32):
        success = (softmax(train(K)) * GOLD).sum(axis=1).mean()
        print(f"K = {K:2d}: success of a sampled response {success:.3f}")


if __name__ == "__main__":
    main()
