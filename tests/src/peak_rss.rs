//! Peak resident memory of a child process, for tests where memory is the point (hostile
//! input must not make a consumer grow without bound).
//!
//! [`run`] starts the command, polls its `VmHWM` (the kernel's high-water mark of resident
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
use tokio::process::Command;

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

/// Runs `cmd` to its end (or to `cap` bytes of resident memory, or to `deadline`) and reports
/// its peak resident memory. Panics when the command cannot be started.
pub async fn run(mut cmd: Command, cap: u64, deadline: Duration) -> Measured {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id().unwrap_or(0);
    let out = child.stdout.take().map(|s| tokio::spawn(keep_some(s)));
    let err = child.stderr.take().map(|s| tokio::spawn(keep_some(s)));
    let (mut peak, mut over_cap, mut timed_out) = (0u64, false, false);
    let status = loop {
        if let Some(hwm) = vm_hwm(pid) {
            peak = peak.max(hwm);
            if peak > cap && !over_cap {
                over_cap = true;
                let _ = child.start_kill();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if start.elapsed() > deadline && !timed_out {
            timed_out = true;
            let _ = child.start_kill();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let elapsed = start.elapsed();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    let stdout = match out {
        Some(h) => text(h.await.unwrap_or_default()),
        None => String::new(),
    };
    let stderr = match err {
        Some(h) => text(h.await.unwrap_or_default()),
        None => String::new(),
    };
    Measured {
        code: status.and_then(|s| s.code()),
        stdout,
        stderr,
        peak_rss: peak,
        over_cap,
        timed_out,
        elapsed,
    }
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
