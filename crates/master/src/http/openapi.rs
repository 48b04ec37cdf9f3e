//! The OpenAPI document, generated from the handler annotations.

use axum::Json;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(title = "Resolute REST API", description = "Determined-compatible REST API (grpc-gateway v1 JSON conventions)."),
    paths(
        super::info::info,
        super::info::get_master,
        super::master_config::get_master_config,
        super::master_logs::master_logs,
        super::cluster_message::get_cluster_message,
        super::cluster_message::set_cluster_message,
        super::cluster_message::clear_cluster_message,
        super::allocation_csv::allocations_csv,
        super::allocation_csv::allocations_raw,
        super::preview::preview_hp_search,
        super::searcher_state::searcher_state,
        super::hp_importance::hp_importance,
        super::auth::login,
        super::auth::logout,
        super::auth::me,
        super::auth::current_user,
        super::users::list,
        super::users::create,
        super::users::get,
        super::users::get_by_name,
        super::users::patch,
        super::users::set_password,
        super::experiments::create,
        super::experiments::list,
        super::experiments::get,
        super::experiments::patch,
        super::experiments::delete,
        super::experiments::activate,
        super::experiments::pause,
        super::experiments::cancel,
        super::experiments::kill,
        super::experiments::archive,
        super::experiments::unarchive,
        super::experiment_bulk::continue_experiment,
        super::runs::kill,
        super::runs::pause,
        super::runs::resume,
        super::runs::search,
        super::runs::archive,
        super::runs::unarchive,
        super::runs::delete,
        super::runs::move_runs,
        super::experiment_bulk::pause,
        super::experiment_bulk::activate,
        super::experiment_bulk::cancel,
        super::experiment_bulk::kill,
        super::experiment_bulk::archive,
        super::experiment_bulk::unarchive,
        super::experiment_bulk::delete,
        super::experiments::put_label,
        super::experiments::delete_label,
        super::experiment_items::trials,
        super::experiment_items::checkpoints,
        super::experiment_items::model_def,
        super::model_def_files::tree,
        super::model_def_files::file,
        super::experiment_items::trial,
        super::unmanaged::put_experiment,
        super::unmanaged::create_trial,
        super::unmanaged::put_trial,
        super::unmanaged::trial_by_external_id,
        super::unmanaged::start_trial,
        super::unmanaged::patch_trial,
        super::unmanaged::post_legacy_logs,
        super::runtime_trials::report_metrics,
        super::runtime_trials::report_progress,
        super::runtime_trials::early_exit,
        super::runtime_trials::runner_metadata,
        super::runtime_trials::kill,
        super::runtime_trials::best_searcher_validation_metric,
        super::runtime_trials::prepare_run,
        super::runtime_trials::context_directory,
        super::runtime_checkpoints::report,
        super::runtime_checkpoints::get,
        super::runtime_checkpoints::patch,
        super::runtime_allocations::preemption,
        super::runtime_allocations::ack_preemption,
        super::runtime_allocations::pending_preemption,
        super::runtime_allocations::ready,
        super::runtime_allocations::waiting,
        super::runtime_allocations::accelerator_data,
        super::runtime_allocations::proxy_address,
        super::runtime_allocations::rendezvous,
        super::runtime_allocations::all_gather,
        super::runtime_allocations::post_logs,
        super::logs::trial_logs,
        super::logs::task_logs,
        super::logs::trial_logs_fields,
        super::logs::task_logs_fields,
        super::workloads::list,
        super::tasks::list,
        super::workspaces::list,
        super::workspaces::post,
        super::workspaces::get,
        super::workspaces::patch,
        super::workspaces::delete,
        super::workspaces::archive,
        super::workspaces::unarchive,
        super::workspaces::pin,
        super::workspaces::unpin,
        super::projects::list,
        super::projects::post,
        super::projects::get,
        super::projects::patch,
        super::projects::delete,
        super::projects::archive,
        super::projects::unarchive,
        super::projects::move_experiment,
        super::projects::move_experiments,
        super::projects::put_notes,
        super::webhooks::create,
        super::webhooks::post_custom,
        super::webhooks::list,
        super::webhooks::delete,
        super::webhooks::patch,
        super::webhooks::test,
        super::templates::list,
        super::templates::get,
        super::templates::post,
        super::templates::put,
        super::templates::patch,
        super::templates::delete,
        super::models::create,
        super::models::list,
        super::models::get,
        super::models::patch,
        super::models::delete,
        super::models::archive,
        super::models::unarchive,
        super::models::create_version,
        super::models::list_versions,
        super::models::get_version,
        super::models::patch_version,
        super::models::delete_version,
        super::commands::launch_command,
        super::commands::launch_notebook,
        super::commands::launch_shell,
        super::commands::launch_tensorboard,
        super::commands::list_commands,
        super::commands::list_notebooks,
        super::commands::list_shells,
        super::commands::list_tensorboards,
        super::commands::get_command,
        super::commands::get_notebook,
        super::commands::get_shell,
        super::commands::get_tensorboard,
        super::commands::kill_command,
        super::commands::kill_notebook,
        super::commands::kill_shell,
        super::commands::kill_tensorboard,
        super::commands::set_command_priority,
        super::tasks::get,
        super::tasks::count,
        super::generic_tasks::create,
        super::generic_tasks::config,
        super::generic_tasks::kill,
        super::generic_tasks::pause,
        super::generic_tasks::unpause,
        super::checkpoint_download::download,
        super::checkpoint_download::delete,
        super::checkpoint_edits::metadata,
        super::checkpoint_edits::remove_files,
        super::checkpoint_edits::preview_gc,
        super::experiment_items::trial_checkpoints,
        super::trial_metrics::trial_metrics,
        super::trial_metrics::training_metrics,
        super::trial_metrics::validation_metrics,
        super::trial_time_series::compare_trials,
        super::trial_time_series::series_columns,
        super::metrics_stream::metric_names,
        super::metrics_stream::metric_batches,
        super::metrics_stream::trials_snapshot,
        super::metrics_stream::trials_sample,
        super::agents::list,
        super::agents::get,
        super::agents::slots,
        super::agent_control::enable_agent,
        super::agent_control::disable_agent,
        super::agent_control::enable_slot,
        super::agent_control::disable_slot,
        super::resource_pools::list,
        super::jobs::list,
        super::jobs::list_v2,
        super::jobs::update,
        super::runtime_trials::report_training_metrics,
        super::runtime_trials::report_validation_metrics,
        super::tasks::legacy_list,
        document,
        swagger_document,
    ),
    components(schemas(
        // Enums that only query parameters name: IntoParams refers to them without adding them.
        resolute_api::users::UserSortBy,
        resolute_api::users::OrderBy,
        resolute_api::experiments::ExperimentSortBy,
        resolute_api::checkpoints::CheckpointSortBy,
        resolute_api::commands::NtscSortBy,
        resolute_api::templates::TemplateSortBy,
        resolute_api::models::ModelSortBy,
        resolute_api::models::ModelVersionSortBy,
        resolute_api::trials::TrialSortBy,
        resolute_api::workloads::WorkloadFilter,
        resolute_api::workloads::MetricType,
        resolute_api::workspaces::WorkspaceSortBy,
        resolute_api::projects::ProjectSortBy,
        resolute_api::logs::LogLevel,
        resolute_api::experiments::ExperimentState,
        resolute_api::tasks::TaskType,
        resolute_api::error::ErrorBody,
    )),
    modifiers(&BearerAuth, &ErrorEnvelope)
)]
pub struct ApiDoc;

