//! Changes to an existing experiment: metadata (name, description, notes, labels), archiving,
//! the state actions (activate, pause, cancel, kill) and deletion. Only the owner or an admin may
//! make any of them.

use resolute_api::error::ErrorCode;
use resolute_store::{ExperimentPatch, ExperimentRecord, TrialFilter, db_now};

use super::experiments::{ExperimentService, ExperimentView, dedup};
use super::input_limits;
use crate::cluster::ClusterEvent;
use crate::domain::TrialState;
use crate::domain::experiment_state::{ExperimentAction, ExperimentState, transition};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

/// Trial states that hold (or wait for) resources: a stopping experiment waits for these.
const RUNNING_TRIAL_STATES: [TrialState; 9] = [
    TrialState::Active,
    TrialState::Queued,
    TrialState::Pulling,
    TrialState::Starting,
    TrialState::Running,
    TrialState::StoppingCanceled,
    TrialState::StoppingKilled,
    TrialState::StoppingCompleted,
    TrialState::StoppingError,
];

/// Compare-and-set attempts before giving up on an experiment that keeps changing under us.
const STATE_RETRIES: usize = 5;

/// `PATCH /api/v1/experiments/{id}` after parsing; `None` leaves a field alone.
#[derive(Clone, Debug, Default)]
pub struct ExperimentChanges {
    pub name: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub labels: Option<Vec<String>>,
    /// `resources` asked to change something (not supported yet; a `checkpointStorage` policy
    /// change goes through `checkpoint_edits::change_gc_policy`).
    pub config_changes: Vec<&'static str>,
}

impl ExperimentService {
    /// The experiment, if `caller` may change it: its owner or an admin.
    pub(super) async fn editable(&self, caller: &Principal, id: i32, action: &str) -> ApiResult<ExperimentRecord> {
        let record = self.store.experiment_by_id(id).await?;
        if caller.user.admin || caller.user.id == record.owner_id {
            Ok(record)
        } else {
            Err(ApiError::forbidden(format!("only the owner ({}) or an admin can {action} experiment {id}", record.owner_username)))
        }
    }

    pub async fn patch(&self, caller: &Principal, id: i32, changes: ExperimentChanges) -> ApiResult<ExperimentView> {
        for (field, value, limit) in [
            ("name", &changes.name, input_limits::NAME_BYTES),
            ("description", &changes.description, input_limits::DESCRIPTION_BYTES),
            ("notes", &changes.notes, input_limits::NOTES_BYTES),
        ] {
            if let Some(value) = value {
                input_limits::check_text(field, value, limit)?;
            }
        }
        if let Some(labels) = &changes.labels {
            input_limits::check_labels("labels", labels)?;
        }
        let record = self.editable(caller, id, "change").await?;
        if !changes.config_changes.is_empty() {
            return Err(ApiError::unimplemented(format!(
                "{}: changing an experiment's resources or checkpoint policy is not supported yet",
                changes.config_changes.join(", ")
            )));
        }
        if let Some(name) = &changes.name
            && name.trim().is_empty()
        {
            return Err(ApiError::invalid("name: must not be empty or whitespace"));
        }
        let patch = ExperimentPatch { name: changes.name, description: changes.description, notes: changes.notes };
        let mut record = if patch.name.is_some() || patch.description.is_some() || patch.notes.is_some() {
            self.store.patch_experiment(id, &patch).await?
        } else {
            record
        };
        if let Some(labels) = changes.labels {
            let labels = dedup(labels);
            if labels != record.labels {
                self.store.set_experiment_labels(id, &labels).await?;
                record.labels = labels;
            }
        }
        self.view(record).await
    }

    /// Adds `label` unless present; returns the labels afterwards.
    pub async fn add_label(&self, caller: &Principal, id: i32, label: &str) -> ApiResult<Vec<String>> {
        input_limits::check_text("label", label, input_limits::LABEL_BYTES)?;
        let mut labels = self.editable(caller, id, "label").await?.labels;
        if label.is_empty() {
            return Err(ApiError::invalid("label: must not be empty"));
        }
        if !labels.iter().any(|l| l == label) {
            labels.push(label.to_owned());
            input_limits::check_labels(&format!("experiment {id}"), &labels)?;
            self.store.set_experiment_labels(id, &labels).await?;
        }
        Ok(labels)
    }

