//! The runs API beyond kill/pause/resume, as 0.38's bindings send it: `POST /api/v1/runs`
//! (filter JSON, sort text, offset/limit, projectId) and `/api/v1/runs/{archive,unarchive,delete,
//! move}` with one `{id, error}` per run; project notes; the bulk move by filters.

use serde_json::{Value, json};

use crate::harness::{TestMaster, assert_error};

const SINGLE: &str = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      hyperparameters: {lr: 0.1}\n";
const SEARCH: &str = "entrypoint: python3 train.py\nhyperparameters: {lr: {type: double, minval: 0.1, maxval: 0.2}}\n\
                      searcher: {name: random, metric: loss, max_trials: 2, max_length: {batches: 10}}\n";

/// A paused experiment (its trials exist when the create returns) and its run ids.
async fn create(m: &TestMaster, token: &str, name: &str, body: &str) -> (i64, Vec<i64>) {
    let config = format!("name: {name}\n{body}");
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": false})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();
    let trials = m.get(&format!("/api/v1/experiments/{id}/trials"), Some(token)).await;
    let runs = trials.body["trials"].as_array().unwrap().iter().map(|t| t["id"].as_i64().unwrap()).collect();
    (id, runs)
}

fn filter(children: Value, show_archived: bool) -> String {
    json!({"filterGroup": {"kind": "group", "conjunction": "and", "children": children}, "showArchived": show_archived}).to_string()
}

fn ids(r: &crate::harness::Reply) -> Vec<i64> {
    r.body["runs"].as_array().unwrap_or_else(|| panic!("{}", r.text)).iter().map(|x| x["id"].as_i64().unwrap()).collect()
}