/// The routes that are no REST call and so have no path in the document (each with why).
/// `openapi_tests.rs` fails for any other route the router serves without a document path.
#[cfg_attr(not(test), allow(dead_code))]
pub const UNLISTED: &[(&str, &str)] = &[
    ("/agents", "the agents' websocket (api::agent_protocol), not a REST call"),
    ("/debug/prom/metrics", "Prometheus text exposition for the scraper (observability.enable_prometheus; 404 when off)"),
    ("/prom/det-state-metrics", "Prometheus text exposition for the scraper (observability.enable_prometheus; 404 when off)"),
    ("/proxy/{service}", "redirect to the task service's proxied root"),
    ("/proxy/{service}/", "a task service's own HTTP and websocket traffic, any method"),
    ("/proxy/{service}/{*rest}", "a task service's own HTTP and websocket traffic, any method"),
];

/// Every operation can fail with the error envelope (a malformed body or query, a missing token,
/// an unknown id, an oversized body, an internal error): each gets grpc-gateway's `default`
/// response with `ErrorBody`, as upstream's document has, beside the statuses it names.
struct ErrorEnvelope;

impl Modify for ErrorEnvelope {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let envelope: RefOr<Response> = ResponseBuilder::new()
            .description("An error: `{\"error\": {\"code\", \"reason\", \"error\"}}` with the gRPC code grpc-gateway maps to the status.")
            .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
            .build()
            .into();
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                operation.responses.responses.entry("default".to_owned()).or_insert_with(|| envelope.clone());
            }
        }
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()));
    }
}

#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "Internal", responses((status = 200, description = "this document (OpenAPI 3.1)", body = Object)))]
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// The same document under upstream's name for it.
#[utoipa::path(get, path = "/api/v1/api.swagger.json", tag = "Internal", responses((status = 200, description = "this document (OpenAPI 3.1)", body = Object)))]
pub async fn swagger_document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
