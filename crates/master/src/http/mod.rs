//! The HTTP surface: a thin layer that parses requests, calls services and renders results.

mod agent_control;
mod agent_logs;
mod agents;
mod allocation_csv;
mod auth;
mod checkpoint_download;
mod checkpoint_edits;
mod cluster_message;
mod commands;
mod csrf;
mod etag;
mod experiment_bulk;
mod experiment_items;
mod experiment_wire;
mod experiments;
mod extract;
mod generic_tasks;
mod hp_importance;
mod info;
mod jobs;
mod logs;
mod master_config;
mod master_logs;
mod metrics_stream;
mod model_def_files;
mod models;
mod ndjson;
mod openapi;
#[cfg(test)]
mod openapi_tests;
mod preview;
mod projects;
mod prometheus;
mod proxy;
mod resource_pools;
mod runs;
mod runtime_allocations;
mod runtime_auth;
mod runtime_checkpoints;
mod runtime_trials;
mod searcher_state;
mod sized_json;
mod tasks;
mod templates;
mod trial_metrics;
mod trial_time_series;
mod unmanaged;
mod users;
mod webhooks;
mod webui;
mod workloads;
mod workspaces;

use std::convert::Infallible;

use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::routing::{any, delete, get, post, put};
use axum::{Extension, Router};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;

use self::experiments::MAX_EXPERIMENT_BODY_BYTES;
use self::extract::BodyLimit;

use crate::error::ApiError;
use crate::state::AppState;

/// Largest request body accepted (upstream's gRPC receive limit is 96 MiB, for model uploads).
pub const MAX_BODY_BYTES: usize = 96 * 1024 * 1024;

pub fn router(state: AppState) -> Router {
    routes().route_layer(axum::middleware::from_fn_with_state(state.clone(), prometheus::record_latency)).with_state(state)
}

