//! CPU time of the processes in a benchmark, read from /proc (Linux): what each side (master,
//! load generator, PostgreSQL backends) spent on the measured phase. On a machine whose cores
//! the load generator shares, this is what says how far the master alone would go.

use std::time::Duration;

/// The processes to account for.
pub struct CpuProbe {
    pub master: u32,
    /// Whether to count the PostgreSQL server: every process named `postgres` on the machine
    /// (backends and background workers; the benchmark's server serves only the benchmark).
    pub postgres: bool,
}

/// CPU time used, per side.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSample {
    pub master: Duration,
    pub generator: Duration,
    pub database: Duration,
}

impl CpuProbe {
    pub fn sample(&self) -> CpuSample {
        CpuSample {
            master: process_cpu(self.master),
            generator: process_cpu(std::process::id()),
            database: if self.postgres { processes_named("postgres").into_iter().map(process_cpu).sum() } else { Duration::ZERO },
        }
    }
}

impl CpuSample {
    /// What was used between `earlier` and this sample.
    pub fn since(&self, earlier: &CpuSample) -> CpuSample {
        CpuSample {
            master: self.master.saturating_sub(earlier.master),
            generator: self.generator.saturating_sub(earlier.generator),
            database: self.database.saturating_sub(earlier.database),
        }
    }
}

/// The pids of the processes whose `comm` is `name`.
fn processes_named(name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim_end() == name))
        .collect()
}

/// CPU time of a process's live threads: the first field of each thread's `schedstat`, in
/// nanoseconds. Zero when /proc does not have it (not Linux, or the process is gone).
pub fn process_cpu(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let nanos: u64 = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|text| text.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_uses_cpu() {
        let before = process_cpu(std::process::id());
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = process_cpu(std::process::id());
        if cfg!(target_os = "linux") {
            assert!(after > before, "{before:?} → {after:?}");
        }
    }
}
