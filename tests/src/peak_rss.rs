//! Peak resident memory of a child process, for tests where memory is the point (hostile
//! input must not make a consumer grow without bound).
//!
//! [`run`] (or [`spawn`], for a child the test talks to while it runs) starts the command, polls its `VmHWM` (the kernel's high-water mark of resident
//! memory, `/proc/<pid>/status`) every few milliseconds until it exits, and kills it when the
//! mark passes a cap, so that a test of a regression cannot take the machine down with it. The
//! mark only grows, so polling misses at most what the process allocated in its last few
//! milliseconds before exiting. Linux only: elsewhere no mark is read and
//! [`Measured::peak_rss`] stays 0 (callers assert it is not).
//!
//! Output is kept up to [`KEEP_OUTPUT`] bytes per stream and the rest is drained, so a child
//! that prints gigabytes cannot grow the test process either.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{ChildStdout, Command};

/// Bytes kept of each of the child's output streams.
pub const KEEP_OUTPUT: usize = 256 * 1024;

/// How one measured run ended.
#[derive(Debug)]
pub struct Measured {
    /// The exit code (`None` when a signal ended it, e.g. the cap's kill or an abort).
    pub code: Option<i32>,
    /// Standard output (the first [`KEEP_OUTPUT`] bytes), lossily decoded.
    pub stdout: String,
    /// Standard error (the first [`KEEP_OUTPUT`] bytes), lossily decoded.
    pub stderr: String,
    /// The highest `VmHWM` seen, in bytes.
    pub peak_rss: u64,
    /// True when the run was killed for passing the cap.
    pub over_cap: bool,
    /// True when the run was killed for passing the deadline.
    pub timed_out: bool,
    /// Wall time until exit.
    pub elapsed: Duration,
}

impl Measured {
    /// The peak in MiB (for messages and reports).
    pub fn peak_mib(&self) -> f64 {
        self.peak_rss as f64 / (1024.0 * 1024.0)
    }
}

/// The `VmHWM` of process `pid` in bytes, when readable.
pub fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

async fn keep_some(mut r: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = KEEP_OUTPUT.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    kept
}

/// A measured child process started by [`spawn`]: its resident memory is watched (and the
/// cap and deadline enforced) by a task of its own until it exits.
#[derive(Debug)]
pub struct Running {
    pid: u32,
    /// The child's standard output, for a test that reads it while the child runs; what is
    /// left here when [`Running::finish`] is called is kept in [`Measured::stdout`].
    pub stdout: Option<ChildStdout>,
    stderr: Option<tokio::task::JoinHandle<Vec<u8>>>,
    monitor: tokio::task::JoinHandle<Watched>,
    start: Instant,
}

/// What the monitor saw: exit status, peak, and whether it had to kill.
#[derive(Debug)]
struct Watched {
    code: Option<i32>,
    peak: u64,
    over_cap: bool,
    timed_out: bool,
}

/// Starts `cmd` and watches its resident memory: killed when it passes `cap` bytes or runs
/// past `deadline`. Panics when the command cannot be started.
pub fn spawn(mut cmd: Command, cap: u64, deadline: Duration) -> Running {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id().unwrap_or(0);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take().map(|s| tokio::spawn(keep_some(s)));
    let monitor = tokio::spawn(async move {
        let (mut peak, mut over_cap, mut timed_out) = (0u64, false, false);
        let status = loop {
            if let Some(hwm) = vm_hwm(pid) {
                peak = peak.max(hwm);
                if peak > cap && !over_cap {
                    over_cap = true;
                    let _ = child.start_kill();
                }
            }
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if start.elapsed() > deadline && !timed_out {
                timed_out = true;
                let _ = child.start_kill();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        Watched {
            code: status.and_then(|s| s.code()),
            peak,
            over_cap,
            timed_out,
        }
    });
    Running {
        pid,
        stdout,
        stderr,
        monitor,
        start,
    }
}

impl Running {
    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends SIGINT (Ctrl-C) to the child.
    pub fn interrupt(&self) -> std::io::Result<()> {
        let status = std::process::Command::new("kill")
            .arg("-INT")
            .arg(self.pid.to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "kill -INT {} failed",
                self.pid
            )))
        }
    }

    /// Waits for the end of the child and reports what it cost.
    pub async fn finish(self) -> Measured {
        let out = self.stdout.map(|s| tokio::spawn(keep_some(s)));
        let watched = self.monitor.await.unwrap_or(Watched {
            code: None,
            peak: 0,
            over_cap: false,
            timed_out: false,
        });
        let elapsed = self.start.elapsed();
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        let stdout = match out {
            Some(h) => text(h.await.unwrap_or_default()),
            None => String::new(),
        };
        let stderr = match self.stderr {
            Some(h) => text(h.await.unwrap_or_default()),
            None => String::new(),
        };
        Measured {
            code: watched.code,
            stdout,
            stderr,
            peak_rss: watched.peak,
            over_cap: watched.over_cap,
            timed_out: watched.timed_out,
            elapsed,
        }
    }
}

/// Runs `cmd` to its end (or to `cap` bytes of resident memory, or to `deadline`) and reports
/// its peak resident memory. Panics when the command cannot be started.
pub async fn run(cmd: Command, cap: u64, deadline: Duration) -> Measured {
    spawn(cmd, cap, deadline).finish().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_mark() {
        if cfg!(target_os = "linux") {
            assert!(vm_hwm(std::process::id()).is_some_and(|b| b > 0));
        }
    }
}
