
# --- multi-process launches (crates/agent/src/harness_shim_distributed.py) ----------------------
# Two lazy patches, applied only when (and if) their module is imported by the task:
#
# 1. torch 1.13's elastic launcher under Python 3.11. `torch.distributed.run` parses its
#    `--redirects`/`--tee` options with `Std.from_str`, which finds the member by iterating the
#    `Std` IntFlag. Python 3.11 stopped yielding zero-valued and multi-bit flags from iteration, so
#    `from_str("0")` (the default) returns None and the launcher dies before any worker starts
#    ("'NoneType' object has no attribute 'get'"). torch 2.0 fixed it by looking the value up
#    (`Std(int(v))`); this does the same, and only when the installed torch has the bug (the
#    check is `from_str("0") is None`). Nothing else in torch changes; any other input still
#    raises as before.
# 2. The harness's pid server socket. `determined.launch.torch_distributed` names it
#    `/tmp/pid_server-<allocation id>`: unique in upstream's containers, each with its own /tmp,
#    but our processes share the host's /tmp, and two processes of one allocation on one host
#    (two agents on a machine) would take each other's socket. The launcher runs as `__main__`,
#    so its functions cannot be patched; the pid server's and clients' own command lines are: in
#    those two processes (`python -m determined.exec.pid_server|pid_client`), and only there, the
#    path gets the container id appended.
def _resolute_torch_std(module):
    std = getattr(module, "Std", None)
    if std is None or not hasattr(std, "from_str"):
        return
    try:
        broken = std.from_str("0") is None
    except Exception:
        return
    if not broken:
        return
    import re

    value_regex = getattr(module, "_VALUE_REGEX", r"^[0123]$")
    mapping_regex = getattr(module, "_MAPPING_REGEX", r"^(\d:[0123],)*(\d:[0123])$")

    def from_str(cls, vm):
        if re.match(value_regex, vm):
            return cls(int(vm))
        if re.match(mapping_regex, vm):
            out = {}
            for m in vm.split(","):
                i, v = m.split(":")
                out[int(i)] = cls(int(v))
            return out
        raise ValueError(f"{vm} does not match: <{value_regex}> or <{mapping_regex}>")

    std.from_str = classmethod(from_str)


def _resolute_pid_server_argv():
    import os

    argv = list(getattr(sys, "orig_argv", []))
    if "-m" not in argv[1:]:
        return
    at = argv.index("-m", 1)
    if argv[at + 1 : at + 2] not in (["determined.exec.pid_server"], ["determined.exec.pid_client"]):
        return
    allocation = os.environ.get("DET_ALLOCATION_ID", "")
    container = os.environ.get("DET_CONTAINER_ID", "")
    if not allocation or not container:
        return
    shared = "/tmp/pid_server-" + allocation
    # The server's argv carries the clients' command line too: both are rewritten alike.
    sys.argv = [shared + "-" + container if arg == shared else arg for arg in sys.argv]


_RESOLUTE_TARGETS["torch.distributed.elastic.multiprocessing.api"] = _resolute_torch_std
_resolute_pid_server_argv()
