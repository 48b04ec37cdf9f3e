//! `det experiment create`: config file + `--config` overrides, the context upload, and with
//! `-f` following the first trial's logs until the experiment ends.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Map, Value, json};

use super::Globals;
use super::experiment::wait;
use super::wire::{connect, int};
use crate::client::Client;
use crate::context_upload::{MAX_CONTEXT_SIZE, read_v1_context};
use crate::error::CliError;
use crate::log_stream::{self, LogArgs};
use crate::{render, say};

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// experiment config file (.yaml)
    pub config_file: PathBuf,
    /// file or directory containing model definition
    pub model_def: Option<PathBuf>,
    /// additional files to copy into the task container
    #[arg(short, long)]
    pub include: Vec<PathBuf>,
    /// name of template to apply to the experiment configuration
    #[arg(long)]
    pub template: Option<String>,
    /// place this experiment inside this project
    #[arg(long = "project_id")]
    pub project_id: Option<i32>,
    /// Additional configuration arguments, as `key=value` (dot notation for nested keys,
    /// comma-separated lists, JSON/YAML for complex values)
    #[arg(long)]
    pub config: Vec<String>,
    /// follow the logs of the first trial that is created
    #[arg(short, long, conflicts_with_all = ["paused", "test_mode"])]
    pub follow_first_trial: bool,
    /// do not activate the experiment
    #[arg(long, conflicts_with = "test_mode")]
    pub paused: bool,
    /// validate the experiment configuration and model definition without creating an experiment
    #[arg(short = 't', long)]
    pub test_mode: bool,
}

const SLOTS_WARNING: &str = "Warning: The requested job requires more slots than currently available. You may need to increase cluster resources in order for the job to run.";

pub fn create(g: &Globals, args: &CreateArgs) -> Result<(), CliError> {
    let path = args.config_file.display().to_string();
    let config_text =
        std::fs::read_to_string(&args.config_file).map_err(|e| CliError::msg(format!("cannot read experiment config file {path}: {e}")))?;
    let config = parse_config(&config_text, &path)?;
    let config = apply_overrides(config, &args.config)?;
    // Re-serialising drops the user's comments, so upstream does it only when something changed.
    let config_text = if args.config.is_empty() { config_text } else { render::yaml(&config) };

    if let Some(dir) = &args.model_def
        && !dir.exists()
    {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        return Err(CliError::msg(format!("Path '{}' doesn't exist", abs.display())));
    }
    let client = connect(g)?;
    let mut stdout = std::io::stdout();
    let files = read_v1_context(args.model_def.as_deref(), &args.include, MAX_CONTEXT_SIZE, &mut stdout)
        .map_err(|e| CliError::msg(e.to_string()))?;
    let mut body = json!({
        "activate": !args.paused,
        "config": config_text,
        "modelDefinition": files,
        "validateOnly": args.test_mode,
    });
    if let Some(p) = args.project_id {
        body["projectId"] = json!(p);
    }
    if let Some(t) = &args.template {
        body["template"] = json!(t);
    }
    let resp: Value = client.post("api/v1/experiments", &body)?;
    // The config's warnings (ignored keys, deprecated forms, filled-in defaults), to stderr.
    for warning in resp.get("configWarnings").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        eprintln!("Warning: {warning}");
    }
    if args.test_mode {
        say!("Experiment configuration validation succeeded! 🎉");
        return Ok(());
    }
    let id = resp.get("experiment").and_then(|e| int(e, "id")).unwrap_or_default();
    say!("Created experiment {id}");
    let warnings = resp.get("warnings").and_then(Value::as_array).map(Vec::len).unwrap_or(0);
    for _ in 0..warnings {
        eprintln!("{SLOTS_WARNING}");
    }
    if !args.paused && args.follow_first_trial {
        follow_first_trial(&client, id)?;
    }
    Ok(())
}

/// `_parse_config_text_or_exit`: the file must hold a non-empty YAML mapping.
fn parse_config(text: &str, path: &str) -> Result<Value, CliError> {
    let value: Value = serde_norway::from_str(text).map_err(|e| CliError::msg(format!("invalid experiment config file {path}: {e}")))?;
    match value {
        Value::Object(map) if !map.is_empty() => Ok(Value::Object(map)),
        _ => Err(CliError::msg(format!("invalid experiment config file {path}"))),
    }
}

