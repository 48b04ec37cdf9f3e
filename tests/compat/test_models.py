"""The model registry through the upstream CLI (`det model …`) and SDK (`client.create_model`,
`Model`, `ModelVersion`), registering the checkpoints of a real Iris experiment run by an agent.
Runs on the backend RESOLUTE_COMPAT_DB selects, like the rest of the suite."""

import json
from typing import List, Tuple

import pytest
from determined.common.api import errors
from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, sdk, wait_state, write_config

pytestmark = pytest.mark.experiments


@pytest.fixture(scope="module")
def iris_checkpoints(master: Master, agent: Agent, tmp_path_factory: pytest.TempPathFactory) -> Tuple[int, List[str]]:
    """A completed Iris experiment with two checkpoints (batches 1000 and 2000): (id, uuids)."""
    work = tmp_path_factory.mktemp("iris-models")
    det = DetCli(master.url, work / "det-config")
    det.login("determined")
    config = write_config(
        IRIS / "const.yaml",
        work / "const.yaml",
        work / "checkpoints",
        searcher={"max_length": {"batches": 2000}},
        checkpoint_storage={"save_trial_latest": 2},
        reproducibility={"experiment_seed": 3},
    )
    exp_id = create(det, config, IRIS)
    exp = sdk(master).get_experiment(exp_id)
    wait_state(exp, {ExpState.COMPLETED}, timeout=240, context="the registry's Iris experiment")
    uuids = [c.uuid for c in exp.list_checkpoints()]
    assert len(uuids) == 2, uuids
    return exp_id, uuids


def test_cli_create_register_describe_list(
    master: Master, det: DetCli, iris_checkpoints: Tuple[int, List[str]], unique: str
) -> None:
    _, uuids = iris_checkpoints
    det.login("determined")
    name = f"iris-cli-{unique}"
    out = det.ok("model", "create", name, "--description", "seed 001 classifier")
    assert name in out and "seed 001 classifier" in out, out
    assert "already exists" in det.fails("model", "create", name)

    created = json.loads(det.ok("model", "create", f"{name}-json", "--json"))
    assert created["name"] == f"{name}-json" and created["archived"] is False, created

    out = det.ok("model", "register-version", name, uuids[0])
    assert uuids[0] in out, out
    registered = json.loads(det.ok("model", "register-version", name, uuids[1], "--json"))
    assert registered["modelVersion"]["version"] == 2, registered
    assert registered["modelVersion"]["checkpoint"]["uuid"] == uuids[1]

    # describe shows the newest version unless asked for another.
    out = det.ok("model", "describe", name)
    assert uuids[1] in out and uuids[0] not in out, out
    out = det.ok("model", "describe", name, "--version", "1")
    assert uuids[0] in out, out
    described = json.loads(det.ok("model", "describe", name, "--json"))
    assert described["name"] == name and described["description"] == "seed 001 classifier", described

    out = det.ok("model", "list-versions", name)
    assert uuids[0] in out and uuids[1] in out, out
    versions = json.loads(det.ok("model", "list-versions", name, "--json"))
    assert [v["version"] for v in versions["modelVersions"]] == [1, 2], versions
    assert versions["modelVersions"][0]["checkpoint"]["training"]["trialId"] > 0

    listed = det.ok("model", "list")
    assert name in listed, listed
    listed = json.loads(det.ok("model", "list", "--json", "--sort-by", "name", "--order-by", "desc"))
    names = [m["name"] for m in listed]
    assert names == sorted(names, reverse=True) and name in names, names
    in_default = json.loads(det.ok("model", "list", "--json", "-w", "Uncategorized"))
    assert name in [m["name"] for m in in_default]

    # Bad input: a clean non-zero exit naming the cause.
    assert "no-such-model" in det.fails("model", "describe", "no-such-model")
    out = det.fails("model", "register-version", name, "00000000-0000-4000-8000-000000000000")
    assert "00000000-0000-4000-8000-000000000000" in out and "not found" in out, out

    det.ok("model", "delete", f"{name}-json")
    assert "not found" in det.fails("model", "describe", f"{name}-json")


def test_sdk_model_lifecycle(master: Master, iris_checkpoints: Tuple[int, List[str]], unique: str) -> None:
    _, uuids = iris_checkpoints
    d = client.Determined(master=master.url, user="determined", password="")
    name = f"iris-sdk-{unique}"
    model = d.create_model(name, description="sdk", metadata={"framework": "keras"}, labels=["seed"])
    assert (model.name, model.description, model.metadata, model.labels) == (name, "sdk", {"framework": "keras"}, ["seed"])
    assert model.workspace_id == 1 and model.archived is False
    with pytest.raises(errors.APIException, match="already exists"):
        d.create_model(name)

    assert model.get_version() is None, "no versions yet"
    version = model.register_version(uuids[1])
    assert version.model_version == 1 and version.model_name == name
    assert version.checkpoint is not None and version.checkpoint.uuid == uuids[1]
    assert version.checkpoint.training is not None and version.checkpoint.training.experiment_id == iris_checkpoints[0]
    model.register_version(uuids[0])
    assert model.get_version().model_version == 2
    assert model.get_version(1).checkpoint.uuid == uuids[1]
    assert [v.model_version for v in model.list_versions()] == [2, 1], "newest first"
    with pytest.warns(FutureWarning):
        assert len(model.get_versions()) == 2

    version.set_name("best")
    version.set_notes("val accuracy 0.9")
    version.reload()
    assert (version.name, version.notes) == ("best", "val accuracy 0.9")

    # By name or id; metadata merged and removed; labels, description, archive.
    same = d.get_model(model.model_id)
    assert same.name == name
    model.add_metadata({"classes": 3})
    model.remove_metadata(["framework"])
    model.set_labels(["seed", "prod"])
    model.set_description("iris classifier")
    model.archive()
    fetched = d.get_model(name)
    assert fetched.metadata == {"classes": 3}
    assert fetched.labels == ["seed", "prod"]
    assert fetched.description == "iris classifier"
    assert fetched.archived is True
    assert name in [m.name for m in d.list_models(sort_by=client.ModelSortBy.NAME)]
    with pytest.raises(errors.APIException, match="archived"):
        model.register_version(uuids[1])
    model.unarchive()
    assert d.get_model(name).archived is False

    # A registered checkpoint cannot be deleted.
    with pytest.raises(errors.APIException, match="model registry"):
        d.get_checkpoint(uuids[1]).delete()

    version.delete()
    with pytest.raises(errors.NotFoundException):
        model.get_version(1)
    model.delete()
    with pytest.raises(errors.NotFoundException, match=name):
        d.get_model(name)


def test_other_users_read_but_cannot_change(master: Master, iris_checkpoints: Tuple[int, List[str]], unique: str) -> None:
    admin = client.Determined(master=master.url, user="admin", password="")
    other = f"viewer{unique}"
    admin.create_user(username=other, admin=False, password="Viewer1x")
    owner = client.Determined(master=master.url, user="determined", password="")
    name = f"iris-owned-{unique}"
    owner.create_model(name).register_version(iris_checkpoints[1][0])

    stranger = client.Determined(master=master.url, user=other, password="Viewer1x")
    theirs = stranger.get_model(name)
    assert theirs.get_version().checkpoint.uuid == iris_checkpoints[1][0]
    with pytest.raises(errors.ForbiddenException):
        theirs.set_description("mine now")
    with pytest.raises(errors.ForbiddenException):
        theirs.delete()
    stranger.create_model(f"{name}-theirs").delete()

    admin.get_model(name).delete()
    with pytest.raises(errors.NotFoundException):
        owner.get_model(name)

