"""The master as a process: restart keeps its data, SIGTERM stops it cleanly."""

import time

from determined.common.api import authentication
from determined.experimental import client

from conftest import Master, pg_admin_url, psql


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


def test_master_uses_the_selected_backend(master: Master) -> None:
    """RESOLUTE_COMPAT_DB really decides where the data goes (not a silent SQLite fallback)."""
    if master.db == "postgres":
        db_url = pg_admin_url().rsplit("/", 1)[0] + "/" + master.env["DET_DB_NAME"]
        tables = psql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'", db_url)
        assert int(tables) > 0, "the master created no tables in its PostgreSQL database"
        assert not list((master.workdir / "data").glob("*.db")), "a SQLite file appeared on postgres"
    else:
        assert (master.workdir / "data" / "resolute.db").exists()