/// Every route the master serves, before the state is attached. Each one is in the OpenAPI
/// document (`openapi.rs`) unless `openapi::UNLISTED` names it; `openapi_tests.rs` compares the two.
fn routes() -> Router<AppState> {
    let proxy_client = proxy::ProxyClient::new();
    Router::new()
        .route("/info", get(info::info))
        .route("/api/v1/master", get(info::get_master))
        .route("/api/v1/master/config", get(master_config::get_master_config))
        .route("/api/v1/master/logs", get(master_logs::master_logs))
        .route("/resources/allocation/allocations-csv", get(allocation_csv::allocations_csv))
        .route("/api/v1/resources/allocation/raw", get(allocation_csv::allocations_raw))
        .route("/debug/prom/metrics", get(prometheus::process_metrics))
        .route("/prom/det-state-metrics", get(prometheus::state_metrics))
        .route(
            "/api/v1/master/cluster_message",
            get(cluster_message::get_cluster_message)
                .put(cluster_message::set_cluster_message)
                .delete(cluster_message::clear_cluster_message),
        )
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route("/api/v1/auth/user", get(auth::current_user))
        .route("/api/v1/me", get(auth::me))
        .route("/api/v1/users", get(users::list).post(users::create))
        .route("/api/v1/users/{user}", get(users::get).patch(users::patch))
        .route("/api/v1/users/{user}/by-username", get(users::get_by_name))
        .route("/api/v1/users/{user}/password", post(users::set_password))
        .route(
            "/api/v1/experiments",
            get(experiments::list)
                .post(experiments::create)
                // Model definitions travel base64-encoded in the JSON body.
                .layer::<_, Infallible>(DefaultBodyLimit::max(MAX_EXPERIMENT_BODY_BYTES))
                .layer::<_, Infallible>(Extension(BodyLimit(MAX_EXPERIMENT_BODY_BYTES))),
        )
        .route("/api/v1/preview-hp-search", post(preview::preview_hp_search))
        .route("/api/v1/experiments/{id}", get(experiments::get).patch(experiments::patch).delete(experiments::delete))
        .route("/api/v1/experiments/{id}/activate", post(experiments::activate))
        .route("/api/v1/experiments/{id}/pause", post(experiments::pause))
        .route("/api/v1/experiments/{id}/cancel", post(experiments::cancel))
        .route("/api/v1/experiments/{id}/kill", post(experiments::kill))
        .route("/api/v1/experiments/{id}/archive", post(experiments::archive))
        .route("/api/v1/experiments/{id}/unarchive", post(experiments::unarchive))
        .route("/api/v1/experiments/continue", post(experiment_bulk::continue_experiment))
        .route("/api/v1/runs/kill", post(runs::kill))
        .route("/api/v1/runs/pause", post(runs::pause))
        .route("/api/v1/runs/resume", post(runs::resume))
        .route("/api/v1/runs", post(runs::search))
        .route("/api/v1/runs/archive", post(runs::archive))
        .route("/api/v1/runs/unarchive", post(runs::unarchive))
        .route("/api/v1/runs/delete", post(runs::delete))
        .route("/api/v1/runs/move", post(runs::move_runs))
        .route("/api/v1/projects/{id}/experiments/pause", post(experiment_bulk::pause))
        .route("/api/v1/projects/{id}/experiments/activate", post(experiment_bulk::activate))
        .route("/api/v1/projects/{id}/experiments/cancel", post(experiment_bulk::cancel))
        .route("/api/v1/projects/{id}/experiments/kill", post(experiment_bulk::kill))
        .route("/api/v1/projects/{id}/experiments/archive", post(experiment_bulk::archive))
        .route("/api/v1/projects/{id}/experiments/unarchive", post(experiment_bulk::unarchive))
        .route("/api/v1/projects/{id}/experiments/delete", delete(experiment_bulk::delete))
        .route("/api/v1/experiments/{id}/labels/{label}", put(experiments::put_label).delete(experiments::delete_label))
        .route("/api/v1/experiments/{id}/trials", get(experiment_items::trials))
        .route("/api/v1/experiments/{id}/checkpoints", get(experiment_items::checkpoints))
        .route("/api/v1/experiments/{id}/model_def", get(experiment_items::model_def))
        .route("/api/v1/experiments/{id}/file_tree", get(model_def_files::tree))
        .route("/api/v1/experiments/{id}/file", post(model_def_files::file))
        .route("/api/v1/experiments/{id}/searcher/state", get(searcher_state::searcher_state))
        .route("/api/v1/experiments/{id}/hyperparameter-importance", get(hp_importance::hp_importance))
        .route("/api/v1/trials/{id}", get(experiment_items::trial).patch(unmanaged::patch_trial))
        .route("/api/v1/trials", post(unmanaged::create_trial).put(unmanaged::put_trial))
        .route("/api/v1/trials/{id}/start", post(unmanaged::start_trial))
        .route("/api/v1/trials/by-external-id/{experiment}/{trial}", get(unmanaged::trial_by_external_id))
        .route("/api/v1/experiments/by-external-id/{id}", put(unmanaged::put_experiment))
        .route("/task-logs", post(unmanaged::post_legacy_logs))
        .route("/api/v1/trials/{id}/checkpoints", get(experiment_items::trial_checkpoints))
        .route("/api/v1/trials/time-series", get(trial_time_series::compare_trials))
        .route("/api/v1/trials/time-series/columns", get(trial_time_series::series_columns))
        .route("/api/v1/experiments/metrics-stream/metric-names", get(metrics_stream::metric_names))
        .route("/api/v1/experiments/{id}/metrics-stream/batches", get(metrics_stream::metric_batches))
        .route("/api/v1/experiments/{id}/metrics-stream/trials-snapshot", get(metrics_stream::trials_snapshot))
        .route("/api/v1/experiments/{id}/metrics-stream/trials-sample", get(metrics_stream::trials_sample))
        .route("/api/v1/trials/metrics/trial_metrics", get(trial_metrics::trial_metrics))
        .route("/api/v1/trials/metrics/training_metrics", get(trial_metrics::training_metrics))
        .route("/api/v1/trials/metrics/validation_metrics", get(trial_metrics::validation_metrics))
        .route("/agents", get(agents::connect))
        .route("/api/v1/agents", get(agents::list))
        .route("/api/v1/job-queues", get(jobs::list).post(jobs::update))
        .route("/api/v1/job-queues-v2", get(jobs::list_v2))
        .route("/api/v1/agents/{id}", get(agents::get))
        .route("/api/v1/agents/{id}/slots", get(agents::slots))
        .route("/api/v1/agents/{id}/enable", post(agent_control::enable_agent))
        .route("/api/v1/agents/{id}/disable", post(agent_control::disable_agent))
        .route("/api/v1/agents/{id}/slots/{slot_id}/enable", post(agent_control::enable_slot))
        .route("/api/v1/agents/{id}/slots/{slot_id}/disable", post(agent_control::disable_slot))
        .route("/api/v1/resource-pools", get(resource_pools::list))
        .route("/api/v1/trials/{id}/metrics", post(runtime_trials::report_metrics))
        .route("/api/v1/trials/{id}/training_metrics", post(runtime_trials::report_training_metrics))
        .route("/api/v1/trials/{id}/validation_metrics", post(runtime_trials::report_validation_metrics))
        .route("/api/v1/trials/{id}/progress", post(runtime_trials::report_progress))
        .route("/api/v1/trials/{id}/early_exit", post(runtime_trials::early_exit))
        .route("/api/v1/trials/{id}/runner/metadata", post(runtime_trials::runner_metadata))
        .route("/api/v1/trials/{id}/kill", post(runtime_trials::kill))
        .route("/api/v1/experiments/{id}/searcher/best_searcher_validation_metric", get(runtime_trials::best_searcher_validation_metric))
        .route("/api/v1/runs/start", post(runtime_trials::prepare_run))
        .route("/api/v1/tasks/{id}/context_directory", get(runtime_trials::context_directory))
        .route("/api/v1/task/logs", post(runtime_allocations::post_logs))
        .route(
            "/api/v1/checkpoints",
            post(runtime_checkpoints::report).patch(runtime_checkpoints::patch).delete(checkpoint_download::delete),
        )
        .route("/api/v1/checkpoints/{uuid}", get(runtime_checkpoints::get))
        .route("/api/v1/checkpoints/rm", post(checkpoint_edits::remove_files))
        .route("/api/v1/checkpoints/{uuid}/metadata", post(checkpoint_edits::metadata))
        .route("/api/v1/allocations/{id}/signals/preemption", get(runtime_allocations::preemption))
        .route("/api/v1/allocations/{id}/signals/ack_preemption", post(runtime_allocations::ack_preemption))
        .route("/api/v1/allocations/{id}/signals/pending_preemption", post(runtime_allocations::pending_preemption))
        .route("/api/v1/allocations/{id}/ready", post(runtime_allocations::ready))
        .route("/api/v1/allocations/{id}/waiting", post(runtime_allocations::waiting))
        .route("/api/v1/allocations/{id}/acceleratorData", post(runtime_allocations::accelerator_data))
        .route("/api/v1/allocations/{id}/proxy_address", post(runtime_allocations::proxy_address))
        .route("/api/v1/allocations/{id}/resources/{rid}/rendezvous", get(runtime_allocations::rendezvous))
        .route("/api/v1/allocations/{id}/all_gather", post(runtime_allocations::all_gather))
        .route("/api/v1/trials/{id}/logs", get(logs::trial_logs))
        .route("/api/v1/trials/{id}/logs/fields", get(logs::trial_logs_fields))
        .route("/api/v1/trials/{id}/workloads", get(workloads::list))
        .route("/api/v1/tasks", get(tasks::list))
        .route("/tasks", get(tasks::legacy_list))
        .route("/api/v1/workspaces", get(workspaces::list).post(workspaces::post))
        .route("/api/v1/workspaces/{id}", get(workspaces::get).patch(workspaces::patch).delete(workspaces::delete))
        .route("/api/v1/workspaces/{id}/archive", post(workspaces::archive))
        .route("/api/v1/workspaces/{id}/unarchive", post(workspaces::unarchive))
        .route("/api/v1/workspaces/{id}/pin", post(workspaces::pin))
        .route("/api/v1/workspaces/{id}/unpin", post(workspaces::unpin))
        .route("/api/v1/workspaces/{id}/projects", get(projects::list).post(projects::post))
        .route("/api/v1/projects/{id}", get(projects::get).patch(projects::patch).delete(projects::delete))
        .route("/api/v1/projects/{id}/archive", post(projects::archive))
        .route("/api/v1/projects/{id}/unarchive", post(projects::unarchive))
        .route("/api/v1/projects/{id}/experiments/move", post(projects::move_experiments))
        .route("/api/v1/projects/{id}/notes", put(projects::put_notes))
        .route("/api/v1/experiments/{id}/move", post(projects::move_experiment))
        .route("/api/v1/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/api/v1/webhooks/{id}", axum::routing::delete(webhooks::delete).patch(webhooks::patch))
        .route("/api/v1/webhooks/{id}/test", post(webhooks::test))
        .route("/api/v1/webhooks/custom", post(webhooks::post_custom))
        .route("/api/v1/templates", get(templates::list))
        .route(
            "/api/v1/templates/{name}",
            get(templates::get).post(templates::post).put(templates::put).patch(templates::patch).delete(templates::delete),
        )
        .route("/api/v1/models", get(models::list).post(models::create))
        .route("/api/v1/models/{name}", get(models::get).patch(models::patch).delete(models::delete))
        .route("/api/v1/models/{name}/archive", post(models::archive))
        .route("/api/v1/models/{name}/unarchive", post(models::unarchive))
        .route("/api/v1/models/{name}/versions", get(models::list_versions).post(models::create_version))
        .route(
            "/api/v1/models/{name}/versions/{version}",
            get(models::get_version).patch(models::patch_version).delete(models::delete_version),
        )
        .route("/api/v1/commands", get(commands::list_commands).post(commands::launch_command))
        .route("/api/v1/commands/{id}", get(commands::get_command))
        .route("/api/v1/commands/{id}/kill", post(commands::kill_command))
        .route("/api/v1/commands/{id}/set_priority", post(commands::set_command_priority))
        .route("/api/v1/notebooks", get(commands::list_notebooks).post(commands::launch_notebook))
        .route("/api/v1/notebooks/{id}", get(commands::get_notebook))
        .route("/api/v1/notebooks/{id}/kill", post(commands::kill_notebook))
        .route("/api/v1/shells", get(commands::list_shells).post(commands::launch_shell))
        .route("/api/v1/shells/{id}", get(commands::get_shell))
        .route("/api/v1/shells/{id}/kill", post(commands::kill_shell))
        .route("/api/v1/tensorboards", get(commands::list_tensorboards).post(commands::launch_tensorboard))
        .route("/api/v1/tensorboards/{id}", get(commands::get_tensorboard))
        .route("/api/v1/tensorboards/{id}/kill", post(commands::kill_tensorboard))
        .route("/api/v1/tasks/count", get(tasks::count))
        .route("/api/v1/tasks/{id}", get(tasks::get))
        .route("/api/v1/generic-tasks", post(generic_tasks::create))
        .route("/api/v1/tasks/{id}/config", get(generic_tasks::config))
        .route("/api/v1/tasks/{id}/kill", post(generic_tasks::kill))
        .route("/api/v1/tasks/{id}/pause", post(generic_tasks::pause))
        .route("/api/v1/tasks/{id}/unpause", post(generic_tasks::unpause))
        .route("/api/v1/tasks/{id}/logs", get(logs::task_logs))
        .route("/api/v1/tasks/{id}/logs/fields", get(logs::task_logs_fields))
        .route("/checkpoints/{uuid}", get(checkpoint_download::download))
        .route("/experiments/{id}/preview_gc", get(checkpoint_edits::preview_gc))
        .route("/proxy/{service}", any(proxy::redirect_to_slash))
        .route("/proxy/{service}/", any(proxy::proxy).layer(Extension(proxy_client.clone())))
        .route("/proxy/{service}/{*rest}", any(proxy::proxy).layer(Extension(proxy_client)))
        .route("/api/v1/openapi.json", get(openapi::document))
        .route("/api/v1/api.swagger.json", get(openapi::swagger_document))
        // The web UI for browser paths, the JSON 404 for unknown API paths (`webui.rs`).
        .fallback(webui::fallback.layer(CompressionLayer::new()))
        .method_not_allowed_fallback(method_not_allowed)
        // ETag / 304 for JSON reads (`etag.rs`).
        .layer(axum::middleware::from_fn(etag::layer))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(Extension(BodyLimit(MAX_BODY_BYTES)))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("a request handler panicked");
            axum::response::IntoResponse::into_response(ApiError::internal())
        }))
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such endpoint: {}", uri.path()))
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::invalid(format!("method {method} is not allowed on {}", uri.path())).with_status(StatusCode::METHOD_NOT_ALLOWED)
}
