"""Workspaces and projects through the upstream 0.38.1 CLI and SDK: create, list, describe, edit,
archive, pin, delete; projects in them; experiments created into a project (by id and by the
config's `workspace`/`project`), moved between projects, refused in archived ones; workspace-level
checkpoint storage merged into experiments; workspace agent user groups (admin only)."""

import json
import os
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
from determined.common.api import bindings, errors
from determined.experimental import client
from ruamel import yaml

from conftest import Agent, DetCli, Master
from experiments import IRIS, TERMINAL, create, wait_state
from test_task_users import cluster, printed, shared_dir  # noqa: F401 (fixtures)

ExpState = client.ExperimentState


def admin(master: Master) -> client.Determined:
    return client.Determined(master=master.url, user="admin", password="")


def iris_config(tmp_path: Path, file: str, **changes: Any) -> Path:
    """The Iris example's config with no checkpoint storage of its own, plus `changes`."""
    config: Dict[str, Any] = yaml.YAML(typ="safe", pure=True).load((IRIS / "const.yaml").read_text())
    config.pop("checkpoint_storage", None)
    config.update(changes)
    path = tmp_path / f"{file}.yaml"
    with path.open("w") as f:
        yaml.YAML(typ="safe", pure=True).dump(config, f)
    return path


def test_workspace_cli_lifecycle(det: DetCli, unique: str) -> None:
    det.login("admin", "")
    name = f"ws-{unique}"
    created = json.loads(det.ok("workspace", "create", name, "--json"))
    assert created["name"] == name and created["username"] == "admin" and not created["immutable"]
    assert name in det.ok("workspace", "list")

    described = json.loads(det.ok("workspace", "describe", name, "--json"))
    assert described["id"] == created["id"] and described["numProjects"] == 0

    dup = det.fails("workspace", "create", name)
    assert "already taken" in dup, dup

    renamed = f"ws2-{unique}"
    edited = json.loads(det.ok("workspace", "edit", name, "--name", renamed, "--json"))
    assert edited["name"] == renamed
    det.fails("workspace", "describe", name)

    assert "Successfully archived" in det.ok("workspace", "archive", renamed)
    assert json.loads(det.ok("workspace", "describe", renamed, "--json"))["archived"] is True
    assert "Successfully un-archived" in det.ok("workspace", "unarchive", renamed)
    assert json.loads(det.ok("workspace", "describe", renamed, "--json"))["archived"] is False

    assert f"Successfully deleted workspace {renamed}" in det.ok("workspace", "delete", renamed, "--yes")
    assert renamed not in det.ok("workspace", "list")


def test_builtin_workspace_refuses_changes(det: DetCli) -> None:
    det.login("admin", "")
    out = det.fails("workspace", "edit", "Uncategorized", "--name", "Other")
    assert "built-in" in out, out
    out = det.fails("workspace", "delete", "Uncategorized", "--yes")
    assert "built-in" in out, out
    assert json.loads(det.ok("workspace", "describe", "Uncategorized", "--json"))["immutable"] is True


def test_workspace_list_filters_and_pins(master: Master, unique: str) -> None:
    d = admin(master)
    session = d._session
    a = bindings.post_PostWorkspace(session, body=bindings.v1PostWorkspaceRequest(name=f"pa-{unique}")).workspace
    b = bindings.post_PostWorkspace(session, body=bindings.v1PostWorkspaceRequest(name=f"pb-{unique}")).workspace
    bindings.post_PinWorkspace(session, id=a.id)
    pinned = {w.id for w in bindings.get_GetWorkspaces(session, pinned=True).workspaces}
    assert a.id in pinned and b.id not in pinned
    got = bindings.get_GetWorkspace(session, id=a.id).workspace
    assert got.pinned and got.pinnedAt
    bindings.post_UnpinWorkspace(session, id=a.id)
    assert not bindings.get_GetWorkspace(session, id=a.id).workspace.pinned

    bindings.post_ArchiveWorkspace(session, id=b.id)
    archived = {w.id for w in bindings.get_GetWorkspaces(session, archived=True).workspaces}
    assert b.id in archived and a.id not in archived
    by_name = bindings.get_GetWorkspaces(session, name=f"PA-{unique}").workspaces
    assert [w.id for w in by_name] == [a.id], "name matches ignoring case"
    assert bindings.get_GetWorkspaces(session, nameCaseSensitive=f"PA-{unique}").workspaces == []
    with pytest.raises(errors.NotFoundException):
        bindings.get_GetWorkspace(session, id=987654)


