//! Size limits on the free text a client can store, so one request cannot make every later
//! list or describe carry megabytes (two experiments with 10 MB names made the experiment list
//! 63 MB per call). Each refusal is a 400 naming the field, its size and the limit.
//!
//! The limits are generous for real use (upstream documents none): an experiment name fits a
//! long sentence, a description a few paragraphs, notes a long Markdown page, a config any
//! realistic search space. Sizes are in bytes of UTF-8, as stored. NUL characters are refused by
//! the store on every text path (PostgreSQL cannot hold them), so both backends agree.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Experiment, template and task names.
pub const NAME_BYTES: usize = 1024;
/// An experiment's description.
pub const DESCRIPTION_BYTES: usize = 16 * 1024;
/// An experiment's notes (Markdown).
pub const NOTES_BYTES: usize = 256 * 1024;
/// One label.
pub const LABEL_BYTES: usize = 255;
/// Labels on one experiment.
pub const LABEL_COUNT: usize = 100;
/// A config as submitted (YAML or JSON text, or its JSON form): experiments, tasks, templates.
pub const CONFIG_BYTES: usize = 1024 * 1024;
/// A metric group name (`training`, `validation` or a custom one).
pub const METRIC_GROUP_BYTES: usize = 255;

/// `Err` when `value` is longer than `limit` bytes.
pub fn check_text(field: &str, value: &str, limit: usize) -> ApiResult<()> {
    if value.len() > limit {
        return Err(ApiError::invalid(format!("{field} is {} bytes; the limit is {limit}", value.len())));
    }
    Ok(())
}

/// The label count and each label's size.
pub fn check_labels(field: &str, labels: &[String]) -> ApiResult<()> {
    if labels.len() > LABEL_COUNT {
        return Err(ApiError::invalid(format!("{field} has {} labels; the limit is {LABEL_COUNT}", labels.len())));
    }
    labels.iter().try_for_each(|label| check_text("label", label, LABEL_BYTES))
}

/// A config document's size as JSON text.
pub fn check_config(field: &str, config: &Value) -> ApiResult<()> {
    let mut counter = ByteCounter(0);
    // Writing into a counter cannot fail; a failure would only mean "not counted".
    let _ = serde_json::to_writer(&mut counter, config);
    if counter.0 > CONFIG_BYTES {
        return Err(ApiError::invalid(format!("{field} is {} bytes; the limit is {CONFIG_BYTES}", counter.0)));
    }
    Ok(())
}

/// Counts what would be written, without keeping it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_field_the_size_and_the_limit() {
        let err = check_text("name", &"x".repeat(10 * 1024 * 1024), NAME_BYTES).unwrap_err();
        assert_eq!(err.message, "name is 10485760 bytes; the limit is 1024");
        assert!(check_text("name", &"é".repeat(512), NAME_BYTES).is_ok(), "1024 bytes fit");
        assert!(check_text("name", &"é".repeat(513), NAME_BYTES).is_err());
        let many: Vec<String> = (0..101).map(|i| i.to_string()).collect();
        assert!(check_labels("labels", &many).unwrap_err().message.contains("101 labels; the limit is 100"));
        assert!(check_labels("labels", &["y".repeat(256)]).unwrap_err().message.starts_with("label is 256 bytes"));
        let big = serde_json::json!({"entrypoint": "x".repeat(CONFIG_BYTES)});
        assert!(check_config("config", &big).unwrap_err().message.starts_with("config is 1048"));
        assert!(check_config("config", &serde_json::json!({"a": 1})).is_ok());
    }
}
