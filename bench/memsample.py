#!/usr/bin/env python3
"""Samples a running master's memory by source, without stopping it or a special build.

    python3 bench/memsample.py PID [--every 15] [--binary PATH]

Every `--every` seconds one line: seconds since the start, VmRSS, RssAnon, AnonHugePages (MiB),
SQLite's bytes in use and its high water (`sqlite3Stat`, SQLite's own counters: page caches,
prepared statements, sorters, everything SQLite allocates), mimalloc's committed memory
(`subproc_main.stats.committed.current`: what the allocator holds from the OS, whoever uses it),
the thread count, and the size of the database's WAL. SQLite keeps those counters only when
its build has memory statistics on (`sqlite3Config.bMemstat`, the struct's first field); main's
bundled SQLite is built with `-DSQLITE_DEFAULT_MEMSTATUS=0` (`.cargo/config.toml`), so its two
columns read `off` there rather than a misleading 0. Reads `/proc/PID/mem` at the static
symbols' addresses (`nm` of the binary plus its load base from `/proc/PID/maps`). The offsets
into mimalloc's structures are those of the vendored mimalloc v3.3.2 (libmimalloc-sys 0.1.49);
they were printed by a C program compiled against its headers (`offsetof`).
"""
import argparse, os, re, struct, subprocess, sys, time

MI_STATS_OFFSET = 1472          # offsetof(mi_subproc_t, stats)
MI_COMMITTED = 64               # offsetof(mi_stats_t, committed); mi_stat_count_t {total, peak, current}
MI_RESERVED = 40


def symbols(binary):
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    want = {"sqlite3Stat", "sqlite3Config", "subproc_main"}
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in want:
            found[parts[2]] = int(parts[0], 16)
    return found


def load_base(pid, binary):
    real = os.path.realpath(binary)
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        if len(fields) >= 6 and os.path.realpath(fields[5]) == real and fields[2] == "00000000":
            return int(fields[0].split("-")[0], 16)
    raise SystemExit(f"{binary} is not mapped in {pid}")


def status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def kib(text):
    return int(text.split()[0])


def rollup(pid):
    out = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        m = re.match(r"(\w+):\s+(\d+) kB", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def wal_size(pid):
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.endswith("-wal"):
            try:
                return os.path.getsize(target)
            except OSError:
                return 0
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("--every", type=float, default=15)
    ap.add_argument("--binary")
    a = ap.parse_args()
    binary = a.binary or os.readlink(f"/proc/{a.pid}/exe")
    syms = symbols(binary)
    base = load_base(a.pid, binary)
    # A position-independent binary's symbols are offsets from its first mapping.
    stat_addr = syms.get("sqlite3Stat")
    config_addr = syms.get("sqlite3Config")
    mi_addr = syms.get("subproc_main")
    mib = 1024 * 1024
    print("t_s rss_mib anon_mib anonhuge_mib sqlite_used_mib sqlite_hiwater_mib mi_committed_mib mi_reserved_mib threads wal_mib", flush=True)
    start = time.time()
    while True:
        try:
            st = status(a.pid)
            ru = rollup(a.pid)
            with open(f"/proc/{a.pid}/mem", "rb") as mem:
                sq_used = sq_hi = mi_comm = mi_res = float("nan")
                memstat = True
                if config_addr is not None:
                    mem.seek(base + config_addr)
                    memstat = struct.unpack("<i", mem.read(4))[0] != 0
                if stat_addr is not None and memstat:
                    mem.seek(base + stat_addr)
                    raw = mem.read(160)
                    now = struct.unpack("<10q", raw[:80])
                    mx = struct.unpack("<10q", raw[80:160])
                    sq_used, sq_hi = now[0] / mib, mx[0] / mib
                if mi_addr is not None:
                    mem.seek(base + mi_addr + MI_STATS_OFFSET + MI_COMMITTED)
                    mi_comm = struct.unpack("<3q", mem.read(24))[2] / mib
                    mem.seek(base + mi_addr + MI_STATS_OFFSET + MI_RESERVED)
                    mi_res = struct.unpack("<3q", mem.read(24))[2] / mib
            sqlite = f"{sq_used:.2f} {sq_hi:.2f}" if memstat else "off off"
            print(f"{time.time() - start:.0f} {kib(st['VmRSS']) / 1024:.1f} {kib(st['RssAnon']) / 1024:.1f} "
                  f"{ru.get('AnonHugePages', 0) / 1024:.1f} {sqlite} {mi_comm:.1f} {mi_res:.1f} "
                  f"{st['Threads']} {wal_size(a.pid) / mib:.1f}", flush=True)
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(a.every)


if __name__ == "__main__":
    main()
