"""Seed 000: the blog's curl sequence, run verbatim against a fresh master, checked with the SDK."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from determined.common.api import authentication, errors
from determined.experimental import client

from conftest import Master

SCRIPT = Path(__file__).with_name("seed000_curl.sh")


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_seed000_curl_sequence(fresh_master: Master) -> None:
    env = dict(
        os.environ,
        detMaster=fresh_master.url,
        ADMIN_PASSWORD="",
        USER_PASSWORD="UserPass1",
        NEW_USER_PASSWORD="NewUserPass2",
    )
    proc = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stderr

    # The grep/awk/cut pipeline found a token, and jq found testuser1's numeric id.
    m = re.search(r"seed000: token extracted: (.*); testuser1 id: (\S+)", proc.stdout)
    assert m, proc.stdout
    assert m.group(1).startswith("yes"), f"token extraction failed:\n{proc.stdout}"
    assert m.group(2).isdigit(), f"user id lookup failed:\n{proc.stdout}"

    # The create call printed the created user.
    assert '"username":"testuser1"' in proc.stdout.replace(" ", "")

    # The password posted as a bare JSON string is the one that works now, with the upstream SDK
    # (which sends it salted and hashed, unlike curl).
    # (`authentication.login` bypasses the token cache, so the old password is really checked.)
    with pytest.raises((errors.ForbiddenException, errors.UnauthenticatedException)):
        authentication.login(fresh_master.url, "testuser1", "UserPass1")
    me = client.Determined(master=fresh_master.url, user="testuser1", password="NewUserPass2").whoami()
    assert me.username == "testuser1"
    assert me.admin is False and me.active is True
    assert str(me.user_id) == m.group(2)
