"""The master as a process: restart keeps its data, SIGTERM stops it cleanly."""

import time

from determined.common.api import authentication
from determined.experimental import client

from conftest import Master


def test_sigterm_stops_master_cleanly(fresh_master: Master) -> None:
    started = time.monotonic()
    status = fresh_master.stop(timeout=10)
    assert status is not None, f"master ignored SIGTERM for 10 s; log:\n{fresh_master.log_tail()}"
    assert status == 0, f"master exited {status} on SIGTERM; log:\n{fresh_master.log_tail()}"
    assert time.monotonic() - started < 10


def test_users_survive_restart(fresh_master: Master, unique: str) -> None:
    d = client.Determined(master=fresh_master.url, user="admin", password="")
    d.create_user(username=f"keep{unique}", admin=False, password="KeepPass1x")
    assert fresh_master.stop() == 0

    again = fresh_master.restart()
    authentication.login(again.url, f"keep{unique}", "KeepPass1x")
