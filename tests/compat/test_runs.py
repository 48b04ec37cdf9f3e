"""The runs API, project notes, the bulk move by filters and background workspace deletion through
upstream 0.38.1: its bindings for `POST /api/v1/runs` (SearchRuns, whose `v1FlatRun` parsing checks
our shape) and `/api/v1/runs/{archive,unarchive,move,delete}` (no CLI command calls them), the
SDK's `Project.add_note`/`remove_note`, `post_MoveExperiments` with `filters`, and `det workspace
delete` polling a workspace that is deleted in the background."""

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from determined.common.api import bindings, errors
from determined.experimental import client

from conftest import DetCli, Master
from experiments import IRIS, TERMINAL, create, wait_state
from test_workspaces import admin, iris_config

SEARCH = {
    "name": "random",
    "metric": "val_categorical_accuracy",
    "smaller_is_better": False,
    "max_trials": 2,
    "max_length": {"batches": 100},
}


def field(column: str, operator: str, value: Any) -> Dict[str, Any]:
    return {"kind": "field", "columnName": column, "location": "LOCATION_TYPE_RUN", "operator": operator, "value": value}


def run_filter(children: List[Dict[str, Any]], show_archived: bool = False, conjunction: str = "and") -> str:
    group = {"kind": "group", "conjunction": conjunction, "children": children}
    return json.dumps({"filterGroup": group, "showArchived": show_archived})


def search(d: client.Determined, **kw: Any) -> bindings.v1SearchRunsResponse:
    return bindings.post_SearchRuns(d._session, body=bindings.v1SearchRunsRequest(**kw))


def test_runs_list_and_bulk_actions(master: Master, det: DetCli, unique: str, tmp_path: Path) -> None:
    det.login("admin", "")
    d = admin(master)
    ws = d.create_workspace(f"runs-{unique}")
    src, dst = ws.create_project("src"), ws.create_project("dst")
    single = create(det, iris_config(tmp_path, "a", name="runs-single"), IRIS, "--project_id", str(src.id), "--paused")
    multi = create(det, iris_config(tmp_path, "b", name="runs-search", searcher=SEARCH), IRIS, "--project_id", str(src.id), "--paused")

    listed = search(d, projectId=src.id, sort="id=asc", limit=10)
    assert listed.pagination.total == 3
    by_experiment: Dict[int, List[bindings.v1FlatRun]] = {}
    for run in listed.runs:
        assert run.projectId == src.id and run.projectName == "src" and run.workspaceName == f"runs-{unique}"
        by_experiment.setdefault(run.experiment.id, []).append(run)
    assert [r.experiment.name for r in by_experiment[single]] == ["runs-single"]
    assert by_experiment[single][0].experiment.isMultitrial is False
    assert len(by_experiment[multi]) == 2 and all(r.experiment.isMultitrial for r in by_experiment[multi])
    assert by_experiment[multi][0].experiment.searcherType == "random"
    single_run = by_experiment[single][0].id
    search_runs = [r.id for r in by_experiment[multi]]

    named = search(d, projectId=src.id, filter=run_filter([field("experimentName", "contains", "SINGLE")]))
    assert [r.id for r in named.runs] == [single_run]
    page = search(d, projectId=src.id, sort="experimentName=desc", offset=1, limit=1)
    assert [r.id for r in page.runs] == [search_runs[0]] and page.pagination.total == 3, "runs-single first"

    with pytest.raises(errors.APIException) as bad:
        search(d, sort="id=sideways")
    assert bad.value.status_code == 400 and "sort" in str(bad.value)
    with pytest.raises(errors.APIException) as bad:
        search(d, filter=run_filter([field("nope", "=", 1)]))
    assert bad.value.status_code == 400 and "filter.filterGroup.children[0].columnName" in str(bad.value)
    with pytest.raises(errors.NotFoundException):
        search(d, projectId=987654)

    # Only terminal runs are archived.
    body = bindings.v1ArchiveRunsRequest(projectId=src.id, runIds=[single_run])
    refused = bindings.post_ArchiveRuns(d._session, body=body)
    assert [(r.id, r.error) for r in refused.results] == [(single_run, "Run is not in terminal state.")]
    for eid in (single, multi):
        det.ok("experiment", "kill", str(eid))
        wait_state(d.get_experiment(eid), TERMINAL, timeout=60)
    done = bindings.post_ArchiveRuns(d._session, body=body)
    assert [(r.id, r.error) for r in done.results] == [(single_run, "")]
    hidden = search(d, projectId=src.id, filter=run_filter([]))
    assert single_run not in [r.id for r in hidden.runs]
    shown = search(d, projectId=src.id, filter=run_filter([], show_archived=True))
    assert [r.archived for r in shown.runs if r.id == single_run] == [True]
    body = bindings.v1UnarchiveRunsRequest(projectId=src.id, runIds=[single_run])
    assert [r.error for r in bindings.post_UnarchiveRuns(d._session, body=body).results] == [""]

    # Move: a search's runs are skipped with skipMultitrial; the single run moves with its experiment.
    body = bindings.v1MoveRunsRequest(
        destinationProjectId=dst.id, sourceProjectId=src.id, runIds=[single_run, search_runs[0]], skipMultitrial=True
    )
    moved = {r.id: r.error for r in bindings.post_MoveRuns(d._session, body=body).results}
    assert moved == {single_run: "", search_runs[0]: f"Skipping run '{search_runs[0]}' (part of multi-trial)."}
    assert bindings.get_GetExperiment(d._session, experimentId=single).experiment.projectId == dst.id

    # Delete by filter: the search's runs.
    body = bindings.v1DeleteRunsRequest(projectId=src.id, runIds=[], filter=run_filter([field("experimentId", "=", multi)]))
    deleted = bindings.post_DeleteRuns(d._session, body=body)
    assert sorted((r.id, r.error) for r in deleted.results) == [(i, "") for i in sorted(search_runs)]
    assert search(d, projectId=src.id).runs == []
    with pytest.raises(errors.NotFoundException):
        bindings.get_GetTrial(d._session, trialId=search_runs[0])


