"""Error paths as the upstream CLI shows them: non-zero exit and a clear message, never a crash."""

import re

from conftest import DetCli


def test_wrong_password(det: DetCli) -> None:
    out = det.fails("user", "login", "admin", input="definitely-wrong\n")
    assert re.search(r"invalid|forbidden|credentials", out, re.I), out


def test_unknown_user_login(det: DetCli) -> None:
    out = det.fails("user", "login", "no-such-user", input="whatever\n")
    assert re.search(r"invalid|forbidden|credentials|not found", out, re.I), out


def test_unknown_user_activate(det: DetCli) -> None:
    det.login("admin", "")
    out = det.fails("user", "activate", "no-such-user")
    assert re.search(r"not found", out, re.I), out


def test_non_admin_cannot_create_user(det: DetCli, unique: str) -> None:
    det.login("admin", "")
    det.ok("user", "create", f"plain{unique}", "--password", "PlainPass1")
    det.login(f"plain{unique}", "PlainPass1")
    out = det.fails("user", "create", f"nope{unique}", "--password", "NopePass1")
    assert re.search(r"forbidden|permission|admin", out, re.I), out

    det.login("admin", "")
    assert f"nope{unique}" not in det.ok("user", "list", "--all")


def test_default_user_is_not_admin(det: DetCli, unique: str) -> None:
    # No login at all: the CLI falls back to `determined` with a blank password.
    det.fails("user", "create", f"fallback{unique}", "--password", "Fallback1x")


def test_duplicate_user(det: DetCli, unique: str) -> None:
    det.login("admin", "")
    det.ok("user", "create", f"dup{unique}", "--password", "DupPass1x")
    out = det.fails("user", "create", f"dup{unique}", "--password", "DupPass1x")
    assert re.search(r"exists|duplicate|conflict", out, re.I), out


def test_change_password_mismatch(det: DetCli) -> None:
    det.login("admin", "")
    out = det.fails("user", "change-password", "determined", input="OnePass1x\nTwoPass1x\n")
    assert "Passwords do not match" in out


def test_master_unreachable(det: DetCli) -> None:
    det.master_url = "http://127.0.0.1:9"  # discard port: nothing listens
    out = det.fails("master", "info")
    assert re.search(r"master|connect|reach", out, re.I), out
