//! Reading the untyped JSON tree into typed values while collecting every problem: readers never
//! stop at the first error, they record it in [`Ctx`] and return `None` so the caller carries on
//! with the next field. Unknown keys are found by remembering which keys a section took.

use serde_json::{Map, Value};

use crate::error::{ConfigError, Warning, WarningKind};
use crate::path::FieldPath;

/// Whether required fields must be present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A whole experiment config, after defaults: anything required and missing is an error.
    Complete,
    /// A config fragment (e.g. `resources: {slots_per_trial: 8}`): only what is present is checked.
    Fragment,
}

/// Collects errors and warnings while a config is read.
pub(crate) struct Ctx {
    pub mode: Mode,
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<Warning>,
}

impl Ctx {
    pub fn new(mode: Mode) -> Self {
        Self { mode, errors: Vec::new(), warnings: Vec::new() }
    }

    pub fn error(&mut self, error: ConfigError) {
        self.errors.push(error);
    }

    pub fn wrong_type(&mut self, path: &FieldPath, expected: &str, found: &Value) {
        self.error(ConfigError::WrongType { path: path.to_string(), expected: expected.to_string(), found: describe(found) });
    }

    pub fn out_of_range(&mut self, path: &FieldPath, found: impl ToString, allowed: impl Into<String>) {
        self.error(ConfigError::OutOfRange { path: path.to_string(), found: found.to_string(), allowed: allowed.into() });
    }

    pub fn invalid(&mut self, path: &FieldPath, found: impl Into<String>, reason: impl Into<String>) {
        self.error(ConfigError::Invalid { path: path.to_string(), found: found.into(), reason: reason.into() });
    }

    /// Reports a missing required field; fragments are allowed to leave anything out.
    pub fn missing(&mut self, path: &FieldPath, hint: impl Into<String>) {
        if self.mode == Mode::Complete {
            self.error(ConfigError::Missing { path: path.to_string(), hint: hint.into() });
        }
    }

    pub fn warn(&mut self, path: &FieldPath, kind: WarningKind, message: impl Into<String>) {
        self.warnings.push(Warning { path: path.to_string(), kind, message: message.into() });
    }
}

/// Names a value's kind for messages: `a string ("two")`, `an integer (-1)`, `a list`.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("an integer ({n})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({})", quote(s)),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

/// Quotes a user string for a message, shortened so a pasted blob cannot flood the output.
pub(crate) fn quote(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX).collect();
        format!("{:?}", format!("{head}…"))
    } else {
        format!("{s:?}")
    }
}

fn integer_range_text(min: i64, max: i64) -> String {
    if max == i64::MAX { format!("an integer >= {min}") } else { format!("an integer from {min} to {max}") }
}

/// One present, non-null value and where it sits.
#[derive(Clone, Debug)]
pub(crate) struct Field<'v> {
    pub value: &'v Value,
    pub path: FieldPath,
}

impl<'v> Field<'v> {
    pub fn new(value: &'v Value, path: FieldPath) -> Self {
        Self { value, path }
    }

    pub fn string(&self, ctx: &mut Ctx) -> Option<String> {
        match self.value {
            Value::String(s) => Some(s.clone()),
            other => {
                ctx.wrong_type(&self.path, "a string", other);
                None
            }
        }
    }

    /// A string with at least one non-blank character (names, metrics, paths).
    pub fn non_empty_string(&self, ctx: &mut Ctx) -> Option<String> {
        let s = self.string(ctx)?;
        if s.trim().is_empty() {
            ctx.invalid(&self.path, quote(&s), "must not be empty");
            return None;
        }
        Some(s)
    }

