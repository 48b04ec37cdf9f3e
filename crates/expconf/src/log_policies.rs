//! `log_policies`: what to do when a trial's log matches a pattern, as upstream 0.38 accepts it —
//! `{name, pattern, action: {type: cancel_retries | exclude_node}}`, the legacy string action
//! (`action: cancel_retries`), and policies without an action (a name shown when it fires). Each
//! pattern is compiled here so a bad one is a 400 naming `log_policies[i].pattern`.

use serde::{Deserialize, Serialize};

use crate::read::{Ctx, Field, Fields};

/// A pattern longer than this is refused (and never compiled).
pub const MAX_LOG_POLICY_PATTERN_BYTES: usize = 4096;
/// Compiled size limit per pattern, so a pathological one cannot take the master's memory.
pub const LOG_POLICY_REGEX_SIZE_LIMIT: usize = 1 << 20;

/// One policy, as stored in the experiment's config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<LogAction>,
}

/// What a match does to the trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LogAction {
    /// The trial is not restarted after it fails: it ends ERROR without using `max_restarts`.
    CancelRetries,
    /// The trial's next run avoids the node the line came from.
    ExcludeNode,
}

impl LogAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LogAction::CancelRetries => "cancel_retries",
            LogAction::ExcludeNode => "exclude_node",
        }
    }
}

const ACTIONS: [&str; 2] = ["cancel_retries", "exclude_node"];

/// The compiled form of a pattern, or why it cannot be compiled.
pub fn compile_log_pattern(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > MAX_LOG_POLICY_PATTERN_BYTES {
        return Err(format!("is {} bytes; the limit is {MAX_LOG_POLICY_PATTERN_BYTES}", pattern.len()));
    }
    regex::RegexBuilder::new(pattern).size_limit(LOG_POLICY_REGEX_SIZE_LIMIT).build().map_err(|e| e.to_string())
}

pub(crate) fn read_log_policies(ctx: &mut Ctx, field: &Field<'_>) -> Vec<LogPolicy> {
    field.items(ctx).iter().filter_map(|item| read_policy(ctx, item)).collect()
}

fn read_policy(ctx: &mut Ctx, item: &Field<'_>) -> Option<LogPolicy> {
    let mut fields = Fields::of(ctx, item)?;
    let name = fields.string(ctx, "name");
    let pattern = fields.take("pattern").and_then(|f| {
        let text = f.string(ctx)?;
        match compile_log_pattern(&text) {
            Ok(_) => Some(text),
            Err(reason) => {
                ctx.invalid(&f.path, text, format!("not a valid regular expression: {reason}"));
                None
            }
        }
    });
    let action = fields.take("action").and_then(|f| read_action(ctx, &f));
    fields.finish(ctx);
    Some(LogPolicy { name, pattern, action })
}

/// `action: {type: …}`, or the legacy bare string.
fn read_action(ctx: &mut Ctx, field: &Field<'_>) -> Option<LogAction> {
    let choice = if field.value.is_string() {
        field.choice(ctx, &ACTIONS)?
    } else {
        let mut fields = Fields::of(ctx, field)?;
        let kind = fields.require(ctx, "type", "cancel_retries or exclude_node")?.choice(ctx, &ACTIONS);
        fields.finish(ctx);
        kind?
    };
    Some(if choice == "cancel_retries" { LogAction::CancelRetries } else { LogAction::ExcludeNode })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: serde_json::Value) -> (Vec<LogPolicy>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let policies = read_log_policies(&mut ctx, &Field::new(&value, FieldPath::root().key("log_policies")));
        (policies, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn current_and_legacy_forms_read_the_same() {
        let (policies, errors) = read(json!([
            {"name": "oom", "pattern": "CUDA out of memory", "action": {"type": "cancel_retries"}},
            {"pattern": "ECC error", "action": "exclude_node"},
            {"name": "just a name", "pattern": "x"},
        ]));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(policies[0].action, Some(LogAction::CancelRetries));
        assert_eq!(policies[0].name.as_deref(), Some("oom"));
        assert_eq!(policies[1].action, Some(LogAction::ExcludeNode));
        assert_eq!(policies[2].action, None);
        // Stored in the current form.
        assert_eq!(serde_json::to_value(&policies[1]).unwrap(), json!({"pattern": "ECC error", "action": {"type": "exclude_node"}}));
        let back: LogPolicy = serde_json::from_value(serde_json::to_value(&policies[0]).unwrap()).unwrap();
        assert_eq!(back, policies[0]);
    }

    #[test]
    fn bad_patterns_and_actions_name_the_field() {
        let (_, errors) =
            read(json!([{"pattern": "(unclosed", "action": {"type": "cancel_retries"}}, {"pattern": "x", "action": {"type": "reboot"}}]));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("log_policies[0].pattern") && errors[0].contains("regular expression"), "{errors:?}");
        assert!(errors[1].contains("log_policies[1].action.type") && errors[1].contains("cancel_retries"), "{errors:?}");
    }
}
