"""The upstream Python SDK (determined==0.38.1) against Resolute."""

import pytest
from determined.common.api import bindings, errors
from determined.experimental import client

from conftest import Master


def test_login_and_list_users(master: Master) -> None:
    client.login(master=master.url, user="admin", password="")
    names = {u.username for u in client.list_users()}
    assert {"admin", "determined"} <= names
    assert client.get_user_by_name("admin").admin is True
    assert client.get_user_by_name("determined").admin is False


def test_create_and_get_user(master: Master, unique: str) -> None:
    client.login(master=master.url, user="admin", password="")
    name = f"sdk{unique}"
    created = client.create_user(username=name, admin=False, password="SdkPass1x")
    assert created.username == name
    assert created.user_id is not None

    fetched = client.get_user_by_name(name)
    assert fetched.user_id == created.user_id
    assert fetched.username == name
    assert fetched.admin is False
    assert fetched.active is True
    assert name in {u.username for u in client.list_users()}

    me = client.Determined(master=master.url, user=name, password="SdkPass1x").whoami()
    assert me.username == name


def test_user_object_operations(master: Master, unique: str) -> None:
    d = client.Determined(master=master.url, user="admin", password="")
    name = f"ops{unique}"
    user = d.create_user(username=name, admin=False, password="OpsPass1x")

    user.change_display_name("Ops User")
    assert d.get_user_by_name(name).display_name == "Ops User"

    user.change_password("OpsPass2x")
    assert client.Determined(master=master.url, user=name, password="OpsPass2x").whoami().username == name

    user.deactivate()
    assert d.get_user_by_name(name).active is False
    assert name not in {u.username for u in d.list_users(active=True)}
    assert name in {u.username for u in d.list_users()}
    user.activate()
    assert d.get_user_by_name(name).active is True


def test_unknown_user_is_not_found(master: Master) -> None:
    client.login(master=master.url, user="admin", password="")
    with pytest.raises(errors.NotFoundException):
        client.get_user_by_name("no-such-user-anywhere")


def test_wrong_password_is_rejected(master: Master) -> None:
    with pytest.raises((errors.ForbiddenException, errors.UnauthenticatedException)):
        client.Determined(master=master.url, user="admin", password="not-the-password")


def test_list_users_reads_all_pages(fresh_master: Master) -> None:
    # More users than one page of the SDK's paginated read, on a master of its own.
    d = client.Determined(master=fresh_master.url, user="admin", password="")
    for i in range(130):
        d.create_user(username=f"page{i:03d}", admin=False, password="PagePass1x")
    names = [u.username for u in d.list_users()]
    assert len(names) == len(set(names)) == 132

    resp = bindings.get_GetUsers(
        d._session,
        limit=10,
        offset=5,
        sortBy=bindings.v1GetUsersRequestSortBy.NAME,
        orderBy=bindings.v1OrderBy.DESC,
    )
    assert [u.username for u in resp.users] == [f"page{i:03d}" for i in range(124, 114, -1)]
    assert resp.pagination.total == 132
