//! What a webhook receiver gets, in upstream's shapes: the default JSON event (`event_id`,
//! `event_type`, `timestamp`, `condition`, `event_data`) and the Slack message (`blocks`, and for
//! experiments a coloured attachment), plus the signature headers
//! (`X-Determined-AI-Signature-Timestamp`, and `X-Determined-AI-Signature`: hex HMAC-SHA256 of
//! `"{timestamp},{body}"` under `webhooks.signing_key`). Pure: the delivery worker gathers the facts.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

pub const SIGNATURE_HEADER: &str = "X-Determined-AI-Signature";
pub const SIGNATURE_TIMESTAMP_HEADER: &str = "X-Determined-AI-Signature-Timestamp";

/// The experiment as a payload shows it (upstream's `ExperimentPayload`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentFacts {
    pub id: i32,
    /// Upstream's state name without the `STATE_` prefix (`COMPLETED`).
    pub state: String,
    pub name: String,
    /// Seconds from start to end (0 while it has not ended).
    pub duration: i64,
    pub resource_pool: String,
    pub slots_per_trial: i64,
    pub workspace: String,
    pub project: String,
}

/// A task-log match (upstream's `TaskLogPayload`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskLogFacts {
    pub task_id: String,
    /// The agent that ran the task.
    pub node_name: String,
    pub triggering_log: String,
}

/// Where a trial's logs are, for the Slack message of a task-log event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrialRef {
    pub experiment_id: i32,
    pub trial_id: i32,
}

#[derive(Serialize)]
struct Condition<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regex: Option<&'a str>,
}

#[derive(Serialize)]
struct EventData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    experiment: Option<&'a ExperimentFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_log: Option<&'a TaskLogFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom_data: Option<&'a CustomFacts>,
}

#[derive(Serialize)]
struct EventPayload<'a> {
    event_id: &'a str,
    event_type: &'a str,
    timestamp: i64,
    condition: Condition<'a>,
    event_data: EventData<'a>,
}

#[derive(Serialize)]
struct SlackText<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: String,
}

#[derive(Serialize)]
struct SlackBlock<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: SlackText<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<SlackText<'a>>>,
}

#[derive(Serialize)]
struct SlackAttachment<'a> {
    color: &'a str,
    blocks: Vec<SlackBlock<'a>>,
}

#[derive(Serialize)]
struct SlackMessage<'a> {
    blocks: Vec<SlackBlock<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attachments: Option<Vec<SlackAttachment<'a>>>,
}

fn to_bytes(value: &impl Serialize) -> Vec<u8> {
    // Serialising these plain structs cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

/// The default payload of an experiment state change.
pub fn experiment_default(event_id: &str, timestamp: i64, experiment: &ExperimentFacts) -> Vec<u8> {
    to_bytes(&EventPayload {
        event_id,
        event_type: "EXPERIMENT_STATE_CHANGE",
        timestamp,
        condition: Condition { state: Some(&experiment.state), regex: None },
        event_data: EventData { data: None, experiment: Some(experiment), task_log: None, custom_data: None },
    })
}

/// The default payload of a task-log match.
pub fn task_log_default(event_id: &str, timestamp: i64, regex: &str, log: &TaskLogFacts) -> Vec<u8> {
    to_bytes(&EventPayload {
        event_id,
        event_type: "TASK_LOG",
        timestamp,
        condition: Condition { state: None, regex: Some(regex) },
        event_data: EventData { data: None, experiment: None, task_log: Some(log), custom_data: None },
    })
}

/// A custom event (`core.alert`): what the trial said.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CustomFacts {
    pub title: String,
    pub description: String,
    /// Upstream's log level name (`LOG_LEVEL_INFO`).
    pub level: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_id: Option<i32>,
}

/// The default payload of a custom event: the experiment and what the trial said.
pub fn custom_default(event_id: &str, timestamp: i64, experiment: &ExperimentFacts, custom: &CustomFacts) -> Vec<u8> {
    to_bytes(&EventPayload {
        event_id,
        event_type: "CUSTOM",
        timestamp,
        condition: Condition { state: None, regex: None },
        event_data: EventData { data: None, experiment: Some(experiment), task_log: None, custom_data: Some(custom) },
    })
}