/// `ntsc.parse_config_overrides`: `a.b=v` merged into the config, `v` read as YAML, commas
/// making lists (unless the value is a `[`/`{` literal); `bind_mounts` always becomes a list.
pub fn apply_overrides(mut config: Value, overrides: &[String]) -> Result<Value, CliError> {
    for arg in overrides {
        let Some((key, raw)) = arg.split_once('=') else {
            return Err(CliError::msg(format!(
                "Could not read configuration option '{arg}'\n\nExpecting: key=value, e.g. resources.slots=4 \
                 (nested keys by dot notation, lists by commas, complex values as JSON)"
            )));
        };
        let load = |s: &str| -> Result<Value, CliError> {
            let v: Option<Value> = serde_norway::from_str(s).map_err(|e| CliError::msg(format!("invalid value in --config {arg}: {e}")))?;
            Ok(v.unwrap_or(Value::Null))
        };
        let coerce = key == "bind_mounts";
        let value = if raw.starts_with(['[', '{']) {
            let v = load(raw)?;
            if coerce && raw.starts_with('{') { Value::Array(vec![v]) } else { v }
        } else if raw.contains(',') {
            Value::Array(raw.split(',').map(load).collect::<Result<_, _>>()?)
        } else {
            let v = load(raw)?;
            if coerce { Value::Array(vec![v]) } else { v }
        };
        let mut patch = value;
        for part in key.split('.').rev() {
            let mut m = Map::new();
            m.insert(part.to_owned(), patch);
            patch = Value::Object(m);
        }
        merge(&mut config, patch);
    }
    Ok(config)
}

/// `util.merge_dicts`: objects merge key by key; anything else is replaced (a `null` parent
/// becomes an object first, as upstream's `_replace_value` does).
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                let slot = b.entry(k).or_insert(Value::Null);
                if slot.is_null() && v.is_object() {
                    *slot = Value::Object(Map::new());
                }
                merge(slot, v);
            }
        }
        (b, p) => *b = p,
    }
}

/// `_follow_experiment_logs`, then (unlike upstream, for scripts) fail unless the experiment
/// ends COMPLETED.
fn follow_first_trial(client: &Client, exp_id: i64) -> Result<(), CliError> {
    say!("Waiting for first trial to begin...");
    let trial_id = loop {
        let resp: Value = client.get(&format!("api/v1/experiments/{exp_id}/trials"))?;
        let ids = resp.get("trials").and_then(Value::as_array).map(|ts| ts.iter().filter_map(|t| int(t, "id")).collect::<Vec<_>>());
        if let Some(first) = ids.and_then(|ids| ids.into_iter().min()) {
            break first;
        }
        // An experiment that ends before any trial starts would otherwise be waited on forever.
        let exp = super::experiment::get_experiment(client, exp_id)?;
        let state = super::wire::text(&exp, "state");
        if ["STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_DELETED"].contains(&state) {
            return Err(CliError::msg(format!(
                "This experiment has terminated before a trial was started. Experiment is in state {}.",
                state.trim_start_matches("STATE_")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    say!("Following first trial with ID {trial_id}");
    let streamed = log_stream::stream(client, &format!("api/v1/trials/{trial_id}/logs"), &LogArgs::follow(), |e| {
        log_stream::print_entry(e, false);
    });
    log_stream::print_ended("Trial", "trial", &trial_id.to_string());
    streamed?;
    let state = wait(client, exp_id, Duration::from_millis(500))?;
    if state != "STATE_COMPLETED" {
        return Err(CliError::msg(format!("experiment {exp_id} ended in state {}", state.trim_start_matches("STATE_"))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_merge_like_upstream() {
        let config = parse_config("name: x\nresources:\n  slots_per_trial: 1\nslurm:\n", "c.yaml").unwrap();
        let out = apply_overrides(
            config,
            &[
                "resources.slots_per_trial=4".into(),
                "searcher.metric=loss".into(),
                "labels=a,b".into(),
                "slurm.sbatch_args=[--mem=1g]".into(),
                "bind_mounts={host_path: /tmp, container_path: /tmp}".into(),
            ],
        )
        .unwrap();
        assert_eq!(out["resources"]["slots_per_trial"], 4);
        assert_eq!(out["searcher"]["metric"], "loss");
        assert_eq!(out["labels"], json!(["a", "b"]));
        assert_eq!(out["slurm"]["sbatch_args"], json!(["--mem=1g"]));
        assert_eq!(out["bind_mounts"], json!([{"host_path": "/tmp", "container_path": "/tmp"}]));
        assert!(apply_overrides(json!({"a": 1}), &["novalue".into()]).is_err());
    }

    #[test]
    fn config_must_be_a_mapping() {
        assert!(parse_config("", "c.yaml").is_err());
        assert!(parse_config("- a\n", "c.yaml").unwrap_err().to_string().contains("invalid experiment config file c.yaml"));
        assert!(parse_config("a: [\n", "c.yaml").is_err());
    }
}