    /// Removes `label` if present; returns the labels afterwards.
    pub async fn remove_label(&self, caller: &Principal, id: i32, label: &str) -> ApiResult<Vec<String>> {
        let mut labels = self.editable(caller, id, "label").await?.labels;
        let before = labels.len();
        labels.retain(|l| l != label);
        if labels.len() != before {
            self.store.set_experiment_labels(id, &labels).await?;
        }
        Ok(labels)
    }

    /// Archives or unarchives a finished experiment; repeating it is a no-op.
    pub async fn set_archived(&self, caller: &Principal, id: i32, archived: bool) -> ApiResult<()> {
        let verb = if archived { "archive" } else { "unarchive" };
        let record = self.editable(caller, id, verb).await?;
        let state = stored_state(&record)?;
        if !state.is_terminal() {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("cannot {verb} experiment {id}: it is {state}; only completed, canceled or errored experiments can be {verb}d"),
            ));
        }
        if record.archived != archived {
            self.store.set_experiment_archived(id, archived).await?;
        }
        Ok(())
    }

    /// Applies a state action (see `experiment_state`), settling a stop at once when no trial
    /// runs. Returns the state stored.
    pub async fn act(&self, caller: &Principal, id: i32, action: ExperimentAction) -> ApiResult<ExperimentState> {
        let state = self.move_state(caller, id, action).await?;
        self.cluster.notify(ClusterEvent::ExperimentChanged { experiment_id: id });
        Ok(state)
    }

    async fn move_state(&self, caller: &Principal, id: i32, action: ExperimentAction) -> ApiResult<ExperimentState> {
        let verb = match action {
            ExperimentAction::Activate => "activate",
            ExperimentAction::Pause => "pause",
            ExperimentAction::Cancel => "cancel",
            ExperimentAction::Kill => "kill",
        };
        let mut record = self.editable(caller, id, verb).await?;
        if record.unmanaged {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!(
                    "cannot {verb} experiment {id}: it is unmanaged (its script reports its state from outside the cluster); \
                     only archive, unarchive and delete apply"
                ),
            ));
        }
        for _ in 0..STATE_RETRIES {
            let from = stored_state(&record)?;
            let running = self.running_trials(id).await?;
            let to = transition(from, action, running)
                .map_err(|illegal| ApiError::new(ErrorCode::FailedPrecondition, format!("cannot {verb} experiment {id}: {illegal}")))?;
            if to == from {
                return Ok(to);
            }
            let end_time = to.is_terminal().then(db_now);
            // The loop moves an active experiment between ACTIVE, QUEUED and RUNNING as its trials
            // wait and run; an action on an active experiment applies whichever of those it is in.
            if self.store.update_experiment_state_if(id, &from.stored_names(), to.as_str(), end_time).await? {
                tracing::info!(experiment = id, from = %from, to = %to, by = %caller.user.username, "experiment state changed");
                return Ok(to);
            }
            // Someone else moved it first: decide again from the new state.
            record = self.store.experiment_by_id(id).await?;
        }
        Err(ApiError::new(ErrorCode::Unavailable, format!("experiment {id} kept changing state; try again")))
    }

    /// Deletes a finished experiment with its trials, metrics, checkpoint records and logs.
    pub async fn delete(&self, caller: &Principal, id: i32) -> ApiResult<()> {
        let record = self.editable(caller, id, "delete").await?;
        let state = stored_state(&record)?;
        if !state.is_terminal() {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("cannot delete experiment {id}: it is {state}; cancel or kill it first"),
            ));
        }
        let registered = self.store.experiment_registered_checkpoints(id).await?;
        if !registered.is_empty() {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!(
                    "cannot delete experiment {id}: its checkpoints {} are registered as model versions; delete those versions first",
                    registered.join(", ")
                ),
            ));
        }
        self.store.delete_experiment(id).await?;
        tracing::info!(experiment = id, by = %caller.user.username, "deleted experiment");
        Ok(())
    }

    async fn running_trials(&self, experiment_id: i32) -> ApiResult<usize> {
        let filter = TrialFilter {
            experiment_id,
            states: RUNNING_TRIAL_STATES.iter().map(|s| s.as_str().to_owned()).collect(),
            limit: Some(0),
            ..Default::default()
        };
        Ok(usize::try_from(self.store.list_trials(&filter).await?.total).unwrap_or(usize::MAX))
    }
}

/// The record's state; an unknown name means the database holds something we never write.
fn stored_state(record: &ExperimentRecord) -> ApiResult<ExperimentState> {
    ExperimentState::parse(&record.state).ok_or_else(|| {
        tracing::error!(experiment = record.id, state = %record.state, "experiment has an unknown stored state");
        ApiError::internal()
    })
}
