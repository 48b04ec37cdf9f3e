use crate::harness::TestMaster;

pub async fn info_is_unauthenticated_and_snake_case(m: &TestMaster) {
    let r = m.get("/info", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["version"], "0.38.1");
    assert_eq!(r.body["cluster_id"].as_str().unwrap().len(), 36);
    assert!(r.body["master_id"].is_string());
    assert!(r.body["telemetry"]["enabled"] == false);
    assert!(r.body.get("sso_providers").is_some());
}

pub async fn master_endpoint_is_camel_case(m: &TestMaster) {
    let r = m.get("/api/v1/master", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for key in ["version", "masterId", "clusterId", "clusterName", "strictJobQueueControl", "hasCustomLogo"] {
        assert!(r.body.get(key).is_some(), "missing {key}: {}", r.text);
    }
    assert_eq!(r.body["clusterId"], m.get("/info", None).await.body["cluster_id"]);
}

pub async fn openapi_document_lists_endpoints(m: &TestMaster) {
    let r = m.get("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    let paths = r.body["paths"].as_object().expect("paths");
    for p in [
        "/api/v1/auth/login",
        "/api/v1/users",
        "/api/v1/users/{userId}/password",
        "/info",
        "/api/v1/experiments",
        "/api/v1/experiments/{experimentId}/model_def",
        "/api/v1/experiments/{id}/checkpoints",
        "/api/v1/trials/{trialId}",
        "/api/v1/trials/{trialId}/metrics",
        "/api/v1/checkpoints/{checkpointUuid}",
        "/api/v1/allocations/{allocationId}/signals/preemption",
    ] {
        assert!(paths.contains_key(p), "missing {p}");
    }
    // Enums by the names the wire carries, which generated clients send and compare.
    let states = &r.body["components"]["schemas"]["ExperimentState"]["enum"];
    assert!(states.as_array().is_some_and(|s| s.iter().any(|v| v == "STATE_ACTIVE")), "ExperimentState: {states}");
    assert!(r.body["components"]["schemas"]["OrderBy"]["enum"].as_array().is_some_and(|s| s.iter().any(|v| v == "ORDER_BY_DESC")));
}

pub async fn unknown_route_is_json_404(m: &TestMaster) {
    let r = m.get("/api/v1/nope", None).await;
    crate::harness::assert_error(&r, 404, "NotFound");
    let r = m.send(m.http.delete(format!("{}/api/v1/me", m.base))).await;
    assert_eq!(r.status, 405, "{}", r.text);
}
