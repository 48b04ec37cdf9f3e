"""Issue 14 item 9: users as the upstream 0.38.1 SDK and CLI drive them — a failed login is the
401 the SDK raises as `UnauthenticatedException`, a deactivated account's login says so, display
names follow upstream's rules, and `det user list` prints upstream's columns from our responses."""

from typing import Dict, List

import pytest
from determined.common import api
from determined.common.api import authentication, errors
from determined.experimental import client

from conftest import DetCli, Master


def admin_session(master: Master) -> api.Session:
    return authentication.login(master.url, "admin", "")


def test_failed_logins_raise_unauthenticated(master: Master, det: DetCli, unique: str) -> None:
    name = f"sdk{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--password", "Right1pass")
    # Wrong password and unknown user: the same exception, the one scripts catch.
    with pytest.raises(errors.UnauthenticatedException):
        authentication.login(master.url, name, "wrong")
    with pytest.raises(errors.UnauthenticatedException):
        authentication.login(master.url, f"nobody{unique}", "whatever")
    # The SDK's own entry point: client.login() → login_with_cache.
    with pytest.raises(errors.UnauthenticatedException):
        client.login(master=master.url, user=name, password="wrong")
    assert authentication.login(master.url, name, "Right1pass").username == name
    # The upstream CLI turns the 401 into its own wording: a clean failure, no traceback.
    out = det.fails("user", "login", name, input="wrong\n")
    assert "Invalid username/password" in out, out


def test_deactivated_login_says_why(master: Master, det: DetCli, unique: str) -> None:
    name = f"gone{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--password", "Right1pass")
    det.ok("user", "deactivate", name)
    # The right password: upstream's ForbiddenException carrying the reason.
    with pytest.raises(errors.ForbiddenException) as refused:
        authentication.login(master.url, name, "Right1pass")
    assert "not active" in str(refused.value), refused.value
    out = det.fails("user", "login", name, input="Right1pass\n")
    assert "not active" in out and "deactivated" in out, out
    # A wrong password reveals nothing about the account.
    with pytest.raises(errors.UnauthenticatedException):
        authentication.login(master.url, name, "wrong")
    # Our CLI says the same.
    det.env["DET_PASS"] = "Right1pass"
    try:
        ours = det.ours("-u", name, "user", "whoami")
    finally:
        det.env.pop("DET_PASS")
    assert ours.returncode != 0
    assert "deactivated" in ours.stderr and "Invalid username/password" not in ours.stderr, ours.stderr


def test_display_names_follow_upstream_rules(master: Master, det: DetCli, unique: str) -> None:
    name = f"disp{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--password", "Right1pass")
    d = client.Determined._from_session(admin_session(master))
    user = d.get_user_by_name(name)
    user.change_display_name(f"  Disp {unique}  ")
    assert d.get_user_by_name(name).display_name == f"Disp {unique}", "trimmed"
    for bad in ["Dïsp", "admin", "Determined", "ADMIN"]:
        with pytest.raises(errors.APIException) as refused:
            user.change_display_name(bad)
        assert refused.value.status_code == 400, refused.value
    # Another user's username, in any case, is taken.
    det.ok("user", "create", f"other{unique}", "--password", "Right1pass")
    with pytest.raises(errors.APIException) as refused:
        user.change_display_name(f"OTHER{unique}")
    assert refused.value.status_code == 400 and "similar username" in str(refused.value), refused.value
    out = det.fails("user", "edit", name, "--display-name", "Dëtermined")
    assert "non-ASCII" in out, out


def parse_table(text: str) -> List[Dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    headers = [h.strip() for h in lines[0].split("|")]
    rows = []
    for line in lines[2:]:
        rows.append(dict(zip(headers, (c.strip() for c in line.split("|")))))
    return rows


UPSTREAM_COLUMNS = [
    "User Id", "Username", "Display Name", "Admin", "Active", "Remote",
    "Agent Uid", "Agent Gid", "Agent User", "Agent Group",
]


def test_user_list_columns(master: Master, det: DetCli, unique: str) -> None:
    name = f"cols{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--password", "Right1pass")
    det.ok("user", "edit", name, "--display-name", f"Cols {unique}")
    det.ok(
        "user", "link-with-agent-user", name,
        "--agent-uid", "20001", "--agent-gid", "20002", "--agent-user", "cols", "--agent-group", "ml",
    )
    out = det.ok("user", "list")
    rows = parse_table(out)
    assert list(rows[0].keys()) == UPSTREAM_COLUMNS, out
    row = next(r for r in rows if r["Username"] == name)
    assert row["Display Name"] == f"Cols {unique}"
    assert (row["Admin"], row["Active"], row["Remote"]) == ("False", "True", "False"), row
    assert (row["Agent Uid"], row["Agent Gid"], row["Agent User"], row["Agent Group"]) == ("20001", "20002", "cols", "ml")
    admin = next(r for r in rows if r["Username"] == "admin")
    assert admin["Admin"] == "True" and admin["Agent Uid"] == "N/A", admin
    # Our CLI prints the same columns.
    ours = det.ours("user", "list")
    assert ours.returncode == 0, ours.stderr
    assert [h.strip() for h in ours.stdout.splitlines()[0].split("|")] == UPSTREAM_COLUMNS, ours.stdout