async fn kill(m: &TestMaster, token: &str, id: i64) {
    let r = m.post(&format!("/api/v1/experiments/{id}/kill"), Some(token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

pub async fn runs_list_filters_sorts_and_pages(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let (single, single_runs) = create(m, &admin, "runs-alpha", SINGLE).await;
    let (search, search_runs) = create(m, &admin, "runs-beta", SEARCH).await;
    assert_eq!((single_runs.len(), search_runs.len()), (1, 2));

    let r = m.post("/api/v1/runs", Some(&admin), json!({"projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut all = single_runs.clone();
    all.extend(&search_runs);
    assert_eq!(ids(&r), all, "by id by default");
    assert_eq!(r.body["pagination"]["total"], 3);
    let row = &r.body["runs"][1];
    assert_eq!(row["experiment"]["id"], search, "{row}");
    assert_eq!(row["experiment"]["name"], "runs-beta");
    assert_eq!(row["experiment"]["searcherType"], "random");
    assert_eq!(row["experiment"]["searcherMetric"], "loss");
    assert_eq!(row["experiment"]["isMultitrial"], true);
    assert_eq!((row["projectId"].as_i64(), row["projectName"].as_str()), (Some(1), Some("Uncategorized")));
    assert_eq!((row["workspaceId"].as_i64(), row["checkpointSize"].as_str()), (Some(1), Some("0")));
    assert_eq!(row["archived"], false);
    assert!(row["hyperparameters"]["lr"].is_number(), "{row}");

    // Filter: the experiment name contains "alpha" OR the run is one of the search's (by experiment id).
    let f = json!({"filterGroup": {"kind": "group", "conjunction": "or", "children": [
        {"kind": "field", "columnName": "experimentName", "location": "LOCATION_TYPE_RUN", "operator": "contains", "value": "ALPHA"},
        {"kind": "field", "columnName": "experimentId", "location": "LOCATION_TYPE_RUN", "operator": "=", "value": search}]},
        "showArchived": false});
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": f.to_string(), "sort": "experimentName=desc,id=asc"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut expected = search_runs.clone();
    expected.extend(&single_runs);
    assert_eq!(ids(&r), expected, "beta's runs first");
    let multi = filter(json!([{"kind": "field", "columnName": "isExpMultitrial", "operator": "=", "value": false}]), false);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": multi})).await;
    assert_eq!(ids(&r), single_runs);
    let hp = filter(
        json!([{"kind": "field", "columnName": "hp.lr", "location": "LOCATION_TYPE_HYPERPARAMETERS", "operator": "=", "value": 0.1}]),
        false,
    );
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": hp})).await;
    assert_eq!(ids(&r), single_runs, "{}", r.text);

    // Paging: the total counts every match.
    let r = m.post("/api/v1/runs", Some(&admin), json!({"offset": 1, "limit": 1})).await;
    assert_eq!(ids(&r), vec![search_runs[0]]);
    assert_eq!((r.body["pagination"]["total"].as_i64(), r.body["pagination"]["startIndex"].as_i64()), (Some(3), Some(1)));

    // Bad input names the field; an unknown project is a 404.
    let bad = filter(json!([{"kind": "field", "columnName": "nope", "operator": "=", "value": 1}]), false);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": bad})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.body["error"]["error"].as_str().unwrap().contains("filter.filterGroup.children[0].columnName"), "{}", r.text);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"sort": "id=sideways"})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("sort: invalid sort direction"), "{}", r.text);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": "{not json"})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/runs", Some(&admin), json!({"projectId": 4242})).await;
    assert_error(&r, 404, "NotFound");
    let r = m.post("/api/v1/runs", None, json!({})).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let _ = single;
}

pub async fn runs_archive_delete_and_move(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let (single, single_runs) = create(m, &admin, "act-single", SINGLE).await;
    let (search, search_runs) = create(m, &admin, "act-search", SEARCH).await;
    let run = single_runs[0];

    // Not terminal yet: archive and delete refuse, per run.
    let r = m.post("/api/v1/runs/archive", Some(&admin), json!({"runIds": [run, 999_999], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["results"],
        json!([{"id": run, "error": "Run is not in terminal state."}, {"id": 999_999, "error": "Run with id '999999' not found in project with id '1'"}])
    );
    let r = m.post("/api/v1/runs/delete", Some(&admin), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.body["results"], json!([{"id": run, "error": "Run is not in a terminal state."}]), "{}", r.text);

    kill(m, &admin, single).await;
    kill(m, &admin, search).await;
    // Someone else's runs: refused per run.
    m.create_user(&admin, "eve", "Eve12345").await;
    let eve = m.login("eve", "Eve12345").await;
    let r = m.post("/api/v1/runs/archive", Some(&eve), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.body["results"][0]["error"], format!("only the owner or an admin can archive run {run}"), "{}", r.text);

    let r = m.post("/api/v1/runs/archive", Some(&admin), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.body["results"], json!([{"id": run, "error": ""}]), "{}", r.text);
    let visible = filter(json!([]), false);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": visible})).await;
    assert!(!ids(&r).contains(&run), "an archived run is hidden unless showArchived");
    let r = m.post("/api/v1/runs", Some(&admin), json!({"filter": filter(json!([]), true)})).await;
    assert!(ids(&r).contains(&run));
    let r = m.post("/api/v1/runs/unarchive", Some(&admin), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.body["results"], json!([{"id": run, "error": ""}]), "{}", r.text);

    // Move: with skipMultitrial a search's runs stay; a single-trial run moves with its experiment.
    let r = m.post("/api/v1/workspaces/1/projects", Some(&admin), json!({"name": "runs-dest", "workspaceId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let dest = r.body["project"]["id"].as_i64().unwrap();
    let body = json!({"runIds": [run, search_runs[0]], "sourceProjectId": 1, "destinationProjectId": dest, "skipMultitrial": true});
    let r = m.post("/api/v1/runs/move", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let skipped = search_runs[0];
    assert_eq!(
        r.body["results"],
        json!([{"id": run, "error": ""}, {"id": skipped, "error": format!("Skipping run '{skipped}' (part of multi-trial).")}])
    );
    let moved = m.get(&format!("/api/v1/experiments/{single}"), Some(&admin)).await;
    assert_eq!(moved.body["experiment"]["projectId"], dest, "{}", moved.text);
    // Without it, a search's run moves the whole search.
    let body = json!({"runIds": [search_runs[1]], "sourceProjectId": 1, "destinationProjectId": dest});
    let r = m.post("/api/v1/runs/move", Some(&admin), body).await;
    assert_eq!(r.body["results"], json!([{"id": search_runs[1], "error": ""}]), "{}", r.text);
    let r = m.post("/api/v1/runs", Some(&admin), json!({"projectId": dest})).await;
    assert_eq!(ids(&r), vec![run, search_runs[0], search_runs[1]]);
    let r =
        m.post("/api/v1/runs/move", Some(&admin), json!({"runIds": [run], "sourceProjectId": dest, "destinationProjectId": 4242})).await;
    assert_error(&r, 404, "NotFound");

    // Delete by filter: the search's runs, in the destination project.
    let by_experiment = filter(json!([{"kind": "field", "columnName": "experimentId", "operator": "=", "value": search}]), false);
    let r = m.post("/api/v1/runs/delete", Some(&admin), json!({"filter": by_experiment, "projectId": dest})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": search_runs[0], "error": ""}, {"id": search_runs[1], "error": ""}]));
    let r = m.post("/api/v1/runs", Some(&admin), json!({"projectId": dest})).await;
    assert_eq!(ids(&r), vec![run]);
    let r = m.get(&format!("/api/v1/trials/{}", search_runs[0]), Some(&admin)).await;
    assert_eq!(r.status, 404, "{}", r.text);

    // What cannot be carried out at all.
    let r = m.post("/api/v1/runs/archive", Some(&admin), json!({"runIds": [], "projectId": 1})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/runs/delete", Some(&admin), json!({"runIds": [run], "filter": visible})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("runIds"), "{}", r.text);
}

pub async fn project_notes_and_move_by_filters(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/workspaces/1/projects", Some(&admin), json!({"name": "noted", "workspaceId": 1})).await;
    let project = r.body["project"]["id"].as_i64().unwrap();
    let notes = json!([{"name": "plan", "contents": "# try lr 0.1"}, {"name": "log", "contents": ""}]);
    let put = |body: Value, token: String, id: i64| {
        let req = m.http.put(format!("{}/api/v1/projects/{id}/notes", m.base)).bearer_auth(token).json(&body);
        m.send(req)
    };
    let r = put(json!({"notes": notes, "projectId": project}), admin.clone(), project).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["notes"], notes);
    let r = m.get(&format!("/api/v1/projects/{project}"), Some(&admin)).await;
    assert_eq!(r.body["project"]["notes"], notes, "describe returns them");
    // Any user may, as upstream's OSS master; not in an archived project; unknown ones are 404.
    m.create_user(&admin, "noter", "Noter123").await;
    let noter = m.login("noter", "Noter123").await;
    let r = put(json!({"notes": [], "projectId": project}), noter.clone(), project).await;
    assert_eq!((r.status, r.body["notes"].clone()), (200, json!([])), "{}", r.text);
    let r = put(json!({"notes": [{"name": "x"}]}), admin.clone(), project).await;
    assert_eq!(r.status, 400, "a note without contents: {}", r.text);
    let r = put(json!({"notes": []}), admin.clone(), 4242).await;
    assert_error(&r, 404, "NotFound");
    m.post(&format!("/api/v1/projects/{project}/archive"), Some(&admin), json!({})).await;
    let r = put(json!({"notes": notes}), admin.clone(), project).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("archived"), "{}", r.text);

    // The bulk move by filters: the project's experiments named like "mv-keep".
    let r = m.post("/api/v1/workspaces/1/projects", Some(&admin), json!({"name": "moved-to", "workspaceId": 1})).await;
    let dest = r.body["project"]["id"].as_i64().unwrap();
    let (a, _) = create(m, &admin, "mv-keep-1", SINGLE).await;
    let (b, _) = create(m, &admin, "mv-keep-2", SINGLE).await;
    let (c, _) = create(m, &admin, "mv-other", SINGLE).await;
    let body = json!({"destinationProjectId": dest, "projectId": 1, "experimentIds": [],
        "filters": {"name": "mv-keep", "excludedExperimentIds": [b]}});
    let r = m.post("/api/v1/projects/1/experiments/move", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": a, "error": ""}]));
    for (id, project) in [(a, dest), (b, 1), (c, 1)] {
        let e = m.get(&format!("/api/v1/experiments/{id}"), Some(&admin)).await;
        assert_eq!(e.body["experiment"]["projectId"], project, "experiment {id}");
    }
    let body = json!({"destinationProjectId": dest, "projectId": 4242, "experimentIds": [], "filters": {"name": "x"}});
    let r = m.post("/api/v1/projects/4242/experiments/move", Some(&admin), body).await;
    assert_error(&r, 404, "NotFound");
    let body = json!({"destinationProjectId": dest, "experimentIds": [], "filters": {"states": ["STATE_NOPE"]}});
    let r = m.post("/api/v1/projects/1/experiments/move", Some(&admin), body).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("filters.states"), "{}", r.text);
}

pub async fn workspace_deletion_runs_in_the_background(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "fading"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ws = r.body["workspace"]["id"].as_i64().unwrap();
    let mut projects = Vec::new();
    for name in ["p1", "p2"] {
        let r = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": name})).await;
        projects.push(r.body["project"]["id"].as_i64().unwrap());
    }
    let config = format!("name: in-fading\n{SINGLE}");
    let body = json!({"config": config, "modelDefinition": [], "activate": false, "projectId": projects[0]});
    let r = m.post("/api/v1/experiments", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = r.body["experiment"]["id"].as_i64().unwrap();

    // Refused while the experiment is unfinished: nothing deleted, the reason on the workspace.
    let del = m.delete(&format!("/api/v1/workspaces/{ws}"), Some(&admin)).await;
    assert_eq!((del.status, &del.body), (200, &json!({"completed": false})), "{}", del.text);
    let w = m.get(&format!("/api/v1/workspaces/{ws}"), Some(&admin)).await;
    assert_eq!(w.body["workspace"]["state"], "WORKSPACE_STATE_DELETE_FAILED", "{}", w.text);
    assert!(w.body["workspace"]["errorMessage"].as_str().unwrap().contains(&exp.to_string()), "{}", w.text);

    // Once it ended: `completed: false`, DELETING while its projects go, then gone.
    kill(m, &admin, exp).await;
    let del = m.delete(&format!("/api/v1/workspaces/{ws}"), Some(&admin)).await;
    assert_eq!((del.status, &del.body), (200, &json!({"completed": false})), "{}", del.text);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let w = m.get(&format!("/api/v1/workspaces/{ws}"), Some(&admin)).await;
        if w.status == 404 {
            break;
        }
        assert_eq!(w.body["workspace"]["state"], "WORKSPACE_STATE_DELETING", "{}", w.text);
        let r = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "late"})).await;
        assert!(r.status == 400 || r.status == 404, "no project is added to a deleting workspace: {}", r.text);
        assert!(std::time::Instant::now() < deadline, "the workspace was not deleted: {}", w.text);
        tokio::task::yield_now().await;
    }
    for p in projects {
        assert_error(&m.get(&format!("/api/v1/projects/{p}"), Some(&admin)).await, 404, "NotFound");
    }
    assert_error(&m.get(&format!("/api/v1/experiments/{exp}"), Some(&admin)).await, 404, "NotFound");
}

pub async fn workspace_deletion_resumes_after_a_restart(m: TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "cut-short"})).await;
    let ws = r.body["workspace"]["id"].as_i64().unwrap();
    let r = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "p"})).await;
    let project = r.body["project"]["id"].as_i64().unwrap();
    // A master stopped right after marking the workspace DELETING.
    let id = i32::try_from(ws).unwrap();
    assert_eq!(m.store.begin_workspace_deletion(id).await.unwrap(), None);
    let m = m.restart().await;
    let admin = m.login("admin", "").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while m.get(&format!("/api/v1/workspaces/{ws}"), Some(&admin)).await.status != 404 {
        assert!(std::time::Instant::now() < deadline, "the deletion did not resume");
        tokio::task::yield_now().await;
    }
    assert_error(&m.get(&format!("/api/v1/projects/{project}"), Some(&admin)).await, 404, "NotFound");
}