def test_projects_cli(det: DetCli, unique: str) -> None:
    det.login("admin", "")
    ws = f"wp-{unique}"
    det.ok("workspace", "create", ws)
    project = json.loads(det.ok("project", "create", ws, "alpha", "--description", "first one", "--json"))
    assert project["name"] == "alpha" and project["description"] == "first one" and project["key"]
    assert "already taken" in det.fails("project", "create", ws, "alpha")

    listing = det.ok("workspace", "list-projects", ws)
    assert "alpha" in listing and "first one" in listing
    assert "alpha" in det.ok("project", "list", ws)
    described = json.loads(det.ok("project", "describe", ws, "alpha", "--json"))
    assert described["id"] == project["id"] and described["numExperiments"] == 0

    edited = json.loads(det.ok("project", "edit", ws, "alpha", "--new_name", "beta", "--description", "renamed", "--json"))
    assert (edited["name"], edited["description"]) == ("beta", "renamed")

    assert "Successfully archived project beta" in det.ok("project", "archive", ws, "beta")
    assert json.loads(det.ok("project", "describe", ws, "beta", "--json"))["archived"] is True
    det.ok("project", "unarchive", ws, "beta")
    assert json.loads(det.ok("workspace", "describe", ws, "--json"))["numProjects"] == 1

    assert "Successfully deleted project beta" in det.ok("project", "delete", ws, "beta", "--yes")
    assert "beta" not in det.ok("project", "list", ws)


def test_sdk_workspaces_and_projects(master: Master, unique: str) -> None:
    d = admin(master)
    ws = d.create_workspace(f"sdk-{unique}")
    assert d.get_workspace(f"sdk-{unique}").id == ws.id
    assert ws.id in {w.id for w in d.list_workspaces()}
    p = ws.create_project("models", description="d1")
    assert ws.get_project("models").id == p.id
    assert [x.name for x in ws.list_projects()] == ["models"]
    p.set_description("d2")
    p.set_name("models2")
    p.reload()
    assert (p.name, p.description) == ("models2", "d2")
    p.archive()
    p.reload()
    assert p.archived
    p.unarchive()
    assert p.list_experiments() == []
    ws.delete_project("models2")
    assert ws.list_projects() == []
    d.delete_workspace(f"sdk-{unique}")
    with pytest.raises(errors.NotFoundException):
        d.get_workspace(f"sdk-{unique}")


def test_experiments_in_projects(master: Master, det: DetCli, unique: str, tmp_path: Path) -> None:
    det.login("admin", "")
    d = admin(master)
    ws = d.create_workspace(f"we-{unique}")
    src = ws.create_project("src")
    dst = ws.create_project("dst")

    exp_id = create(det, iris_config(tmp_path, "a", name="in-src"), IRIS, "--project_id", str(src.id), "--paused")
    exp = bindings.get_GetExperiment(d._session, experimentId=exp_id).experiment
    assert (exp.projectId, exp.workspaceId, exp.projectName, exp.workspaceName) == (src.id, ws.id, "src", f"we-{unique}")
    listed = det.ok("project", "list-experiments", f"we-{unique}", "src")
    assert "in-src" in listed
    assert [e.id for e in src.list_experiments()] == [exp_id]

    by_config = create(det, iris_config(tmp_path, "b", name="by-config", workspace=f"we-{unique}", project="dst"), IRIS, "--paused")
    assert bindings.get_GetExperiment(d._session, experimentId=by_config).experiment.projectId == dst.id

    assert f'Moved experiment {exp_id} to project "dst"' in det.ok("experiment", "move", str(exp_id), f"we-{unique}", "dst")
    assert bindings.get_GetExperiment(d._session, experimentId=exp_id).experiment.projectId == dst.id
    e = d.get_experiment(exp_id)
    e.move_to_project(f"we-{unique}", "src")
    assert bindings.get_GetExperiment(d._session, experimentId=exp_id).experiment.projectId == src.id
    bulk = bindings.post_MoveExperiments(
        d._session,
        projectId=src.id,
        body=bindings.v1MoveExperimentsRequest(destinationProjectId=dst.id, experimentIds=[exp_id, 999999], projectId=src.id),
    )
    results = {r.id: r.error for r in bulk.results}
    assert results[exp_id] == "" and "not" in results[999999]
    assert det.fails("experiment", "move", str(exp_id), f"we-{unique}", "nope")

    # Archived project, then archived workspace: launching is refused, naming which.
    src.archive()
    out = det.fails("experiment", "create", str(iris_config(tmp_path, "c", name="x")), str(IRIS), "--project_id", str(src.id))
    assert "archived" in out and '"src"' in out, out
    src.unarchive()
    bindings.post_ArchiveWorkspace(d._session, id=ws.id)
    out = det.fails("experiment", "create", str(iris_config(tmp_path, "d", name="x")), str(IRIS), "--project_id", str(src.id))
    assert "archived" in out and f"we-{unique}" in out, out
    bindings.post_UnarchiveWorkspace(d._session, id=ws.id)

    # Deleting a project holding an unfinished experiment fails with the reason; after it ends, it works.
    out = det.fails("project", "delete", f"we-{unique}", "dst", "--yes", timeout=90)
    assert "not in a terminal state" in out, out
    for eid in (exp_id, by_config):
        det.ok("experiment", "kill", str(eid))
        wait_state(d.get_experiment(eid), TERMINAL, timeout=60)
    assert "Successfully deleted project dst" in det.ok("project", "delete", f"we-{unique}", "dst", "--yes")
    with pytest.raises(errors.NotFoundException):
        bindings.get_GetExperiment(d._session, experimentId=exp_id)
    d.delete_workspace(f"we-{unique}")


