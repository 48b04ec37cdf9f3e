//! The `det` command-line client: a drop-in for upstream `determined==0.38.1`'s `det` for the
//! commands it implements, plus `det master run` and a process-based `det deploy local`.

pub mod auth_store;
pub mod checkpoint_download;
pub mod client;
pub mod commands;
pub mod context_upload;
pub mod error;
pub mod local_process;
pub mod log_stream;
pub mod master_tls;
pub mod memory;
pub mod output;
pub mod password;
pub mod prompt;
pub mod render;
pub mod session;
pub mod setting_flags;
pub mod table;
pub mod url;
