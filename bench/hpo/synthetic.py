"""The synthetic multi-fidelity benchmark, identical to `crates/searcher/examples/hpo_bench.rs`.

x in [0,1]^4, t = epochs trained (>= 1):
  final(x) = 0.05 + (x0-0.3)^2 + 0.8 (x1-0.7)^2 + 0.6 (x2-0.5)^2 + 0.4 (x3-0.2)^2
             + 0.05 (1 - cos(6 pi (x1-0.7)))
  alpha(x) = 0.3 + 1.2 x0        (a high "learning rate" learns fast but ends worse: curves cross)
  start(x) = 1.0 + 0.5 x3
  loss(x, t) = final(x) + (start(x) - final(x)) (1 + t)^-alpha(x)
  observed(x, t) = loss(x, t) + sigma sqrt(3) (2 u(x, t) - 1)     (uniform noise, std sigma)
  epoch duration(x) = 0.5 + u(x, 2^32)                            (simulated seconds per epoch)
u is SplitMix64 chained over (noise_seed, IEEE bits of x0..x3, t), mapped to [0, 1).

The objective a search is scored on is the noise-free loss(x, max_epochs) of the best trial it has
trained to max_epochs; regret subtracts the global minimum of loss(., max_epochs).
"""

import heapq
import math
import struct

import numpy as np

DIMS = 4
MASK = (1 << 64) - 1


def splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def unit_hash(seed: int, x, t: int) -> float:
    h = seed & MASK
    for xi in x:
        h = splitmix64(h ^ struct.unpack("<Q", struct.pack("<d", float(xi)))[0])
    h = splitmix64(h ^ t)
    return (h >> 11) / float(1 << 53)


def final_loss(x):
    return (
        0.05
        + (x[0] - 0.3) ** 2
        + 0.8 * (x[1] - 0.7) ** 2
        + 0.6 * (x[2] - 0.5) ** 2
        + 0.4 * (x[3] - 0.2) ** 2
        + 0.05 * (1.0 - np.cos(6.0 * math.pi * (x[1] - 0.7)))
    )


def true_loss(x, t):
    """Noise-free loss after t epochs; x may be a list or a (4, n) array."""
    fin = final_loss(x)
    alpha = 0.3 + 1.2 * x[0]
    start = 1.0 + 0.5 * x[3]
    return fin + (start - fin) * (1.0 + t) ** (-alpha)


def observed_loss(noise_seed: int, sigma: float, x, t: int) -> float:
    return float(true_loss(x, t)) + sigma * math.sqrt(3.0) * (2.0 * unit_hash(noise_seed, x, t) - 1.0)


def epoch_duration(noise_seed: int, x) -> float:
    return 0.5 + unit_hash(noise_seed, x, 1 << 32)


def optimum(max_epochs: int) -> float:
    """Global minimum of loss(., max_epochs) on [0,1]^4: a coarse grid, then shrinking grids."""
    lo, hi = np.zeros(DIMS), np.ones(DIMS)
    best_x, best = None, math.inf
    for _ in range(12):
        axes = [np.linspace(lo[i], hi[i], 25) for i in range(DIMS)]
        grid = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")])
        vals = true_loss(grid, max_epochs)
        k = int(np.argmin(vals))
        if vals[k] < best:
            best, best_x = float(vals[k]), grid[:, k]
        width = (hi - lo) / 6
        lo, hi = np.clip(best_x - width, 0, 1), np.clip(best_x + width, 0, 1)
    return best


class Workers:
    """Simulated parallel workers in simulated time, as in hpo_bench.rs: each epoch of trial x ends
    duration(x) after the previous one; ties go to the trial started first."""

    def __init__(self, noise_seed: int):
        self.noise_seed = noise_seed
        self.heap = []  # (next_done, trial_number, x, epochs, handle)
        self.now = 0.0
        self.started = 0

    def __len__(self):
        return len(self.heap)

    def start(self, x, handle):
        heapq.heappush(self.heap, (self.now + epoch_duration(self.noise_seed, x), self.started, x, 0, handle))
        self.started += 1

    def next_epoch(self):
        """Trains the earliest-finishing trial one epoch: returns (x, epochs, handle, key)."""
        done, number, x, epochs, handle = heapq.heappop(self.heap)
        self.now = done
        return x, epochs + 1, handle, number

    def resume(self, x, epochs, handle, number):
        heapq.heappush(self.heap, (self.now + epoch_duration(self.noise_seed, x), number, x, epochs, handle))
