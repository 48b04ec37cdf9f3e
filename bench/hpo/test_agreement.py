"""Checks that the Rust (`hpo_bench --eval`) and Python implementations of the synthetic function
agree: true loss, noisy observation and epoch duration, at a few points. Exits non-zero if not."""

import json
import random
import subprocess
import sys

import synthetic


def main(binary: str) -> int:
    rng = random.Random(7)
    points = [[0.3, 0.7, 0.5, 0.2, 81], [0.0, 0.0, 0.0, 0.0, 1], [1.0, 1.0, 1.0, 1.0, 27]]
    points += [[rng.random() for _ in range(4)] + [rng.randint(1, 81)] for _ in range(20)]
    function = {"noise_seed": 12345, "sigma": 0.02}
    spec = {"method": {"name": "random", "max_trials": 1}, "budget": 0, "max_epochs": 81, "function": function, "points": points}
    out = subprocess.run([binary, "--eval", "-"], input=json.dumps(spec), capture_output=True, text=True, check=True)
    rust = json.loads(out.stdout)
    bad = 0
    for p, r in zip(points, rust):
        x, t = p[:4], int(p[4])
        py = {
            "true": float(synthetic.true_loss(x, t)),
            "observed": synthetic.observed_loss(function["noise_seed"], function["sigma"], x, t),
            "duration": synthetic.epoch_duration(function["noise_seed"], x),
        }
        for k in py:
            if abs(py[k] - r[k]) > 1e-12 * max(1.0, abs(py[k])):
                print(f"mismatch at {p} {k}: python {py[k]!r} rust {r[k]!r}")
                bad += 1
    print(f"agreement: {len(points)} points, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "target/release/examples/hpo_bench"))