    pub fn boolean(&self, ctx: &mut Ctx) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(*b),
            other => {
                ctx.wrong_type(&self.path, "a boolean (true or false)", other);
                None
            }
        }
    }

    /// An integer; a float with no fractional part counts, as in JSON Schema.
    pub fn integer(&self, ctx: &mut Ctx) -> Option<i64> {
        let Value::Number(n) = self.value else {
            ctx.wrong_type(&self.path, "an integer", self.value);
            return None;
        };
        if let Some(i) = n.as_i64() {
            return Some(i);
        }
        if n.is_u64() {
            ctx.out_of_range(&self.path, n, integer_range_text(i64::MIN, i64::MAX));
            return None;
        }
        match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
            _ => {
                ctx.wrong_type(&self.path, "an integer", self.value);
                None
            }
        }
    }

    /// An integer within `min..=max` (inclusive).
    pub fn int_between(&self, ctx: &mut Ctx, min: i64, max: i64) -> Option<i64> {
        let i = self.integer(ctx)?;
        if i < min || i > max {
            // Storage-type limits (u32, i64) are noise to a user; show only the side they crossed.
            let allowed = match (i < min, max >= i64::from(u32::MAX)) {
                (true, true) => format!("an integer >= {min}"),
                (false, true) => format!("an integer <= {max}"),
                _ => integer_range_text(min, max),
            };
            ctx.out_of_range(&self.path, i, allowed);
            return None;
        }
        Some(i)
    }

    /// A non-negative integer of at least `min`.
    pub fn uint_at_least(&self, ctx: &mut Ctx, min: u64) -> Option<u64> {
        let floor = i64::try_from(min).unwrap_or(i64::MAX);
        self.int_between(ctx, floor, i64::MAX).and_then(|i| u64::try_from(i).ok())
    }

    /// A non-negative integer of at least `min` that fits a `u32`.
    pub fn u32_at_least(&self, ctx: &mut Ctx, min: u32) -> Option<u32> {
        self.int_between(ctx, i64::from(min), i64::from(u32::MAX)).and_then(|i| u32::try_from(i).ok())
    }

    pub fn number(&self, ctx: &mut Ctx) -> Option<f64> {
        match self.value {
            Value::Number(n) => n.as_f64(),
            other => {
                ctx.wrong_type(&self.path, "a number", other);
                None
            }
        }
    }

    /// A number within `min..=max` (inclusive); `allowed` describes the range for the message.
    pub fn number_between(&self, ctx: &mut Ctx, min: f64, max: f64, allowed: &str) -> Option<f64> {
        let x = self.number(ctx)?;
        if x < min || x > max {
            ctx.out_of_range(&self.path, x, allowed);
            return None;
        }
        Some(x)
    }

    pub fn list(&self, ctx: &mut Ctx) -> Option<&'v Vec<Value>> {
        match self.value {
            Value::Array(items) => Some(items),
            other => {
                ctx.wrong_type(&self.path, "a list", other);
                None
            }
        }
    }

    pub fn mapping(&self, ctx: &mut Ctx) -> Option<&'v Map<String, Value>> {
        match self.value {
            Value::Object(map) => Some(map),
            other => {
                ctx.wrong_type(&self.path, "a mapping", other);
                None
            }
        }
    }

    /// Each item of a list, with its indexed path.
    pub fn items(&self, ctx: &mut Ctx) -> Vec<Field<'v>> {
        let Some(items) = self.list(ctx) else { return Vec::new() };
        items.iter().enumerate().map(|(i, item)| Field::new(item, self.path.index(i))).collect()
    }

    /// A list of strings; every bad item is reported.
    pub fn string_list(&self, ctx: &mut Ctx) -> Option<Vec<String>> {
        let items = self.list(ctx)?;
        let before = ctx.errors.len();
        let strings: Vec<String> =
            items.iter().enumerate().filter_map(|(i, item)| Field::new(item, self.path.index(i)).string(ctx)).collect();
        (ctx.errors.len() == before).then_some(strings)
    }

    /// One of a fixed set of strings.
    pub fn choice(&self, ctx: &mut Ctx, allowed: &[&'static str]) -> Option<&'static str> {
        let s = self.string(ctx)?;
        match allowed.iter().find(|a| **a == s) {
            Some(found) => Some(found),
            None => {
                ctx.error(ConfigError::NotOneOf { path: self.path.to_string(), found: quote(&s), allowed: allowed.join(", ") });
                None
            }
        }
    }
}

/// A mapping being read key by key; whatever is not taken is reported as unknown on `finish`.
pub(crate) struct Fields<'v> {
    path: FieldPath,
    map: &'v Map<String, Value>,
    taken: Vec<String>,
}

impl<'v> Fields<'v> {
    pub fn new(map: &'v Map<String, Value>, path: FieldPath) -> Self {
        Self { path, map, taken: Vec::new() }
    }

    /// Opens a field that must be a mapping.
    pub fn of(ctx: &mut Ctx, field: &Field<'v>) -> Option<Self> {
        field.mapping(ctx).map(|map| Self::new(map, field.path.clone()))
    }

    pub fn path(&self) -> &FieldPath {
        &self.path
    }