def test_project_notes_and_move_by_filters(master: Master, det: DetCli, unique: str, tmp_path: Path) -> None:
    det.login("admin", "")
    d = admin(master)
    ws = d.create_workspace(f"notes-{unique}")
    p = ws.create_project("noted")
    p.add_note("plan", "# try a smaller learning rate")
    p.add_note("log", "run 1: 0.93")
    assert p.notes == [{"name": "plan", "contents": "# try a smaller learning rate"}, {"name": "log", "contents": "run 1: 0.93"}]
    fresh = ws.get_project("noted")
    assert [n["name"] for n in fresh.notes] == ["plan", "log"], "describe returns them"
    p.remove_note("plan")
    assert [n["name"] for n in ws.get_project("noted").notes] == ["log"]
    with pytest.raises(ValueError):
        p.remove_note("plan")
    p.archive()
    with pytest.raises(errors.APIException) as refused:
        p.add_note("late", "x")
    assert refused.value.status_code == 400 and "archived" in str(refused.value)
    p.unarchive()

    # The bulk move by filters: the source project's experiments named like "keep", but one.
    src, dst = ws.create_project("src"), ws.create_project("dst")
    ids = [
        create(det, iris_config(tmp_path, n, name=n), IRIS, "--project_id", str(src.id), "--paused")
        for n in ("keep-1", "keep-2", "other")
    ]
    filters = bindings.v1BulkExperimentFilters(name="keep", excludedExperimentIds=[ids[1]])
    body = bindings.v1MoveExperimentsRequest(destinationProjectId=dst.id, experimentIds=[], projectId=src.id, filters=filters)
    moved = bindings.post_MoveExperiments(d._session, projectId=src.id, body=body)
    assert [(r.id, r.error) for r in moved.results] == [(ids[0], "")]
    projects = [bindings.get_GetExperiment(d._session, experimentId=i).experiment.projectId for i in ids]
    assert projects == [dst.id, src.id, src.id]
    for eid in ids:
        det.ok("experiment", "kill", str(eid))


def test_workspace_deleted_in_the_background(master: Master, det: DetCli, unique: str, tmp_path: Path) -> None:
    det.login("admin", "")
    d = admin(master)
    name = f"fading-{unique}"
    ws = d.create_workspace(name)
    p = ws.create_project("p")
    ws.create_project("q")
    exp = create(det, iris_config(tmp_path, "a", name="in-fading"), IRIS, "--project_id", str(p.id), "--paused")

    # Refused while the experiment has not ended: the CLI reports why and fails.
    out = det.fails("workspace", "delete", name, "--yes", timeout=90)
    assert "not in a terminal state" in out and str(exp) in out, out
    det.ok("experiment", "kill", str(exp))
    wait_state(d.get_experiment(exp), TERMINAL, timeout=60)

    # Then deleted in the background: `completed: false`, the CLI polls until the workspace is gone.
    out = det.ok("workspace", "delete", name, "--yes", timeout=90)
    assert f"Started deletion of workspace {name}" in out and "Workspace deleted successfully." in out, out
    with pytest.raises(errors.NotFoundException):
        d.get_workspace(name)
    with pytest.raises(errors.NotFoundException):
        bindings.get_GetExperiment(d._session, experimentId=exp)
