"""Wire details the upstream client and the seed scripts depend on, checked over raw HTTP."""

import json
import urllib.error
import urllib.request
from typing import Any, Dict, Optional, Tuple

from conftest import Master


def call(
    master: Master, method: str, path: str, body: Any = None, token: Optional[str] = None
) -> Tuple[int, Dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(master.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, headers, raw = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, dict(e.headers), e.read()
    return status, headers, json.loads(raw) if raw else None


def admin_token(master: Master) -> str:
    status, _, body = call(
        master, "POST", "/api/v1/auth/login", {"username": "admin", "password": "", "isHashed": True}
    )
    assert status == 200, body
    return body["token"]


def test_info_is_unauthenticated(master: Master) -> None:
    status, _, body = call(master, "GET", "/info")
    assert status == 200
    assert body["version"] == "0.38.1"
    for key in ("master_id", "cluster_id", "cluster_name"):
        assert key in body, body


def test_login_response_shape(master: Master) -> None:
    status, headers, body = call(
        master, "POST", "/api/v1/auth/login", {"username": "admin", "password": "", "isHashed": True}
    )
    assert status == 200, body
    assert list(body)[0] == "token", "seed 000 cuts the token out of the raw body: it must come first"
    assert body["user"]["username"] == "admin" and body["user"]["admin"] is True
    # Seed 000 greps the `curl -i` output for "token": no header line may contain it.
    assert not [h for h in headers if "token" in f"{h}: {headers[h]}"], headers


def test_me(master: Master) -> None:
    status, _, body = call(master, "GET", "/api/v1/me", token=admin_token(master))
    assert status == 200, body
    assert body["user"]["username"] == "admin"


def test_requests_without_token_are_401(master: Master) -> None:
    for path in ("/api/v1/me", "/api/v1/users"):
        status, _, body = call(master, "GET", path)
        assert status == 401, (path, body)


def test_error_body_shape(master: Master) -> None:
    # The upstream client reads error messages from {"error": {"code", "reason", "error"}}.
    status, _, body = call(master, "GET", "/api/v1/users/no-such-user/by-username", token=admin_token(master))
    assert status == 404, body
    assert isinstance(body["error"]["error"], str) and body["error"]["error"], body


def test_wrong_password_is_401(master: Master) -> None:
    status, _, body = call(
        master, "POST", "/api/v1/auth/login", {"username": "admin", "password": "nope", "isHashed": False}
    )
    assert status == 401 and body["error"]["reason"] == "Unauthenticated", body


def test_logout_invalidates_token(master: Master) -> None:
    token = admin_token(master)
    status, _, body = call(master, "POST", "/api/v1/auth/logout", token=token)
    assert status == 200, body
    status, _, body = call(master, "GET", "/api/v1/me", token=token)
    assert status == 401, body