def test_workspace_checkpoint_storage(master: Master, det: DetCli, unique: str, tmp_path: Path) -> None:
    det.login("admin", "")
    storage = tmp_path / "ws-storage.yaml"
    storage.write_text(f"type: shared_fs\nhost_path: {tmp_path / 'ckpts'}\nsave_trial_best: 3\n")
    ws = f"wc-{unique}"
    created = json.loads(det.ok("workspace", "create", ws, "--checkpoint-storage-config-file", str(storage), "--json"))
    assert created["checkpointStorageConfig"]["host_path"] == str(tmp_path / "ckpts")
    project = json.loads(det.ok("project", "create", ws, "p", "--json"))
    d = admin(master)

    inherits = create(det, iris_config(tmp_path, "a", name="inherits"), IRIS, "--project_id", str(project["id"]), "--paused")
    cfg = bindings.get_GetExperiment(d._session, experimentId=inherits).experiment.config
    assert cfg["checkpoint_storage"]["host_path"] == str(tmp_path / "ckpts")
    assert cfg["checkpoint_storage"]["save_trial_best"] == 3

    own = {"type": "shared_fs", "host_path": str(tmp_path / "own"), "save_trial_best": 1}
    wins = create(det, iris_config(tmp_path, "b", name="own", checkpoint_storage=own), IRIS, "--project_id", str(project["id"]), "--paused")
    cfg = bindings.get_GetExperiment(d._session, experimentId=wins).experiment.config
    assert (cfg["checkpoint_storage"]["host_path"], cfg["checkpoint_storage"]["save_trial_best"]) == (str(tmp_path / "own"), 1)

    bad = det.fails("workspace", "edit", ws, "--checkpoint-storage-config", '{"type": "floppy"}')
    assert "checkpointStorageConfig.type" in bad, bad
    reset = json.loads(det.ok("workspace", "edit", ws, "--checkpoint-storage-config", "{}", "--json"))
    assert reset.get("checkpointStorageConfig") is None
    after = create(det, iris_config(tmp_path, "c", name="after"), IRIS, "--project_id", str(project["id"]), "--paused")
    cfg = bindings.get_GetExperiment(d._session, experimentId=after).experiment.config
    assert cfg["checkpoint_storage"].get("host_path") != str(tmp_path / "ckpts")
    for eid in (inherits, wins, after):
        det.ok("experiment", "kill", str(eid))


def test_workspace_agent_user_group(det: DetCli, unique: str) -> None:
    det.login("admin", "")
    ws = f"wg-{unique}"
    created = json.loads(
        det.ok("workspace", "create", ws, "--agent-uid", "4242", "--agent-gid", "4343", "--agent-user", "wsuser", "--agent-group", "wsgroup", "--json")
    )
    assert created["agentUserGroup"] == {"agentUid": 4242, "agentGid": 4343, "agentUser": "wsuser", "agentGroup": "wsgroup"}
    bad = det.fails("workspace", "edit", ws, "--agent-uid", "-5", "--agent-gid", "1", "--agent-user", "u", "--agent-group", "g")
    assert "agentUserGroup.agentUid" in bad, bad

    user = f"wgu{unique}"
    det.ok("user", "create", user, "--password", "WsPass1x")
    det.login(user, "WsPass1x")
    out = det.fails("workspace", "create", f"{ws}-2", "--agent-uid", "1", "--agent-gid", "1", "--agent-user", "a", "--agent-group", "b")
    assert "agentUserGroup" in out and "admin" in out, out
    out = det.fails("workspace", "edit", ws, "--name", "stolen")
    assert "only admins" in out, out


@pytest.mark.skipif(os.geteuid() != 0, reason="only an agent running as root can run tasks as other accounts")
def test_workspace_agent_user_comes_before_the_owners_link(cluster: Tuple[Master, Agent], isolated_client_config: Path) -> None:
    """A task in a workspace with an agent user group runs as that account, ahead of the owner's
    own link; outside it the owner's link applies."""
    master, _ = cluster
    det = DetCli(master.url, isolated_client_config)
    det.login("admin")
    det.ok("user", "create", "carol", "--password", "Carol-pw-1234")
    det.ok("user", "link-with-agent-user", "carol", "--agent-uid", "20001", "--agent-gid", "20001",
           "--agent-user", "carol", "--agent-group", "carol")
    det.ok("workspace", "create", "team", "--agent-uid", "20007", "--agent-gid", "20008",
           "--agent-user", "teamuser", "--agent-group", "teamgroup")
    det.login("carol", "Carol-pw-1234")
    inside = det.ok("cmd", "run", "-w", "team", "id -u; id -g", timeout=120)
    assert printed(inside, "20007") and printed(inside, "20008"), inside
    outside = det.ok("cmd", "run", "id -u", timeout=120)
    assert printed(outside, "20001"), outside

    det.login("admin")
    det.ok("workspace", "archive", "team")
    det.login("carol", "Carol-pw-1234")
    refused = det.fails("cmd", "run", "-w", "team", "true")
    assert "archived" in refused, refused
