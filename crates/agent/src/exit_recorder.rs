//! The exit recorder: the task's first process, which forks the real task and waits for it, so
//! that how the task ended is known even when the agent was not there to see it.
//!
//! It runs between `fork` and `exec` of the process the agent spawns ([`ExitRecorder::fork`] is
//! a `pre_exec` hook): the hook forks again; the new child returns and goes on to exec the task,
//! the hook's process stays behind as the recorder. The recorder is the process group's leader
//! (the pid the agent knows), closes every inherited descriptor but stdio (so it does not hold the
//! spawn's exec-error pipe open), ignores the termination signals sent to the group (a SIGKILL
//! still ends it), waits for the task, writes `code N` or `signal N` to the exit file, and then
//! ends the same way the task did, so the agent's own wait sees the task's status.
//!
//! Only async-signal-safe calls, and no allocation, happen in the hook: the path is prepared
//! before the spawn.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

/// The signals meant for the task that the recorder itself ignores.
const IGNORED: [libc::c_int; 7] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGPIPE];

/// A prepared recorder for one task.
#[derive(Debug, Clone)]
pub(crate) struct ExitRecorder {
    exit_file: CString,
}

impl ExitRecorder {
    pub fn new(exit_file: &Path) -> io::Result<ExitRecorder> {
        let exit_file =
            CString::new(exit_file.as_os_str().as_bytes()).map_err(|_| io::Error::other("the exit file path contains a NUL byte"))?;
        Ok(ExitRecorder { exit_file })
    }

    /// Forks the task from the spawned process: returns `Ok` in the task (which then execs), and
    /// never returns in the recorder.
    ///
    /// # Safety
    /// Only to be called in a child between `fork` and `exec` (a `pre_exec` hook).
    pub unsafe fn fork(&self) -> io::Result<()> {
        // SAFETY: all calls below are async-signal-safe system calls on memory owned here.
        unsafe {
            let task = libc::fork();
            if task < 0 {
                return Err(io::Error::last_os_error());
            }
            if task == 0 {
                return Ok(());
            }
            close_inherited();
            // The agent's SIGCHLD handler would write to a descriptor closed above.
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            for signal in IGNORED {
                libc::signal(signal, libc::SIG_IGN);
            }
            let mut status: libc::c_int = 0;
            loop {
                if libc::waitpid(task, &mut status, 0) == task {
                    break;
                }
                if *libc::__errno_location() != libc::EINTR {
                    libc::_exit(127);
                }
            }
            if libc::WIFEXITED(status) {
                let code = libc::WEXITSTATUS(status);
                self.write(b"code ", code);
                libc::_exit(code);
            }
            let signal = if libc::WIFSIGNALED(status) { libc::WTERMSIG(status) } else { libc::SIGKILL };
            self.write(b"signal ", signal);
            // End by the same signal: no core file of the recorder, default disposition, unblocked.
            let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
    }

    /// Writes `prefix` and `number` and a newline to the exit file, in one `write`.
    unsafe fn write(&self, prefix: &[u8], number: libc::c_int) {
        let mut line = [0u8; 32];
        let mut len = 0;
        for &b in prefix {
            line[len] = b;
            len += 1;
        }
        len += format_int(number, &mut line[len..]);
        line[len] = b'\n';
        len += 1;
        // SAFETY: a NUL-terminated path and a buffer of `len` bytes owned here.
        unsafe {
            let fd = libc::open(self.exit_file.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC, 0o600);
            if fd >= 0 {
                libc::write(fd, line.as_ptr().cast(), len);
                libc::close(fd);
            }
        }
    }
}

/// Closes every descriptor above stderr.
unsafe fn close_inherited() {
    // SAFETY: plain system calls on descriptors this process owns.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
                n if n > 0 => n.min(1 << 20) as libc::c_int,
                _ => 1024,
            };
            for fd in 3..max {
                libc::close(fd);
            }
        }
    }
}

/// Writes `n` in decimal into `out` (at least 11 bytes); returns the number of bytes written.
fn format_int(n: i32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut value = n.unsigned_abs();
    loop {
        digits[count] = b'0' + (value % 10) as u8;
        count += 1;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    let mut len = 0;
    if n < 0 {
        out[0] = b'-';
        len = 1;
    }
    for i in (0..count).rev() {
        out[len] = digits[i];
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_format_without_allocating() {
        for n in [0, 7, 42, -3, i32::MAX, i32::MIN] {
            let mut out = [0u8; 11];
            let len = format_int(n, &mut out);
            assert_eq!(std::str::from_utf8(&out[..len]).unwrap(), n.to_string());
        }
    }
}
