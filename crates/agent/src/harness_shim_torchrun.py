
# --- torch.distributed.run stand-in (crates/agent/src/harness_shim_torchrun.py) ---------------
# Upstream 0.38 launches every legacy Trial entrypoint ("model_def:IrisTrial"), a TFKerasTrial too,
# through `python3 -m torch.distributed.run`, because its images carry PyTorch beside TensorFlow.
# A process runtime's TensorFlow venv often has no torch, and the trial dies with "No module named
# 'torch'". For the one-process case (one node, one slot) this stands in for the launcher: it sets
# the torch-elastic rank variables the harness reads (core.DistributedContext.from_torch_distributed)
# and runs the module itself, as torch.distributed.run would. With more processes it says what to
# install. Only the `python -m torch.distributed.run` process is affected, and only without torch.
def _resolute_torchrun_standin():
    import importlib.util
    import os
    import subprocess

    argv = list(getattr(sys, "orig_argv", []))
    if argv[1:3] != ["-m", "torch.distributed.run"] or importlib.util.find_spec("torch") is not None:
        return
    args = argv[3:]
    options = {}
    while args and args[0].startswith("--") and args[0] != "--module":
        name = args.pop(0)[2:]
        options[name] = args.pop(0) if args else ""
    if args and args[0] == "--module":
        args.pop(0)
    nodes = int(options.get("nnodes", "1"))
    procs = int(options.get("nproc_per_node", "1"))
    if nodes != 1 or procs != 1 or not args:
        print(
            "resolute: this legacy Trial is launched with torch.distributed.run for %d node(s) x %d "
            "process(es), and PyTorch is not installed in %s: install torch in it, or set "
            "resources.slots_per_trial: 1." % (nodes, procs, sys.executable),
            file=sys.stderr,
            flush=True,
        )
        # Not sys.exit: site.py would report a SystemExit from sitecustomize as a crash.
        os._exit(1)
    print(
        "resolute: PyTorch is not installed in %s; running the trial as the single process "
        "torch.distributed.run would start (rank 0 of 1)." % sys.executable,
        file=sys.stderr,
        flush=True,
    )
    env = dict(os.environ)
    for key in ("RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK"):
        env[key] = "0"
    for key in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE"):
        env[key] = "1"
    env["MASTER_ADDR"] = options.get("master_addr", "localhost")
    env["MASTER_PORT"] = options.get("master_port", "29400")
    child = subprocess.Popen([sys.executable, "-m"] + args, env=env)
    import signal

    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    sys.stdout.flush()
    os._exit(code if code >= 0 else 128 - code)


_resolute_torchrun_standin()
