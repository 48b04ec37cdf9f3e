//! `det`: the clap command tree, dispatch, and turning errors into `Error: ...` + exit code 1.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{ArgAction, Parser, Subcommand};
use resolute_cli::commands::Globals;
use resolute_cli::commands::agent::{self, AgentCommand};
use resolute_cli::commands::agent_run;
use resolute_cli::commands::checkpoint::{self, CheckpointCommand};
use resolute_cli::commands::command::{self, CommandCommand};
use resolute_cli::commands::deploy::{self, DeployArgs};
use resolute_cli::commands::experiment::{self, ExperimentCommand};
use resolute_cli::commands::job::{self, JobCommand};
use resolute_cli::commands::master::{self, MasterCommand};
use resolute_cli::commands::notebook::{self, NotebookCommand};
use resolute_cli::commands::preview::{self, PreviewArgs};
use resolute_cli::commands::resource_pool::{self, ResourcePoolCommand};
use resolute_cli::commands::shell::{self, ShellCommand};
use resolute_cli::commands::slot::{self, SlotCommand};
use resolute_cli::commands::task::{self, TaskCommand};
use resolute_cli::commands::template::{self, TemplateCommand};
use resolute_cli::commands::tensorboard::{self, TensorboardCommand};
use resolute_cli::commands::trial::{self, TrialCommand};
use resolute_cli::commands::tunnel::{self, TunnelArgs};
use resolute_cli::commands::user::{self, UserCommand};
use resolute_cli::url::canonicalize_master_url;

/// The master allocates per request and per metric batch from several threads; mimalloc's
/// per-thread pages cost a fraction of glibc's locked arenas there (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `det --version`: the upstream release whose CLI this replaces comes first, for scripts that
/// check it; then our own version.
const VERSION: &str = concat!("0.38.1 (resolute ", env!("CARGO_PKG_VERSION"), ")");

#[derive(Debug, Parser)]
#[command(name = "det", about = "Determined command-line client", version = VERSION)]
#[command(disable_version_flag = true, propagate_version = true)]
struct Cli {
    /// master address [env: DET_MASTER; default: localhost:8080]
    #[arg(short, long, global = true, value_name = "address")]
    master: Option<String>,
    /// run as the given user
    #[arg(short, long, global = true, value_name = "username")]
    user: Option<String>,
    /// print machine-readable JSON
    #[arg(long, global = true)]
    json: bool,
    /// print CLI version and exit
    #[arg(short = 'v', long, action = ArgAction::Version)]
    version: Option<bool>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// manage master
    Master {
        #[command(subcommand)]
        command: MasterCommand,
    },
    /// manage users
    #[command(visible_alias = "u")]
    User {
        #[command(subcommand)]
        command: Option<UserCommand>,
    },
    /// manage deployments
    #[command(visible_alias = "d")]
    Deploy(DeployArgs),
    /// manage experiments
    #[command(visible_alias = "e")]
    Experiment {
        #[command(subcommand)]
        command: Option<ExperimentCommand>,
    },
    /// manage trials
    #[command(visible_alias = "t")]
    Trial {
        #[command(subcommand)]
        command: TrialCommand,
    },
    /// manage checkpoints
    #[command(visible_alias = "c")]
    Checkpoint {
        #[command(subcommand)]
        command: CheckpointCommand,
    },
    /// manage tasks (commands, experiments, notebooks, shells, tensorboards)
    Task {
        #[command(subcommand)]
        command: Option<TaskCommand>,
    },
    /// manage agents
    #[command(visible_alias = "a")]
    Agent {
        #[command(subcommand)]
        command: Option<AgentCommand>,
    },
    /// manage slots
    #[command(visible_alias = "s")]
    Slot {
        #[command(subcommand)]
        command: Option<SlotCommand>,
    },
    /// list resource pools
    #[command(name = "resource-pool", visible_alias = "rp")]
    ResourcePool {
        #[command(subcommand)]
        command: Option<ResourcePoolCommand>,
    },
    /// manage jobs
    #[command(visible_alias = "j")]
    Job {
        #[command(subcommand)]
        command: Option<JobCommand>,
    },
    /// preview search
    PreviewSearch(PreviewArgs),
    /// manage commands
    #[command(name = "command", visible_alias = "cmd")]
    Cmd {
        #[command(subcommand)]
        command: Option<CommandCommand>,
    },
    /// manage notebooks
    Notebook {
        #[command(subcommand)]
        command: Option<NotebookCommand>,
    },
    /// manage shells
    Shell {
        #[command(subcommand)]
        command: Option<ShellCommand>,
    },
    /// manage TensorBoard instances
    Tensorboard {
        #[command(subcommand)]
        command: Option<TensorboardCommand>,
    },
    /// manage config templates
    #[command(visible_alias = "tpl")]
    Template {
        #[command(subcommand)]
        command: Option<TemplateCommand>,
    },
    /// tunnel stdin/stdout to a task's proxied port (ssh's ProxyCommand for `det shell`)
    Tunnel(TunnelArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    // Commands that never talk to a master as a client.
    let command = match cli.command {
        Command::Deploy(args) => return Ok(deploy::run(args)?),
        Command::Master { command: MasterCommand::Run(args) } => return Ok(master::run(args)?),
        Command::Agent { command: Some(AgentCommand::Run(args)) } => return Ok(agent_run::run(*args)?),
        // The tunnel names its own master; `-m` does not apply.
        Command::Tunnel(args) => return Ok(tunnel::run(&args, cli.user.as_deref())?),
        other => other,
    };
    let globals = Globals { master: master_url(cli.master)?, user: cli.user, json: cli.json };
    match command {
        Command::Master { command: MasterCommand::Info } => master::info(&globals)?,
        Command::User { command } => user::run(&globals, command)?,
        Command::Experiment { command } => experiment::run(&globals, command)?,
        Command::Trial { command } => trial::run(&globals, command)?,
        Command::Checkpoint { command } => checkpoint::run(&globals, command)?,
        Command::Task { command } => task::run(&globals, command)?,
        Command::Agent { command } => agent::run(&globals, command)?,
        Command::Slot { command } => slot::run(&globals, command)?,
        Command::ResourcePool { command } => resource_pool::run(&globals, command)?,
        Command::Job { command } => job::run(&globals, command)?,
        Command::PreviewSearch(args) => preview::run(&globals, args)?,
        Command::Cmd { command } => command::run(&globals, command)?,
        Command::Notebook { command } => notebook::run(&globals, command)?,
        Command::Shell { command } => shell::run(&globals, command)?,
        Command::Tensorboard { command } => tensorboard::run(&globals, command)?,
        Command::Template { command } => template::run(&globals, command)?,
        Command::Master { command: MasterCommand::Run(_) } | Command::Deploy(_) | Command::Tunnel(_) => {}
    }
    Ok(())
}

/// `-m`, else `DET_MASTER` (or upstream's older `DET_MASTER_ADDR`), else `localhost:8080`.
fn master_url(flag: Option<String>) -> anyhow::Result<String> {
    let raw = flag
        .or_else(|| std::env::var("DET_MASTER").ok())
        .or_else(|| std::env::var("DET_MASTER_ADDR").ok())
        .unwrap_or_else(|| "localhost:8080".to_owned());
    canonicalize_master_url(&raw).context("bad master address (-m/--master or DET_MASTER)")
}
