//! HTTP-level tests of the master, each run against SQLite and (when configured) PostgreSQL.
//! They speak the wire format the upstream clients use, so they double as contract tests.

mod auth;
mod bad_input;
mod checkpoint_files;
mod cluster_loop;
mod context;
mod experiment_actions;
mod experiment_lists;
mod experiments;
mod generic_tasks;
mod harness;
mod info;
mod input_limits;
mod list_bounds;
mod logs;
mod master_restart;
mod metrics_ingest;
#[path = "../../../store/tests/support/pg_databases.rs"]
mod pg_databases;
mod proxy;
mod runtime_allocations;
mod runtime_checkpoints;
mod runtime_support;
mod runtime_trials;
mod searcher_state;
mod seed;
mod sessions;
mod task_users;
mod tasks;
mod tensorboards;
mod users;
mod webhooks;

harness::api_test!(info::info_is_unauthenticated_and_snake_case);
harness::api_test!(info::master_endpoint_is_camel_case);
harness::api_test!(info::openapi_document_lists_endpoints);
harness::api_test!(info::unknown_route_is_json_404);
harness::api_test!(auth::blank_password_login_with_hashed_and_plain);
harness::api_test!(auth::wrong_password_and_unknown_user_are_403);
harness::api_test!(auth::logout_invalidates_token);
harness::api_test!(auth::cookie_is_accepted);
harness::api_test!(auth::missing_or_garbage_token_is_401);
harness::api_test!(auth::deactivated_user_cannot_log_in_or_use_sessions);
harness::api_test!(sessions::cross_origin_cookie_mutation_is_refused);
harness::api_test!(sessions::login_sets_a_same_site_http_only_cookie);
harness::api_test!(sessions::the_101st_wrong_password_is_throttled);
harness::api_test!(sessions::a_few_typos_do_not_lock_a_user_out);
harness::api_test!(sessions::unknown_users_cost_what_known_users_do);
harness::api_test!(sessions::password_change_and_deactivation_end_other_sessions);
harness::api_test!(sessions::the_last_active_admin_stays_admin);
harness::api_test!(users::admin_creates_user_and_sets_password);
harness::api_test!(users::seed_000_curl_shapes);
harness::api_test!(users::non_admin_permissions);
harness::api_test!(users::list_paginates_and_filters);
harness::api_test!(users::patch_fields_and_rename_conflict);
harness::api_test!(users::agent_user_group_links);
harness::api_test!(task_users::tasks_run_as_their_owners_agent_user);
harness::api_test!(bad_input::malformed_bodies_are_400_naming_the_field);
harness::api_test!(bad_input::duplicate_and_invalid_usernames);
harness::api_test!(bad_input::oversized_body_is_413);
harness::api_test!(bad_input::bad_path_and_query_values);
harness::api_test!(experiments::seed_const_yaml_with_cli_context);
harness::api_test!(experiments::bad_config_lists_every_field_error);
harness::api_test!(experiments::validate_only_and_paused_creates);
harness::api_test!(experiments::malformed_files_are_400);
harness::api_test!(experiments::oversized_uploads_are_413);
harness::api_test!(experiments::projects_resolve_from_id_or_config);
harness::api_test!(experiment_actions::state_transitions_follow_upstream);
harness::api_test!(experiment_actions::archive_and_delete_only_finished_experiments);
harness::api_test!(experiment_actions::labels_and_patch);
harness::api_test!(experiment_actions::only_owner_or_admin_can_change);
harness::api_test!(experiment_lists::list_filters_sorts_and_paginates);
harness::api_test!(experiment_lists::trials_and_checkpoints);
harness::api_test!(tensorboards::launch_resolves_trials_and_sends_stored_metrics);
harness::api_test!(tensorboards::launch_refuses_unknown_or_missing_sources);
harness::api_test!(webhooks::crud_permissions_and_clear_errors);
harness::api_test!(webhooks::completed_experiment_and_log_pattern_are_delivered);
harness::api_test!(owned webhooks::restart_between_state_change_and_delivery_loses_nothing);
harness::api_test!(webhooks::state_changes_racing_other_writes_all_fire);
harness::api_test!(cluster_loop::single_trial_runs_to_completion);
harness::api_test!(cluster_loop::failing_trial_restarts_then_errors);
harness::api_test!(cluster_loop::pause_and_activate_resume_the_trial);
harness::api_test!(cluster_loop::kill_stops_the_process);
harness::api_test!(cluster_loop::duplicate_agent_id_is_refused);
harness::api_test!(cluster_loop::remote_agents_need_a_join_secret);

