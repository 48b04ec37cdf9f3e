//! One conformance suite, run against every backend: each case below becomes a `sqlite` and a
//! `postgres` test. PostgreSQL cases need `RESOLUTE_TEST_POSTGRES_URL` (an admin connection URL;
//! every test creates its own database). Without it they are skipped, unless
//! `RESOLUTE_REQUIRE_POSTGRES=1`, which CI sets so a missing server fails loudly.

mod agent_controls;
mod bench;
mod best_validations;
mod checkpoint_edits;
mod checkpoints;
mod cluster;
mod commands;
mod experiment_continue;
mod experiments;
mod fixtures;
mod harness;
mod logs;
mod metric_repeats;
mod metric_series;
mod metric_summaries;
mod metrics;
mod metrics_current;
mod models;
mod odd_input;
#[path = "../support/pg_databases.rs"]
mod pg_databases;
mod runs;
mod sessions;
mod tasks;
mod templates;
mod trial_start;
mod trial_warm_start;
mod trials;
mod unmanaged;
mod users;
mod webhook_custom;
mod webhooks;
mod workloads;
mod workspace_deletion;
mod workspaces;

use resolute_store::Store;

harness::conformance!(agent_controls::agent_controls_are_replaced_per_agent_and_read_back);
harness::conformance!(cluster::cluster_message_is_replaced_shown_in_its_window_and_cleared);
harness::conformance!(cluster::allocation_usage_lists_overlapping_allocations_with_their_owner);
harness::conformance!(cluster::state_counts_group_experiments_trials_and_open_tasks);
harness::conformance!(webhooks::create_list_patch_delete);
harness::conformance!(webhooks::state_change_queues_events_in_its_transaction);
harness::conformance!(webhooks::log_events_fire_once_per_task);
harness::conformance!(webhooks::signing_key_is_kept);
harness::conformance!(webhook_custom::custom_events_reach_custom_triggers_of_the_experiments_workspace);
harness::conformance!(users::create_and_fetch);
harness::conformance!(users::duplicate_username_conflicts);
harness::conformance!(users::create_if_absent_is_idempotent);
harness::conformance!(users::update_changes_only_given_fields);
harness::conformance!(users::password_can_be_set_and_cleared);
harness::conformance!(users::rename_to_taken_name_conflicts);
harness::conformance!(users::unknown_user_is_not_found);
harness::conformance!(users::list_filters_sorts_and_pages);
harness::conformance!(users::record_login_sets_last_auth);
harness::conformance!(odd_input::nul_characters_are_refused_on_every_text_write);
harness::conformance!(odd_input::nul_lookups_find_nothing);
harness::conformance!(odd_input::odd_unicode_round_trips);
harness::conformance!(odd_input::huge_numbers_are_not_found_or_empty);
harness::conformance!(odd_input::name_filters_fold_ascii_case_only);
harness::conformance!(odd_input::log_lines_keep_nul_and_refuse_it_in_their_fields);
harness::conformance!(users::agent_user_group_links_and_relinks);
harness::conformance!(sessions::create_lookup_delete);
harness::conformance!(sessions::user_update_revokes_sessions);
harness::conformance!(sessions::the_last_active_admin_cannot_be_removed);
harness::conformance!(sessions::expired_sessions_are_purged);
harness::conformance!(cluster_id_is_stable);
harness::conformance!(experiments::default_project_exists);
harness::conformance!(experiments::create_and_fetch_experiment);
harness::conformance!(experiments::list_experiments_filters_sorts_and_pages);
harness::conformance!(experiments::label_filter_matches_whole_labels);
harness::conformance!(experiments::experiment_state_compare_and_set);
harness::conformance!(experiments::archive_labels_patch_and_progress);
harness::conformance!(experiments::delete_cascades);
harness::conformance!(trials::create_and_fetch_trial);
harness::conformance!(trial_warm_start::warm_start_is_recorded_on_the_trial);
harness::conformance!(unmanaged::external_ids_find_earlier_runs);
harness::conformance!(unmanaged::experiment_state_follows_its_trials);
harness::conformance!(unmanaged::lost_trials_end_in_error);
harness::conformance!(checkpoint_edits::checkpoint_metadata_is_replaced);
harness::conformance!(checkpoint_edits::experiment_config_is_replaced);
harness::conformance!(experiment_continue::continue_reopens_trials_and_zeroes_restarts);
harness::conformance!(trials::restart_counters);
harness::conformance!(trials::state_and_runner_updates);
harness::conformance!(trials::list_trials_filters_sorts_and_pages);
harness::conformance!(trial_start::start_time_is_the_first_placement);
harness::conformance!(metric_series::series_are_in_step_order_and_complete);
harness::conformance!(metric_series::series_drop_what_a_restart_archived);
harness::conformance!(metric_series::series_see_reports_of_running_tasks);
harness::conformance!(metrics::batch_insert_updates_summary);
harness::conformance!(metrics::large_batch_spans_statements);
harness::conformance!(metrics::restart_rollback_archives_superseded_rows);
harness::conformance!(metrics::report_of_later_run_applies_rollback_rule);
harness::conformance!(metrics::best_validation_across_experiment);
harness::conformance!(best_validations::best_validations_of_a_page_of_experiments);
harness::conformance!(metrics::failing_metrics_batch_writes_nothing);
harness::conformance!(metric_summaries::deferred_summary_reads_current_and_flushes);
harness::conformance!(metric_summaries::archive_recompute_replaces_a_deferred_summary);
harness::conformance!(metrics_current::each_report_is_checked_in_the_batch);
harness::conformance!(metric_repeats::a_retried_report_is_stored_once);
harness::conformance!(metrics_current::batch_across_many_trials);
harness::conformance!(metrics_current::concurrent_callers_get_their_own_admissions);
harness::conformance!(checkpoints::report_is_idempotent_and_tracks_latest);
harness::conformance!(checkpoints::state_and_resources_updates);
harness::conformance!(checkpoints::list_sorts_searcher_metric_nulls_last);
harness::conformance!(checkpoints::gc_policy_selects_upstream_victims);
harness::conformance!(checkpoints::failing_checkpoint_batch_writes_nothing);
harness::conformance!(checkpoints::late_validation_gives_checkpoint_its_metric);
harness::conformance!(checkpoints::checkpoints_missing_metric_are_listed_and_settled);
harness::conformance!(logs::batch_insert_and_follow);
harness::conformance!(logs::every_filter_selects_matching_lines);
harness::conformance!(logs::reads_cross_chunk_boundaries);
harness::conformance!(logs::concurrent_appends_keep_each_batch_whole_and_in_order);
harness::conformance!(tasks::create_get_and_list);
harness::conformance!(tasks::allocation_updates);
harness::conformance!(tasks::allocation_token_lookup);
harness::conformance!(commands::create_get_and_context);
harness::conformance!(commands::list_filters);
harness::conformance!(commands::end_closes_the_task);
harness::conformance!(commands::failed_creates_leave_no_rows);
harness::conformance!(commands::extra_and_priority_updates);
harness::conformance!(commands::nul_text_is_refused_alike);
harness::conformance!(templates::put_replaces_by_name);
harness::conformance!(templates::the_default_workspace_is_listed);
harness::conformance!(templates::list_filters_and_pages);
harness::conformance!(templates::delete_removes);
harness::conformance!(templates::nul_names_are_refused_alike);
harness::conformance!(runs::filter_sort_and_page);
harness::conformance!(workspace_deletion::begins_only_when_nothing_runs);
harness::conformance!(runs::archive_and_delete);
harness::conformance!(runs::project_notes_replace_the_list);
harness::conformance!(workspaces::create_patch_and_conflicts);
harness::conformance!(workspaces::list_filters_pins_and_pages);
harness::conformance!(workspaces::projects_keys_counts_and_patches);
harness::conformance!(workspaces::deletion_is_refused_while_experiments_run);
harness::conformance!(models::create_fetch_and_conflict);
harness::conformance!(models::model_list_filters_sorts_and_pages);
harness::conformance!(models::patch_and_delete);
harness::conformance!(models::versions_are_numbered_per_model);
harness::conformance!(models::registered_checkpoints_are_kept);

async fn cluster_id_is_stable(store: &dyn Store) {
    let first = store.cluster_id().await.unwrap();
    assert_eq!(first.len(), 36, "a UUID: {first}");
    assert_eq!(store.cluster_id().await.unwrap(), first);
}

#[tokio::test]
async fn sqlite_file_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resolute.db");
    let store = resolute_store::SqlStore::open_sqlite(&path).await.unwrap();
    let id = store.cluster_id().await.unwrap();
    store.create_user(users::new_user("persisted")).await.unwrap();
    store.close().await;

    // Re-opening re-runs migrations (a no-op) and sees the same data.
    let store = resolute_store::SqlStore::open_sqlite(&path).await.unwrap();
    assert_eq!(store.cluster_id().await.unwrap(), id);
    assert_eq!(store.user_by_name("persisted").await.unwrap().username, "persisted");
}
harness::conformance!(workloads::workloads_are_paged_in_the_database);
harness::conformance!(workloads::metric_pages_follow_a_keyset);