/// The Slack message of a custom event: the title, the description, and where it came from.
pub fn custom_slack(experiment: &ExperimentFacts, custom: &CustomFacts, base_url: Option<&str>) -> Vec<u8> {
    let base_url = base_url.map(|u| u.trim_end_matches('/')).filter(|u| !u.is_empty());
    let level = custom.level.trim_start_matches("LOG_LEVEL_");
    let origin = match custom.trial_id {
        Some(trial) => format!("Experiment ID `{}`, Trial ID `{trial}`", experiment.id),
        None => format!("Experiment ID `{}`", experiment.id),
    };
    let mut text = format!("*{}* ({level})\n{}\n{origin}", custom.title, custom.description);
    if let Some(base) = base_url {
        text.push_str(&format!("\n<{base}/det/experiments/{}/overview | View the experiment>", experiment.id));
    }
    to_bytes(&SlackMessage { blocks: vec![SlackBlock { kind: "section", text: mrkdwn(text), fields: None }], attachments: None })
}

/// What `POST /api/v1/webhooks/{id}/test` sends to a default webhook.
pub fn test_default(event_id: &str, timestamp: i64) -> Vec<u8> {
    to_bytes(&EventPayload {
        event_id,
        event_type: "EXPERIMENT_STATE_CHANGE",
        timestamp,
        condition: Condition { state: Some("COMPLETED"), regex: None },
        event_data: EventData { data: Some("test"), experiment: None, task_log: None, custom_data: None },
    })
}

/// What the test sends to a Slack webhook.
pub fn test_slack() -> Vec<u8> {
    to_bytes(&SlackMessage {
        blocks: vec![SlackBlock { kind: "section", text: SlackText { kind: "plain_text", text: "test".to_owned() }, fields: None }],
        attachments: None,
    })
}

fn mrkdwn(text: String) -> SlackText<'static> {
    SlackText { kind: "mrkdwn", text }
}

/// The Slack message of an experiment state change: a status line, and an attachment coloured
/// green (completed) or red (error) with the experiment, its status, duration, workspace and
/// project. `base_url` (`webhooks.base_url`) turns the name into a link to the web UI.
pub fn experiment_slack(experiment: &ExperimentFacts, base_url: Option<&str>) -> Vec<u8> {
    let base_url = base_url.map(|u| u.trim_end_matches('/')).filter(|u| !u.is_empty());
    let title = format!("{} (#{})", experiment.name, experiment.id);
    let linked = match base_url {
        Some(base) => format!("<{base}/det/experiments/{}/overview | {title}>", experiment.id),
        None => title,
    };
    let (status, headline, color, shown_state) = match experiment.state.as_str() {
        "COMPLETED" => ("Your experiment completed successfully 🎉".to_owned(), format!("✅ {linked}"), "#13B670", "Completed".to_owned()),
        "ERROR" => ("Your experiment has stopped with errors".to_owned(), format!("❌ {linked}"), "#DD5040", "Errored".to_owned()),
        other => (format!("The status of your experiment is {other}"), linked, "#13B670", other.to_owned()),
    };
    let hours = experiment.duration / 3600;
    let minutes = (experiment.duration % 3600) / 60;
    let mut fields = vec![mrkdwn(format!("*Status*: {shown_state}")), mrkdwn(format!("*Duration*: {hours}h {minutes}min"))];
    if !experiment.workspace.is_empty() {
        fields.push(mrkdwn(format!("*Workspace*: {}", experiment.workspace)));
    }
    if !experiment.project.is_empty() {
        fields.push(mrkdwn(format!("*Project*: {}", experiment.project)));
    }
    to_bytes(&SlackMessage {
        blocks: vec![SlackBlock { kind: "section", text: SlackText { kind: "plain_text", text: status }, fields: None }],
        attachments: Some(vec![SlackAttachment {
            color,
            blocks: vec![SlackBlock { kind: "section", text: mrkdwn(headline), fields: Some(fields) }],
        }]),
    })
}

