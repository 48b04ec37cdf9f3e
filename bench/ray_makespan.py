"""Ray Tune's side of issue 13's makespan benchmark: N no-op trials of T batches of B ms each, at
most S at a time, on one machine. It mirrors `resolute-bench --mode asha --max-rungs 1` (the
same trial count, concurrency, trial length and one validation report at the end of each trial)
and prints the makespan of `Tuner.fit()` against the zero-overhead ideal ceil(N / S) * T * B.

    .ci-work/rayvenv/bin/python bench/ray_makespan.py --trials 1000 --slots 64 --batches 10 --batch-ms 100

Ray is given S logical CPUs (`ray.init(num_cpus=S)`) and each trial asks for one, so S trials run
at once whatever the machine's real core count; actors are reused between trials (Ray's default
for function trainables). `ray.init` is timed separately and not counted in the makespan.
"""

import argparse
import json
import math
import os
import tempfile
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--batch-ms", type=float, default=100.0)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.trials < 1 or args.slots < 1 or args.batches < 1 or not args.batch_ms > 0:
        p.error("--trials, --slots, --batches and --batch-ms must be positive")

    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    import ray
    from ray import tune

    try:  # Ray >= 2.41 reports through ray.tune; older releases through ray.train.
        from ray.tune import report as _report

        def report(metrics):
            _report(metrics)
    except ImportError:  # pragma: no cover - depends on the installed Ray
        from ray import train

        def report(metrics):
            train.report(metrics)

    batches, batch_s = args.batches, args.batch_ms / 1000.0

    def trainable(config):
        for _ in range(batches):
            time.sleep(batch_s)
        lr, x = config["lr"], config["x"]
        report({"loss": 0.05 + (x - 0.3) ** 2 + 0.05 * (math.log10(lr) + 2.5) ** 2, "batches": batches})

    t0 = time.monotonic()
    ray.init(num_cpus=args.slots, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    init_s = time.monotonic() - t0
    with tempfile.TemporaryDirectory(prefix="ray-makespan-") as storage:
        tuner = tune.Tuner(
            tune.with_resources(trainable, {"cpu": 1}),
            param_space={"lr": tune.loguniform(1e-4, 1e-1), "x": tune.uniform(0.0, 1.0)},
            tune_config=tune.TuneConfig(
                num_samples=args.trials,
                max_concurrent_trials=args.slots,
                reuse_actors=True,
                metric="loss",
                mode="min",
                search_alg=tune.search.basic_variant.BasicVariantGenerator(random_state=args.seed),
            ),
            run_config=tune.RunConfig(storage_path=storage, verbose=0)
            if hasattr(tune, "RunConfig")
            else __import__("ray").train.RunConfig(storage_path=storage, verbose=0),
        )
        t1 = time.monotonic()
        results = tuner.fit()
        makespan = time.monotonic() - t1
    errors = sum(1 for r in results if r.error is not None)
    ideal = math.ceil(args.trials / args.slots) * batches * batch_s
    print(
        json.dumps(
            {
                "ray": ray.__version__,
                "trials": len(results),
                "errors": errors,
                "slots": args.slots,
                "trial_s": batches * batch_s,
                "ray_init_s": round(init_s, 2),
                "makespan_s": round(makespan, 2),
                "ideal_s": round(ideal, 2),
                "makespan_over_ideal": round(makespan / ideal, 3),
            }
        )
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
