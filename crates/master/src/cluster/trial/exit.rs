//! What a trial's allocation ending means for the trial: a pure decision, so the rules (restarts,
//! preemption, pause, searcher stops, kills) are tested without processes or a database.

use crate::domain::ExperimentState;

/// What the loop knew about the trial when its allocation ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ExitFacts {
    /// The process exited with code 0.
    pub succeeded: bool,
    /// Why it failed, for the trial's end reason ("the process exited with code 1").
    pub failure: Option<String>,
    pub experiment: ExperimentState,
    /// A user killed this trial (`det trial kill`).
    pub trial_killed: bool,
    /// The searcher stopped the trial early (ASHA).
    pub searcher_stopped: bool,
    /// The preemption signal was raised for this allocation (pause, cancel, searcher stop or the
    /// scheduler), whether or not the trial acknowledged it.
    pub preempted: bool,
    /// The trial reported `early_exit` (invalid hyperparameters).
    pub invalid_hp: bool,
    /// Failed runs so far, before this one.
    pub restarts: u32,
    pub max_restarts: u32,
    /// A `cancel_retries` log policy fired during the run (the policy, as the log names it).
    pub cancel_retries: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrialOutcome {
    /// The trial is done: it finished its work, or the searcher stopped it.
    Completed,
    /// The trial exited because its hyperparameters are invalid; the searcher may replace it.
    InvalidHp,
    Canceled,
    /// Paused with its experiment; it resumes from its latest checkpoint on activate.
    Paused,
    /// Run again from the latest checkpoint. `failed` runs count against `max_restarts`.
    Restart {
        failed: bool,
    },
    /// Out of restarts.
    Errored {
        reason: String,
    },
}

pub fn decide(f: &ExitFacts) -> TrialOutcome {
    use ExperimentState as E;
    if f.trial_killed || matches!(f.experiment, E::StoppingCanceled | E::StoppingKilled | E::Canceled) {
        return TrialOutcome::Canceled;
    }
    if f.invalid_hp {
        return TrialOutcome::InvalidHp;
    }
    if f.succeeded {
        if !f.preempted || f.searcher_stopped {
            return TrialOutcome::Completed;
        }
        return match f.experiment {
            E::Paused => TrialOutcome::Paused,
            e if e.is_active() => TrialOutcome::Restart { failed: false },
            // Stopping after the search ended, or errored elsewhere: nothing more to do.
            _ => TrialOutcome::Completed,
        };
    }
    // A trial that dies while being paused still pauses; its next run restores the checkpoint.
    if f.experiment == E::Paused && f.preempted {
        return TrialOutcome::Paused;
    }
    if f.searcher_stopped {
        return TrialOutcome::Completed;
    }
    let failure = f.failure.clone().unwrap_or_else(|| "the trial process failed".to_owned());
    if !f.experiment.is_active() {
        return TrialOutcome::Errored { reason: failure };
    }
    if let Some(policy) = &f.cancel_retries {
        return TrialOutcome::Errored { reason: format!("{failure}; log policy {policy} cancelled its retries") };
    }
    if f.restarts < f.max_restarts {
        TrialOutcome::Restart { failed: true }
    } else {
        let runs = f.restarts + 1;
        TrialOutcome::Errored { reason: format!("{failure}; the trial failed {runs} time(s) and max_restarts is {}", f.max_restarts) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> ExitFacts {
        ExitFacts {
            succeeded: true,
            failure: None,
            experiment: ExperimentState::Active,
            trial_killed: false,
            searcher_stopped: false,
            preempted: false,
            invalid_hp: false,
            restarts: 0,
            max_restarts: 5,
            cancel_retries: None,
        }
    }

    #[test]
    fn clean_exit_completes() {
        assert_eq!(decide(&facts()), TrialOutcome::Completed);
    }

    #[test]
    fn failures_restart_until_max_restarts_then_error() {
        let failed = ExitFacts { succeeded: false, failure: Some("the process exited with code 1".into()), ..facts() };
        assert_eq!(decide(&failed), TrialOutcome::Restart { failed: true });
        let last = ExitFacts { restarts: 5, ..failed.clone() };
        let TrialOutcome::Errored { reason } = decide(&last) else { panic!() };
        assert!(reason.contains("exited with code 1") && reason.contains("6 time(s)") && reason.contains("max_restarts is 5"), "{reason}");
        assert!(matches!(decide(&ExitFacts { max_restarts: 0, ..failed }), TrialOutcome::Errored { .. }));
    }

    #[test]
    fn preempted_exit_depends_on_why() {
        let preempted = ExitFacts { preempted: true, ..facts() };
        assert_eq!(decide(&preempted), TrialOutcome::Restart { failed: false });
        assert_eq!(decide(&ExitFacts { experiment: ExperimentState::Paused, ..preempted.clone() }), TrialOutcome::Paused);
        assert_eq!(decide(&ExitFacts { searcher_stopped: true, ..preempted.clone() }), TrialOutcome::Completed);
        assert_eq!(decide(&ExitFacts { experiment: ExperimentState::StoppingCanceled, ..preempted.clone() }), TrialOutcome::Canceled);
        assert_eq!(decide(&ExitFacts { experiment: ExperimentState::StoppingCompleted, ..preempted }), TrialOutcome::Completed);
    }

    #[test]
    fn kills_and_invalid_hparams() {
        assert_eq!(decide(&ExitFacts { trial_killed: true, succeeded: false, ..facts() }), TrialOutcome::Canceled);
        assert_eq!(decide(&ExitFacts { experiment: ExperimentState::StoppingKilled, succeeded: false, ..facts() }), TrialOutcome::Canceled);
        assert_eq!(decide(&ExitFacts { invalid_hp: true, ..facts() }), TrialOutcome::InvalidHp);
    }

    #[test]
    fn a_cancel_retries_policy_makes_the_failure_final_and_says_which() {
        let failed = ExitFacts {
            succeeded: false,
            failure: Some("the process exited with code 1".into()),
            cancel_retries: Some("\"oom\" (pattern `CUDA out of memory`)".into()),
            ..facts()
        };
        let TrialOutcome::Errored { reason } = decide(&failed) else { panic!() };
        assert!(reason.contains("log policy \"oom\"") && reason.contains("exited with code 1"), "{reason}");
        // A clean exit or a user's cancel is unaffected.
        assert_eq!(decide(&ExitFacts { succeeded: true, ..failed.clone() }), TrialOutcome::Completed);
        assert_eq!(decide(&ExitFacts { trial_killed: true, ..failed }), TrialOutcome::Canceled);
    }

    #[test]
    fn failing_while_pausing_pauses() {
        let f = ExitFacts { succeeded: false, preempted: true, experiment: ExperimentState::Paused, ..facts() };
        assert_eq!(decide(&f), TrialOutcome::Paused);
    }
}