#[tokio::test]
async fn agents_without_the_join_secret_are_refused() {
    let config = resolute_master::MasterConfig { agent_secret: Some("s3cret".into()), ..Default::default() };
    cluster_loop::agents_without_the_join_secret_are_refused(&harness::TestMaster::start(config).await).await;
}
harness::api_test!(runtime_trials::metrics_are_stored_rolled_back_and_searched);
harness::api_test!(metrics_ingest::concurrent_reports_are_stored_exactly_once);
harness::api_test!(metrics_ingest::remembered_token_stops_when_its_allocation_ends);
harness::api_test!(runtime_trials::progress_early_exit_runner_state_and_kill);
harness::api_test!(runtime_checkpoints::report_get_and_patch_round_trip);
harness::api_test!(runtime_allocations::preemption_long_poll_and_signals);
harness::api_test!(runtime_allocations::prep_container_calls_and_task_logs);
harness::api_test!(runtime_allocations::task_tokens_are_confined);
harness::api_test!(runtime_allocations::task_token_reads_its_own_trial);
harness::api_test!(logs::trial_and_task_logs_stream_with_filters);
harness::api_test!(logs::follow_streams_new_lines_until_the_task_ends);
harness::api_test!(tasks::tasks_list_get_and_count);
harness::api_test!(generic_tasks::generic_tasks_create_pause_unpause_kill);
harness::api_test!(generic_tasks::generic_tasks_refuse_bad_requests);
harness::api_test!(tasks::trial_workloads_filter_sort_and_page);
harness::api_test!(list_bounds::workloads_cost_their_page_not_the_history);
harness::api_test!(list_bounds::experiment_list_all_is_one_bounded_page);
harness::api_test!(checkpoint_files::download_as_tar_and_tar_gz);
harness::api_test!(checkpoint_files::gc_keeps_best_and_latest_and_is_idempotent);
harness::api_test!(checkpoint_files::gc_runs_as_a_task_with_its_logs);
harness::api_test!(searcher_state::searcher_state_shows_rungs_and_decisions);
harness::api_test!(proxy::proxy_http_requests_pass_through_with_the_full_path);
harness::api_test!(proxy::proxy_websockets_relay_frames_to_http_and_tcp_services);
harness::api_test!(proxy::proxy_tcp_service_closing_closes_the_tunnel);
harness::api_test!(proxy::proxy_only_the_owner_or_an_admin_may_open_a_service);
harness::api_test!(proxy::proxy_to_a_service_that_is_down_is_502);
harness::api_test!(proxy::proxy_upstream_tunnel_reaches_a_tcp_service);
harness::api_test!(owned master_restart::restarted_master_resumes_trials_and_search);

#[tokio::test]
async fn initial_user_password_applies_to_default_users() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = resolute_master::MasterConfig { port: 0, data_dir: Some(dir.path().to_owned()), ..Default::default() };
    config.security.initial_user_password = Some("Sup3rSecret".into());
    let master = harness::TestMaster::start(config).await;
    let blank = master.post("/api/v1/auth/login", None, serde_json::json!({"username": "admin", "password": ""})).await;
    assert_eq!(blank.status, 403);
    for user in ["admin", "determined"] {
        let ok = master.post("/api/v1/auth/login", None, serde_json::json!({"username": user, "password": "Sup3rSecret"})).await;
        assert_eq!(ok.status, 200, "{user}: {}", ok.body);
    }
}
harness::api_test!(input_limits::ten_megabyte_names_are_refused);
harness::api_test!(input_limits::nul_characters_get_the_same_answer);
harness::api_test!(input_limits::huge_numbers_and_odd_unicode);
harness::api_test!(input_limits::a_grid_too_large_is_refused_with_its_size);
harness::api_test!(input_limits::trial_reports_are_bounded_and_nul_free);
harness::api_test!(input_limits::searches_over_the_trial_limit_are_refused);