/// The Slack message of a task-log match: where it ran, the line and the pattern, and where to
/// read the rest.
pub fn task_log_slack(log: &TaskLogFacts, regex: &str, trial: Option<TrialRef>, task_type: &str, base_url: Option<&str>) -> Vec<u8> {
    let base_url = base_url.map(|u| u.trim_end_matches('/')).filter(|u| !u.is_empty());
    let matched = format!("```{}```\nThis log matched the regex\n```{regex}```\n", log.triggering_log);
    let text = match trial {
        Some(t) => {
            let path = format!("/det/experiments/{}/trials/{}/logs", t.experiment_id, t.trial_id);
            let link = match base_url {
                Some(base) => format!("<{base}{path} | View full logs here>"),
                None => format!("View full logs at {path}"),
            };
            format!(
                "Experiment ID `{}`, Trial ID `{}`, running on node `{}`, reported a log\n{matched}{link}",
                t.experiment_id, t.trial_id, log.node_name
            )
        }
        None => {
            format!("Task ID `{}`, task type `{task_type}`, running on node `{}`, reported a log\n{matched}", log.task_id, log.node_name)
        }
    };
    to_bytes(&SlackMessage { blocks: vec![SlackBlock { kind: "section", text: mrkdwn(text), fields: None }], attachments: None })
}

/// Hex HMAC-SHA256 of `"{timestamp},{body}"`, as upstream signs.
pub fn signature(key: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.as_bytes()) else {
        return String::new();
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b",");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn facts(state: &str) -> ExperimentFacts {
        ExperimentFacts {
            id: 41,
            state: state.to_owned(),
            name: "cifar".to_owned(),
            duration: 3720,
            resource_pool: "default".to_owned(),
            slots_per_trial: 2,
            workspace: "Uncategorized".to_owned(),
            project: "Uncategorized".to_owned(),
        }
    }

    #[test]
    fn default_payloads_have_upstreams_shape() {
        let v: Value = serde_json::from_slice(&experiment_default("id-1", 1665689991, &facts("COMPLETED"))).unwrap();
        assert_eq!(
            v,
            json!({"event_id": "id-1", "event_type": "EXPERIMENT_STATE_CHANGE", "timestamp": 1665689991,
                "condition": {"state": "COMPLETED"},
                "event_data": {"experiment": {"id": 41, "state": "COMPLETED", "name": "cifar", "duration": 3720,
                    "resource_pool": "default", "slots_per_trial": 2, "workspace": "Uncategorized", "project": "Uncategorized"}}})
        );
        let log = TaskLogFacts { task_id: "t".into(), node_name: "agent-1".into(), triggering_log: "OOM!".into() };
        let v: Value = serde_json::from_slice(&task_log_default("id-2", 5, "OOM", &log)).unwrap();
        assert_eq!(
            v,
            json!({"event_id": "id-2", "event_type": "TASK_LOG", "timestamp": 5, "condition": {"regex": "OOM"},
                "event_data": {"task_log": {"task_id": "t", "node_name": "agent-1", "triggering_log": "OOM!"}}})
        );
        let v: Value = serde_json::from_slice(&test_default("id-3", 6)).unwrap();
        assert_eq!(v["event_data"], json!({"data": "test"}));
    }

    #[test]
    fn slack_messages_have_blocks_and_a_coloured_attachment() {
        let v: Value = serde_json::from_slice(&experiment_slack(&facts("ERROR"), Some("https://det.example/"))).unwrap();
        assert_eq!(v["blocks"][0]["text"], json!({"type": "plain_text", "text": "Your experiment has stopped with errors"}));
        let att = &v["attachments"][0];
        assert_eq!(att["color"], "#DD5040");
        assert_eq!(att["blocks"][0]["text"]["text"], "❌ <https://det.example/det/experiments/41/overview | cifar (#41)>");
        assert_eq!(att["blocks"][0]["fields"][0]["text"], "*Status*: Errored");
        assert_eq!(att["blocks"][0]["fields"][1]["text"], "*Duration*: 1h 2min");
        let log = TaskLogFacts { task_id: "t".into(), node_name: "agent-1".into(), triggering_log: "OOM!".into() };
        let v: Value =
            serde_json::from_slice(&task_log_slack(&log, "OOM", Some(TrialRef { experiment_id: 3, trial_id: 7 }), "TRIAL", None)).unwrap();
        let text = v["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(text.starts_with("Experiment ID `3`, Trial ID `7`, running on node `agent-1`"), "{text}");
        assert!(text.contains("```OOM!```") && text.ends_with("View full logs at /det/experiments/3/trials/7/logs"), "{text}");
    }

    #[test]
    fn signature_is_hex_hmac_of_timestamp_comma_body() {
        // Computed independently: hmac.new(b"key", b"1700000000,{}", hashlib.sha256).hexdigest()
        assert_eq!(signature("key", 1700000000, b"{}"), "2fdbb74798e4583e043310a5bc73eefc59c82df61e53f710b45d401474727221");
    }
}
