//! `det command|cmd`: run a command on the cluster and follow its output (upstream's
//! `cli/command.py`); the rest is shared with the other NTSC kinds.

use std::time::{Duration, Instant};

use clap::Subcommand;
use resolute_api::commands::{GetCommandResponse, LaunchCommandRequest, LaunchCommandResponse};
use resolute_api::tasks::TaskState;

use super::Globals;
use super::ntsc::{self, Kind, ListArgs};
use super::ntsc_launch::{LaunchArgs, print_warnings};
use super::wire::connect;
use crate::client::{Client, path_segment};
use crate::error::CliError;
use crate::log_stream::{LogArgs, green};
use crate::say;

/// How long `run` waits, after the log stream ended, for the master to record the exit.
const EXIT_WAIT: Duration = Duration::from_secs(30);

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum CommandCommand {
    /// list commands
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// display command metadata
    Describe {
        /// command ID
        command_id: String,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// display command config
    Config {
        /// command ID
        command_id: String,
    },
    /// create command
    Run {
        #[command(flatten)]
        launch: LaunchArgs,
        /// entrypoint command and arguments to execute
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        entrypoint: Vec<String>,
    },
    /// fetch command logs
    Logs {
        /// command ID
        #[arg(value_name = "COMMAND_ID")]
        task_id: String,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// forcibly terminate a command
    Kill {
        /// command ID
        #[arg(required = true)]
        command_id: Vec<String>,
        /// ignore errors
        #[arg(short, long)]
        force: bool,
    },
    /// set command attributes
    Set {
        #[command(subcommand)]
        what: SetCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum SetCommand {
    /// set priority
    Priority {
        /// task ID
        id: String,
        /// priority
        priority: i32,
    },
}

/// `det cmd` alone lists commands, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<CommandCommand>) -> Result<(), CliError> {
    let kind = Kind::Command;
    match cmd.unwrap_or(CommandCommand::List(ListArgs::default())) {
        CommandCommand::List(args) => ntsc::list(g, kind, &args),
        CommandCommand::Describe { command_id, csv } => ntsc::describe(g, kind, &command_id, csv),
        CommandCommand::Config { command_id } => ntsc::config(g, kind, &command_id),
        CommandCommand::Run { launch, entrypoint } => run_command(g, &launch, &entrypoint),
        CommandCommand::Logs { task_id, logs } => ntsc::logs(g, Some(kind), &task_id, false, &logs),
        CommandCommand::Kill { command_id, force } => ntsc::kill(g, kind, &command_id, force),
        CommandCommand::Set { what: SetCommand::Priority { id, priority } } => ntsc::set_priority(g, kind, &id, priority),
    }
}

/// `run_command`: launch, then (unless `-d`) follow the task's logs and fail when the command did.
fn run_command(g: &Globals, launch: &LaunchArgs, entrypoint: &[String]) -> Result<(), CliError> {
    let config = launch.build_config(entrypoint)?;
    let client = connect(g)?;
    let files = launch.files()?;
    let req = LaunchCommandRequest { config: Some(config), template_name: launch.template.clone(), files, ..Default::default() };
    let resp: LaunchCommandResponse = client.post("api/v1/commands", &req)?;
    let cmd = resp.command.base;
    if launch.detach {
        say!("{}", cmd.id);
        return Ok(());
    }
    say!("{}", green(&format!("Launched command (id: {}, name: {}).", cmd.id, cmd.description)));
    print_warnings(&resp.warnings);
    ntsc::follow_task_logs(&client, &cmd.id, &LogArgs::follow(), false)?;
    match exit_status(&client, &cmd.id)? {
        Some(status) if !succeeded(&status) => Err(CliError::msg(format!("command {} failed: {status}", cmd.id))),
        _ => Ok(()),
    }
}

/// The command's `exitStatus` once the master has recorded its end (`None` if it never does).
fn exit_status(client: &Client, id: &str) -> Result<Option<String>, CliError> {
    let deadline = Instant::now() + EXIT_WAIT;
    let path = format!("api/v1/commands/{}", path_segment(id));
    loop {
        let cmd = client.get::<GetCommandResponse>(&path)?.command.base;
        if cmd.exit_status.is_some() || cmd.state == TaskState::Terminated || Instant::now() >= deadline {
            return Ok(cmd.exit_status);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The master's summary of a clean exit ("resources exited successfully …").
fn succeeded(status: &str) -> bool {
    let status = status.to_lowercase();
    status.contains("exited successfully") || status.contains("zero exit code") && !status.contains("non-zero")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: CommandCommand,
    }

    #[test]
    fn run_keeps_the_entrypoint_flags() {
        let cli = Cli::try_parse_from(["det", "run", "--config", "a=1", "-d", "python3", "-c", "print(1)"]).unwrap();
        let CommandCommand::Run { launch, entrypoint } = cli.cmd else { panic!("not run") };
        assert!(launch.detach);
        assert_eq!(launch.config, ["a=1"]);
        assert_eq!(entrypoint, ["python3", "-c", "print(1)"]);
    }

    #[test]
    fn exit_summaries() {
        assert!(succeeded("resources exited successfully with a zero exit code"));
        assert!(!succeeded("resources failed with non-zero exit code: exit code 3"));
        assert!(!succeeded("killed"));
    }
}