    /// The value under `key`, marking it known. `null` reads as absent, as in upstream's schema.
    pub fn take(&mut self, key: &str) -> Option<Field<'v>> {
        self.taken.push(key.to_string());
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some(Field::new(value, self.path.key(key))),
        }
    }

    /// Like `take`, but reports the field as missing when absent.
    pub fn require(&mut self, ctx: &mut Ctx, key: &str, hint: &str) -> Option<Field<'v>> {
        let field = self.take(key);
        if field.is_none() {
            ctx.missing(&self.path.key(key), hint);
        }
        field
    }

    pub fn string(&mut self, ctx: &mut Ctx, key: &str) -> Option<String> {
        self.take(key).and_then(|f| f.string(ctx))
    }

    pub fn bool_or(&mut self, ctx: &mut Ctx, key: &str, default: bool) -> bool {
        self.take(key).and_then(|f| f.boolean(ctx)).unwrap_or(default)
    }

    pub fn uint_or(&mut self, ctx: &mut Ctx, key: &str, min: u64, default: u64) -> u64 {
        self.take(key).and_then(|f| f.uint_at_least(ctx, min)).unwrap_or(default)
    }

    pub fn u32_or(&mut self, ctx: &mut Ctx, key: &str, min: u32, default: u32) -> u32 {
        self.take(key).and_then(|f| f.u32_at_least(ctx, min)).unwrap_or(default)
    }

    /// Warns about every key nobody took.
    pub fn finish(self, ctx: &mut Ctx) {
        self.finish_with(ctx, |_| None);
    }

    /// Warns about every key nobody took; `explain` may give a better message than "unknown field"
    /// (e.g. "used by another searcher").
    pub fn finish_with(self, ctx: &mut Ctx, explain: impl Fn(&str) -> Option<(WarningKind, String)>) {
        for key in self.map.keys() {
            if self.taken.iter().any(|t| t == key) {
                continue;
            }
            let (kind, message) = explain(key).unwrap_or((WarningKind::UnknownField, "unknown field; ignored".to_string()));
            ctx.warn(&self.path.key(key), kind, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(value: &Value) -> Field<'_> {
        Field::new(value, FieldPath::root().key("x"))
    }

    #[test]
    fn integers_accept_whole_floats_and_reject_strings() {
        let mut ctx = Ctx::new(Mode::Complete);
        assert_eq!(field(&json!(3.0)).integer(&mut ctx), Some(3));
        assert_eq!(field(&json!("3")).integer(&mut ctx), None);
        assert_eq!(field(&json!(2.5)).integer(&mut ctx), None);
        let messages: Vec<String> = ctx.errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages, ["x: expected an integer, found a string (\"3\")", "x: expected an integer, found a number (2.5)"]);
    }

    #[test]
    fn ranges_report_found_and_allowed() {
        let mut ctx = Ctx::new(Mode::Complete);
        assert_eq!(field(&json!(-1)).uint_at_least(&mut ctx, 0), None);
        assert_eq!(field(&json!(100)).int_between(&mut ctx, 1, 99), None);
        let messages: Vec<String> = ctx.errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages, ["x: found -1, expected an integer >= 0", "x: found 100, expected an integer from 1 to 99"]);
    }

    #[test]
    fn choices_list_what_is_allowed() {
        let mut ctx = Ctx::new(Mode::Complete);
        assert_eq!(field(&json!("most")).choice(&mut ctx, &["best", "all", "none"]), None);
        assert_eq!(ctx.errors[0].to_string(), "x: found \"most\", expected one of best, all, none");
    }

    #[test]
    fn untaken_keys_become_warnings_and_null_reads_as_absent() {
        let tree = json!({"known": 1, "typo": 2, "empty": null});
        let mut ctx = Ctx::new(Mode::Complete);
        let mut fields = Fields::new(tree.as_object().unwrap(), FieldPath::root().key("section"));
        assert!(fields.take("known").is_some());
        assert!(fields.take("empty").is_none());
        fields.finish(&mut ctx);
        assert_eq!(ctx.warnings.len(), 1);
        assert_eq!(ctx.warnings[0].path, "section.typo");
    }

    #[test]
    fn fragments_do_not_report_missing_fields() {
        let mut ctx = Ctx::new(Mode::Fragment);
        ctx.missing(&FieldPath::root().key("searcher"), "needed");
        assert!(ctx.errors.is_empty());
    }

    #[test]
    fn long_strings_are_shortened_in_messages() {
        let long = "a".repeat(200);
        assert!(quote(&long).chars().count() < 70);
    }
}
