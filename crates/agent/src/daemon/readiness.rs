//! A task's `ready_pattern`: the regular expression its output is watched for, and where the task
//! stands (waiting for a matching line, matched but not yet reported, reported). The daemon
//! reports a match with `TaskReady` only after the log batch holding the line and after the task's
//! `Running`, so the master has both before it acts on readiness.

use regex::Regex;

/// Upper bound on the compiled pattern, so a pathological pattern fails the start instead of
/// taking the agent's memory.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

#[derive(Debug, Default)]
pub(crate) enum Readiness {
    /// The task has no pattern.
    #[default]
    Unwatched,
    Waiting(Box<Regex>),
    /// A line matched; `TaskReady` is still to be sent.
    Matched,
    Reported,
}

impl Readiness {
    /// Compiles `pattern`; `Err` is the start failure to report.
    pub fn watch(pattern: Option<&str>) -> Result<Readiness, String> {
        let Some(pattern) = pattern else { return Ok(Readiness::Unwatched) };
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map_err(|e| format!("ready_pattern {pattern:?} is not a valid regular expression: {e}"))?;
        Ok(Readiness::Waiting(Box::new(regex)))
    }

    /// Checks one captured line (without its newline); true when it is the first to match.
    pub fn check(&mut self, line: &str) -> bool {
        let Readiness::Waiting(pattern) = self else { return false };
        if !pattern.is_match(line) {
            return false;
        }
        *self = Readiness::Matched;
        true
    }

    /// True when a match is waiting to be reported; it then counts as reported.
    pub fn take_match(&mut self) -> bool {
        if matches!(self, Readiness::Matched) {
            *self = Readiness::Reported;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_match_counts() {
        let mut readiness = Readiness::watch(Some(r"listening on port \d+")).unwrap();
        assert!(!readiness.check("starting"));
        assert!(!readiness.take_match());
        assert!(readiness.check("[I] listening on port 8888 now"));
        assert!(!readiness.check("listening on port 8889"));
        assert!(readiness.take_match());
        assert!(!readiness.take_match());
        assert!(!readiness.check("listening on port 1"));
    }

    #[test]
    fn no_pattern_never_matches_and_a_bad_one_is_refused() {
        let mut readiness = Readiness::watch(None).unwrap();
        assert!(!readiness.check("anything"));
        let err = Readiness::watch(Some("(unclosed")).unwrap_err();
        assert!(err.starts_with("ready_pattern \"(unclosed\" is not a valid regular expression"), "{err}");
    }
}
