//! Hostile rule documents, as an attacker with write access to one config-centre key would
//! publish them, and a way to measure what a child process costs while it reads them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};

/// A "billion laughs" document of `kind` (`condition`, `tag` or `configurators`): nine
/// levels of nine aliases to the level below, about 620 bytes, 9^9 strings when expanded.
pub fn billion_laughs(kind: &str) -> String {
    let mut s =
        String::from("configVersion: v3.0\nlol0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for i in 1..=8 {
        let p = i - 1;
        s.push_str(&format!(
            "lol{i}: &l{i} [*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p}]\n"
        ));
    }
    s.push_str(valid_body(kind));
    s
}

/// A document of `kind` whose body holds a block sequence nested `depth` levels deep
/// (`- - - ... - x` on one line: two bytes per level).
pub fn deep_sequence(kind: &str, depth: usize) -> String {
    let mut s = String::from("configVersion: v3.0\nnest:\n  ");
    for _ in 0..depth {
        s.push_str("- ");
    }
    s.push_str("x\n");
    s.push_str(valid_body(kind));
    s
}

/// The fields that make a rule of `kind` valid (the hostile part is an unknown field, which
/// a parser must still read: Java's SnakeYAML builds the whole document first).
fn valid_body(kind: &str) -> &'static str {
    match kind {
        "tag" => "key: app\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:1\"]\n",
        "configurators" => "scope: service\nkey: S\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    parameters:\n      timeout: 1\n",
        _ => "key: S\nconditions:\n  - => host = 127.0.0.1\n",
    }
}

/// What a measured child process did.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its peak resident set, in KiB (GNU time's `%M`).
    pub peak_kib: u64,
}

/// GNU `time` and util-linux `prlimit`, when both are installed.
pub fn tools_present() -> bool {
    Path::new("/usr/bin/time").exists() && Path::new("/usr/bin/prlimit").exists()
}

/// A child process started by [`spawn_measured`].
#[derive(Debug)]
pub struct MeasuredChild {
    /// The `time` process (its stdout and stdin are the measured program's).
    pub child: Child,
    out: PathBuf,
}

/// Starts `cmd` (program, arguments and environment) under `/usr/bin/time` and
/// `prlimit --as`, so a runaway child cannot take the machine's memory (an address-space cap
/// of `cap_mib`); `prepare` sets stdin/stdout. Stderr is inherited.
pub fn spawn_measured(
    cmd: &Command,
    cap_mib: u64,
    prepare: impl FnOnce(&mut Command),
) -> std::io::Result<MeasuredChild> {
    let out = std::env::temp_dir().join(format!("peak-{}.txt", crate::unique("rss")));
    let mut c = Command::new("/usr/bin/time");
    c.arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&out)
        .arg("/usr/bin/prlimit")
        .arg(format!("--as={}", cap_mib * 1024 * 1024))
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    prepare(&mut c);
    Ok(MeasuredChild {
        child: c.spawn()?,
        out,
    })
}

impl MeasuredChild {
    /// The measured program's process id (the child of `time`; `prlimit` execs it).
    pub fn program_pid(&self) -> Option<u32> {
        let t = self.child.id();
        let list = std::fs::read_to_string(format!("/proc/{t}/task/{t}/children")).ok()?;
        list.split_whitespace().next()?.parse().ok()
    }

    /// Sends SIGINT (Ctrl-C) to the measured program.
    pub fn interrupt(&self) -> std::io::Result<()> {
        let pid = self
            .program_pid()
            .ok_or_else(|| std::io::Error::other("the measured program is not running"))?;
        Command::new("kill")
            .arg("-INT")
            .arg(pid.to_string())
            .status()
            .map(|_| ())
    }

    /// Waits for the end and reads the peak resident set.
    pub fn finish(mut self) -> std::io::Result<Measured> {
        let status = self.child.wait()?;
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let _ = std::fs::remove_file(&self.out);
        let peak_kib = text
            .lines()
            .rev()
            .find_map(|l| l.trim().parse::<u64>().ok())
            .unwrap_or(0);
        Ok(Measured { status, peak_kib })
    }
}

impl Drop for MeasuredChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.interrupt();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
