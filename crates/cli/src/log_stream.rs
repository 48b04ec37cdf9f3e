//! Trial and task log streams (`GET /api/v1/{trials|tasks}/{id}/logs`): the query upstream's
//! `api.trial_logs`/`api.task_logs` build, reading the newline-delimited `{"result": {...}}`
//! objects as they arrive, and printing them as `pprint_logs` does.

use std::io::{BufRead, BufReader, IsTerminal};

use clap::Args;
use serde_json::Value;

use crate::client::{Client, ClientError, path_segment};
use crate::error::CliError;
use crate::output::emit_raw;
use crate::{render, say};

/// `v1LogLevel` names in order; `--level X` asks for X and everything after it.
const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];

/// Upstream's `logs_args_description` (trial) and `common_log_options` (task).
#[derive(Clone, Debug, Default, Args)]
pub struct LogArgs {
    /// follow the logs of a running trial, similar to tail -f
    #[arg(short, long)]
    pub follow: bool,
    /// number of lines to show, counting from the beginning of the log (default is all)
    #[arg(long, conflicts_with = "tail")]
    pub head: Option<u32>,
    /// number of lines to show, counting from the end of the log (default is all)
    #[arg(long)]
    pub tail: Option<u32>,
    /// agents to show logs from (repeat for multiple values)
    #[arg(long = "agent-id")]
    pub agent_ids: Vec<String>,
    /// containers to show logs from (repeat for multiple values)
    #[arg(long = "container-id")]
    pub container_ids: Vec<String>,
    /// containers to show logs from (repeat for multiple values)
    #[arg(long = "rank-id")]
    pub rank_ids: Vec<i32>,
    /// show logs only from before (RFC 3339 format), e.g. '2021-10-26T23:17:12Z'
    #[arg(long)]
    pub timestamp_before: Option<String>,
    /// show logs only from after (RFC 3339 format), e.g. '2021-10-26T23:17:12Z'
    #[arg(long)]
    pub timestamp_after: Option<String>,
    /// show logs with this level or higher (TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL)
    #[arg(long, value_parser = LEVELS)]
    pub level: Option<String>,
    /// sources to show logs from (repeat for multiple values)
    #[arg(long = "source")]
    pub sources: Vec<String>,
    /// output stream to show logs from (repeat for multiple values)
    #[arg(long = "stdtype")]
    pub stdtypes: Vec<String>,
    /// Task logs only (`det task logs --allocation-id`).
    #[arg(skip)]
    pub allocation_ids: Vec<String>,
}

impl LogArgs {
    /// Only following, for `det experiment create -f`.
    pub fn follow() -> LogArgs {
        LogArgs { follow: true, ..LogArgs::default() }
    }

    /// The query string (without `?`), as upstream's bindings encode it.
    pub fn query(&self) -> Result<String, CliError> {
        if usize::from(self.head.is_some()) + usize::from(self.tail.is_some()) + usize::from(self.follow) > 1 {
            return Err(CliError::msg("at most one of head, tail, or follow may be set"));
        }
        let mut q: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: String| q.push((k.to_owned(), v));
        for a in &self.agent_ids {
            push("agentIds", a.clone());
        }
        for a in &self.allocation_ids {
            push("allocationIds", a.clone());
        }
        for c in &self.container_ids {
            push("containerIds", c.clone());
        }
        push("follow", self.follow.to_string());
        if let Some(level) = &self.level {
            let from = LEVELS.iter().position(|l| l == level).unwrap_or(0);
            for l in &LEVELS[from..] {
                push("levels", format!("LOG_LEVEL_{l}"));
            }
        }
        if let Some(limit) = self.head.or(self.tail) {
            push("limit", limit.to_string());
        }
        if self.tail.is_some() {
            push("orderBy", "ORDER_BY_DESC".to_owned());
        }
        for r in &self.rank_ids {
            push("rankIds", r.to_string());
        }
        for s in &self.sources {
            push("sources", s.clone());
        }
        for s in &self.stdtypes {
            push("stdtypes", s.clone());
        }
        if let Some(t) = &self.timestamp_before {
            push("timestampBefore", t.clone());
        }
        if let Some(t) = &self.timestamp_after {
            push("timestampAfter", t.clone());
        }
        Ok(q.iter().map(|(k, v)| format!("{k}={}", path_segment(v))).collect::<Vec<_>>().join("&"))
    }
}

/// Reads a log stream at `path` (e.g. `api/v1/trials/3/logs`), calling `each` per entry as it
/// arrives; with `--tail` the entries come newest first, so they are collected and reversed.
pub fn stream(client: &Client, path: &str, args: &LogArgs, mut each: impl FnMut(&Value)) -> Result<(), CliError> {
    let url = format!("{path}?{}", args.query()?);
    let resp = client.open(&url, "application/json")?;
    let mut held = Vec::new();
    for line in BufReader::new(resp).lines() {
        let line = line.map_err(|e| ClientError::BadResponse { what: format!("GET /{path}"), cause: e.to_string() })?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(&line).map_err(|e| ClientError::BadResponse { what: format!("GET /{path}"), cause: e.to_string() })?;
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            let message = err.get("message").or_else(|| err.get("error")).and_then(Value::as_str).unwrap_or("log stream failed");
            return Err(CliError::msg(message));
        }
        let Some(entry) = value.get("result") else { continue };
        if args.tail.is_some() {
            held.push(entry.clone());
        } else {
            each(entry);
        }
    }
    held.iter().rev().for_each(each);
    Ok(())
}

/// `pprint_logs`: each entry's `message` as is (it carries its own newline); our master may
/// send only the raw `log` line, which is printed the same way.
pub fn print_entry(entry: &Value, json: bool) {
    if json {
        say!("{}", render::json(entry));
        return;
    }
    let message = entry.get("message").and_then(Value::as_str).filter(|m| !m.is_empty());
    let text = message.or_else(|| entry.get("log").and_then(Value::as_str)).unwrap_or_default();
    emit_raw(text);
}

/// Upstream's closing line, green on a terminal (termcolor's rule).
pub fn print_ended(kind: &str, command: &str, id: &str) {
    let text = format!("{kind} log stream ended. To reopen log stream, run: det {command} logs -f {id}");
    say!("{}", green(&text));
}

/// `termcolor.colored(text, "green")`: plain unless stdout is a terminal and NO_COLOR is unset.
pub fn green(text: &str) -> String {
    if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        format!("\x1b[32m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_upstream_queries() {
        assert_eq!(LogArgs::follow().query().unwrap(), "follow=true");
        let args = LogArgs { tail: Some(5), level: Some("ERROR".into()), rank_ids: vec![0, 1], ..LogArgs::default() };
        assert_eq!(
            args.query().unwrap(),
            "follow=false&levels=LOG_LEVEL_ERROR&levels=LOG_LEVEL_CRITICAL&limit=5&orderBy=ORDER_BY_DESC&rankIds=0&rankIds=1"
        );
        let args = LogArgs { head: Some(2), timestamp_after: Some("2021-10-26T23:17:12+01:00".into()), ..LogArgs::default() };
        assert_eq!(args.query().unwrap(), "follow=false&limit=2&timestampAfter=2021-10-26T23%3A17%3A12%2B01%3A00");
        let args = LogArgs { head: Some(2), follow: true, ..LogArgs::default() };
        assert!(args.query().is_err());
    }
}
