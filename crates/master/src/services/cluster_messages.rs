//! The cluster message (`det master cluster-message set/get/clear`): admins set or clear it,
//! everyone reads the one shown now. Setting validates the request into a start and an optional
//! end (from `endTime` or `duration`), each error naming its field; the store keeps it, so a
//! restarted master shows the same message.

use chrono::{DateTime, TimeDelta, Utc};
use resolute_api::cluster_message::{ClusterMessage, SetClusterMessageRequest};
use resolute_store::{ClusterMessageRecord, NewClusterMessage, Store};

use super::Principal;
use super::go_duration::parse_go_duration;
use crate::error::{ApiError, ApiResult};

/// The longest message, in characters (upstream's limit).
pub const MAX_MESSAGE_CHARS: usize = 250;

/// What a valid request becomes.
#[derive(Debug, PartialEq, Eq)]
pub struct MessageWindow {
    pub message: String,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
}

/// Checks a set request against `now`: message present, non-blank and at most
/// [`MAX_MESSAGE_CHARS`]; times RFC 3339; `endTime` or `duration`, not both; the end after the
/// start and in the future.
pub fn validate(req: &SetClusterMessageRequest, now: DateTime<Utc>) -> ApiResult<MessageWindow> {
    let message = req.message.as_deref().unwrap_or("");
    if message.trim().is_empty() {
        return Err(ApiError::invalid("message: a cluster message needs text (det master cluster-message set -m TEXT)"));
    }
    let chars = message.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(ApiError::invalid(format!("message: {chars} characters; at most {MAX_MESSAGE_CHARS} are allowed")));
    }
    let start = match non_empty(&req.start_time) {
        Some(text) => parse_time("startTime", text)?,
        None => now,
    };
    let end = match (non_empty(&req.end_time), non_empty(&req.duration)) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("endTime and duration: give one or the other, not both")),
        (Some(text), None) => Some(parse_time("endTime", text)?),
        (None, Some(text)) => {
            let duration = parse_go_duration(text).map_err(|e| ApiError::invalid(format!("duration: {text:?} {e}")))?;
            if duration <= TimeDelta::zero() {
                return Err(ApiError::invalid(format!("duration: {text:?} must be positive")));
            }
            Some(start.checked_add_signed(duration).ok_or_else(|| ApiError::invalid(format!("duration: {text:?} is too long")))?)
        }
        (None, None) => None,
    };
    if let Some(end) = end {
        if end <= start {
            return Err(ApiError::invalid(format!("endTime: {} is not after startTime {}", rfc3339(end), rfc3339(start))));
        }
        if end <= now {
            return Err(ApiError::invalid(format!("endTime: {} is in the past", rfc3339(end))));
        }
    }
    Ok(MessageWindow { message: message.to_owned(), start, end })
}

/// Stores the message in place of any other; admins only.
pub async fn set(store: &dyn Store, caller: &Principal, req: &SetClusterMessageRequest) -> ApiResult<ClusterMessage> {
    require_admin(caller, "set")?;
    let now = Utc::now();
    let window = validate(req, now)?;
    let record = store
        .set_cluster_message(NewClusterMessage {
            created_by: caller.user.id,
            message: window.message,
            start_ms: window.start.timestamp_millis(),
            end_ms: window.end.map(|e| e.timestamp_millis()),
            created_ms: now.timestamp_millis(),
        })
        .await?;
    Ok(to_wire(&record))
}

/// Removes the message; admins only.
pub async fn clear(store: &dyn Store, caller: &Principal) -> ApiResult<()> {
    require_admin(caller, "clear")?;
    Ok(store.clear_cluster_message().await?)
}

/// The message shown now, if any; anyone may read it.
pub async fn active(store: &dyn Store) -> ApiResult<Option<ClusterMessage>> {
    Ok(store.active_cluster_message(Utc::now().timestamp_millis()).await?.as_ref().map(to_wire))
}

fn require_admin(caller: &Principal, action: &str) -> ApiResult<()> {
    if caller.user.admin {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("only admins may {action} the cluster message; {} is not an admin", caller.user.username)))
    }
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn parse_time(field: &str, text: &str) -> ApiResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| ApiError::invalid(format!("{field}: {text:?} is not an RFC 3339 time such as 2021-10-26T23:17:12Z ({e})")))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

fn to_wire(r: &ClusterMessageRecord) -> ClusterMessage {
    ClusterMessage {
        message: r.message.clone(),
        start_time: millis(r.start_ms),
        end_time: r.end_ms.map(millis),
        created_time: Some(millis(r.created_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(start: Option<&str>, end: Option<&str>, duration: Option<&str>) -> SetClusterMessageRequest {
        SetClusterMessageRequest {
            message: Some("maintenance".into()),
            start_time: start.map(Into::into),
            end_time: end.map(Into::into),
            duration: duration.map(Into::into),
        }
    }

    fn now() -> DateTime<Utc> {
        "2030-01-01T00:00:00Z".parse().unwrap()
    }

    fn error(r: &SetClusterMessageRequest) -> String {
        validate(r, now()).unwrap_err().message
    }

    #[test]
    fn windows_from_end_or_duration() {
        let w = validate(&req(Some("2030-01-02T00:00:00Z"), None, Some("2d")), now()).unwrap();
        assert_eq!(w.end, Some("2030-01-04T00:00:00Z".parse().unwrap()));
        assert!(error(&req(None, Some("2030-01-01T01:00:00+01:00"), None)).contains("is not after startTime"), "start defaults to now");
        let w = validate(&req(None, Some("2030-01-01T02:00:00+01:00"), Some("")), now()).unwrap();
        assert_eq!(w.end, Some("2030-01-01T01:00:00Z".parse().unwrap()));
        assert_eq!(validate(&req(None, None, None), now()).unwrap().end, None);
    }

    #[test]
    fn each_error_names_its_field() {
        assert!(error(&req(Some("yesterday"), None, None)).starts_with("startTime:"));
        assert!(error(&req(None, Some("2030-13-01T00:00:00Z"), None)).starts_with("endTime:"));
        assert!(error(&req(None, None, Some("5 days"))).starts_with("duration:"));
        assert!(error(&req(None, None, Some("-5m"))).contains("must be positive"));
        assert!(error(&req(None, Some("2031-01-01T00:00:00Z"), Some("1h"))).starts_with("endTime and duration"));
        assert!(error(&req(Some("2030-02-01T00:00:00Z"), Some("2030-01-15T00:00:00Z"), None)).contains("is not after startTime"));
        assert!(error(&req(Some("2029-01-01T00:00:00Z"), Some("2029-06-01T00:00:00Z"), None)).contains("in the past"));
        let blank = SetClusterMessageRequest { message: Some("  ".into()), ..Default::default() };
        assert!(error(&blank).starts_with("message:"));
        let long = SetClusterMessageRequest { message: Some("x".repeat(251)), ..Default::default() };
        assert!(error(&long).contains("at most 250"));
    }
}
