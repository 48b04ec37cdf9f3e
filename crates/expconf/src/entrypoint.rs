//! `entrypoint`: the command that starts a trial (`python3 train.py`, or a list of arguments), or
//! a legacy `module:TrialClass` reference to the pre-0.38 Trial API.

use serde::Serialize;

use crate::error::WarningKind;
use crate::read::{Ctx, Field, quote};

/// How a trial starts. Serialises back exactly as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Entrypoint {
    /// A shell command line, e.g. `python3 train.py --epochs 2`.
    Command(String),
    /// An argument vector, e.g. `["python3", "train.py"]`.
    Argv(Vec<String>),
    /// A legacy `model_def:IrisTrial` reference, run by the harness's Trial API launcher.
    TrialClass(String),
}

impl Entrypoint {
    /// The `module:Class` reference when this is a legacy Trial class.
    pub fn legacy_trial_class(&self) -> Option<&str> {
        match self {
            Entrypoint::TrialClass(class) => Some(class),
            _ => None,
        }
    }
}

/// `module.sub:ClassName` — letters, digits, `_` and `.` before the colon, an identifier after.
fn is_trial_class(entrypoint: &str) -> bool {
    let Some((module, class)) = entrypoint.split_once(':') else { return false };
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !module.is_empty() && !class.is_empty() && module.chars().all(|c| ident(c) || c == '.') && class.chars().all(ident)
}

pub(crate) fn read_entrypoint(ctx: &mut Ctx, field: &Field<'_>) -> Option<Entrypoint> {
    match field.value {
        serde_json::Value::String(_) => {
            let entrypoint = field.non_empty_string(ctx)?;
            if is_trial_class(&entrypoint) {
                ctx.warn(
                    &field.path,
                    WarningKind::Deprecated,
                    format!(
                        "{} names a legacy Trial class; Determined 0.38 expects a command such as `python3 train.py`",
                        quote(&entrypoint)
                    ),
                );
                return Some(Entrypoint::TrialClass(entrypoint));
            }
            Some(Entrypoint::Command(entrypoint))
        }
        serde_json::Value::Array(_) => {
            let argv = field.string_list(ctx)?;
            if argv.is_empty() {
                ctx.invalid(&field.path, "an empty list", "the entrypoint needs at least the program to run");
                return None;
            }
            Some(Entrypoint::Argv(argv))
        }
        other => {
            ctx.wrong_type(&field.path, "a command string or a list of strings", other);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: Value) -> (Option<Entrypoint>, Ctx) {
        let mut ctx = Ctx::new(Mode::Complete);
        let entrypoint = read_entrypoint(&mut ctx, &Field::new(&value, FieldPath::root().key("entrypoint")));
        (entrypoint, ctx)
    }

    #[test]
    fn recognises_commands_argv_and_legacy_classes() {
        assert_eq!(read(json!("python3 train.py")).0, Some(Entrypoint::Command("python3 train.py".into())));
        assert_eq!(read(json!(["python3", "train.py"])).0, Some(Entrypoint::Argv(vec!["python3".into(), "train.py".into()])));
        let (entrypoint, ctx) = read(json!("model_def:IrisTrial"));
        assert_eq!(entrypoint.as_ref().and_then(Entrypoint::legacy_trial_class), Some("model_def:IrisTrial"));
        assert_eq!(ctx.warnings.len(), 1);
        assert_eq!(serde_json::to_value(entrypoint).unwrap(), json!("model_def:IrisTrial"));
    }

    #[test]
    fn commands_with_colons_are_not_classes() {
        assert!(!is_trial_class("python3 -m pkg:main"));
        assert!(!is_trial_class("http://x"));
        assert!(is_trial_class("pkg.model_def:Trial_2"));
    }

    #[test]
    fn rejects_empty_and_wrong_types() {
        assert!(read(json!([])).1.errors[0].to_string().contains("needs at least the program"));
        assert_eq!(
            read(json!(5)).1.errors[0].to_string(),
            "entrypoint: expected a command string or a list of strings, found an integer (5)"
        );
        assert!(read(json!(["python3", 1])).0.is_none());
    }
}
