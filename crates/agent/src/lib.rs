//! The Resolute agent's process runtime. The agent runs each task as a local process (no
//! container engine): [`devices`] decides which slots the agent offers, [`spec`] turns a
//! [`TaskSpec`] into a command line and environment, [`workdir`] prepares the task's directory,
//! [`process`] spawns and supervises it (its first process is the exit recorder, `exit_recorder`),
//! and [`logs`] follows its output files ([`task_files`]) as [`events`].
//! [`ports`] picks free host
//! ports for a task's servers and [`work_files`] writes the extra files a task is sent. How the
//! master drives the runtime over the agent websocket protocol is [`daemon`]; [`harness_shim`]
//! gives each task the info files the upstream harness expects; [`task_user`] the Unix account a
//! task runs as; [`rendezvous`] where the processes of a multi-agent allocation meet.

pub mod config;
pub mod daemon;
pub mod devices;
pub mod events;
mod exit_recorder;
pub mod harness_shim;
pub mod logs;
pub mod master_tls;
pub mod ports;
pub mod process;
pub mod rendezvous;
pub mod spec;
pub mod task_files;
pub mod task_user;
pub mod work_files;
pub mod workdir;

pub use config::{AgentConfig, ConfigError, SlotType};
pub use daemon::DaemonError;
pub use devices::{Device, DeviceError, DeviceSources, DeviceType, detect_devices, select_devices};
pub use events::{LogLine, RuntimeEvent, StdType, TaskExit};
pub use nix::sys::signal::Signal;
pub use ports::PortError;
pub use process::{OutputOffsets, Runtime, RuntimeError, RuntimeOptions, TaskHandle, TaskInfo, TaskStatus};
pub use spec::{Entrypoint, SpecError, TaskSpec, TaskType};
pub use task_user::TaskAccount;
pub use work_files::WorkFile;
pub use workdir::WorkDirError;
