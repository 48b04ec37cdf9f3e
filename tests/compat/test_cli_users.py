"""The upstream `det` CLI (0.38.1) against Resolute: master info and the user workflow of seed 000."""

from conftest import DetCli


def test_master_info(det: DetCli) -> None:
    out = det.ok("master", "info")
    assert "version: 0.38.1" in out


def test_login_admin_with_blank_password(det: DetCli) -> None:
    det.login("admin", "")
    assert "You are logged in as user 'admin'" in det.ok("user", "whoami")


def test_first_time_user_workflow(det: DetCli) -> None:
    """Seed 000's CLI path: the admin creates testuser1 and sets its password, and so on."""
    det.login("admin", "")

    det.ok("user", "create", "testuser1", "--password", "TestPass1")
    # Admin changing another user's password: new password and confirmation read from stdin.
    det.ok("user", "change-password", "testuser1", input="TestPass2\nTestPass2\n")

    listing = det.ok("user", "list")
    assert "testuser1" in listing
    assert "admin" in listing and "determined" in listing

    assert "You are logged in as user 'admin'" in det.ok("user", "whoami")

    det.ok("user", "deactivate", "testuser1")
    det.fails("user", "login", "testuser1", input="TestPass2\n")
    assert "testuser1" not in det.ok("user", "list"), "`det user list` shows active users only"
    assert "testuser1" in det.ok("user", "list", "--all")

    det.ok("user", "activate", "testuser1")
    det.login("testuser1", "TestPass2")
    assert "You are logged in as user 'testuser1'" in det.ok("user", "whoami")
    # The password set by the admin replaced the one given at creation.
    det.fails("user", "login", "testuser1", input="TestPass1\n")

    det.ok("user", "logout")
    # With no active user the CLI falls back to `determined` with a blank password.
    assert "You are logged in as user 'determined'" in det.ok("user", "whoami")


def test_user_changes_own_password(det: DetCli, unique: str) -> None:
    name = f"self{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--password", "OldPass1x")
    det.login(name, "OldPass1x")
    # Without a target the active user's own password changes, and the CLI logs in again with it.
    det.ok("user", "change-password", input="NewPass1x\nNewPass1x\n")
    assert f"You are logged in as user '{name}'" in det.ok("user", "whoami")
    det.ok("user", "logout")
    det.fails("user", "login", name, input="OldPass1x\n")
    det.login(name, "NewPass1x")


def test_create_user_prompts_for_password(det: DetCli, unique: str) -> None:
    name = f"prompt{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, input="Prompted1x\nPrompted1x\n")
    det.login(name, "Prompted1x")


def test_create_admin_user(det: DetCli, unique: str) -> None:
    name = f"adm{unique}"
    det.login("admin", "")
    det.ok("user", "create", name, "--admin", "--password", "AdminPass1")
    det.login(name, "AdminPass1")
    # An admin can create users.
    det.ok("user", "create", f"by{unique}", "--password", "ByAdmin1x")


def test_login_with_username_prompt(det: DetCli) -> None:
    # `det user login` with no user asks for it with input(), then for the password.
    det.ok("user", "login", input="admin\n\n")
    assert "You are logged in as user 'admin'" in det.ok("user", "whoami")
