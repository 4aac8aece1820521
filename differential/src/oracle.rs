//! The Java oracle process: Apache Dubbo 3.3.6's classes behind a JSON-lines pipe
//! (`differential/oracle`, built by `scripts/peers/java-oracle.sh`).
//!
//! One process serves a whole run. A request is one line `{"op": NAME, "cases": [...]}`; the
//! answer is one line `{"results": [...]}` in the same order. Sending a batch and reading its
//! answer are separate calls, so the caller can compute its own answers while Java works.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

use crate::Error;

/// Environment variable with the command line that starts the oracle (words separated by spaces).
pub const ORACLE_CMD_ENV: &str = "DUBBO_DIFF_ORACLE_CMD";

/// A running oracle process; killed when dropped.
#[derive(Debug)]
pub struct Oracle {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    line: String,
    ops: Vec<String>,
}

impl Oracle {
    /// Starts the oracle: the command in [`ORACLE_CMD_ENV`], else the one
    /// `scripts/peers/java-oracle.sh cmd` prints (which builds the oracle when stale).
    pub fn start(repo_root: &Path) -> Result<Oracle, Error> {
        let cmd = match std::env::var(ORACLE_CMD_ENV) {
            Ok(c) if !c.trim().is_empty() => c,
            _ => {
                let script = repo_root.join("scripts/peers/java-oracle.sh");
                let out = Command::new("bash")
                    .arg(&script)
                    .arg("cmd")
                    .stderr(Stdio::inherit())
                    .output()
                    .map_err(|e| Error::Oracle(format!("running {}: {e}", script.display())))?;
                if !out.status.success() {
                    return Err(Error::Oracle(format!(
                        "{} cmd failed ({})",
                        script.display(),
                        out.status
                    )));
                }
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
        };
        Self::spawn(&cmd)
    }

    /// Starts the oracle with an explicit command line.
    pub fn spawn(cmd: &str) -> Result<Oracle, Error> {
        let mut words = cmd.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| Error::Oracle("empty oracle command".into()))?;
        let mut child = Command::new(program)
            .args(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::Oracle(format!("starting {program}: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(Error::Oracle("oracle has no stdin/stdout".into()));
        };
        let mut oracle = Oracle {
            child,
            input: BufWriter::with_capacity(1 << 16, stdin),
            output: BufReader::with_capacity(1 << 16, stdout),
            line: String::new(),
            ops: Vec::new(),
        };
        let pong = oracle.request(&json!({"op": "ping"}))?;
        oracle.ops = pong
            .get("ops")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(oracle)
    }

    /// The operations the oracle knows.
    pub fn ops(&self) -> &[String] {
        &self.ops
    }

    fn request(&mut self, req: &Value) -> Result<Value, Error> {
        self.send_value(req)?;
        self.receive_value()
    }

    fn send_value(&mut self, req: &Value) -> Result<(), Error> {
        serde_json::to_writer(&mut self.input, req).map_err(|e| Error::Oracle(e.to_string()))?;
        self.input
            .write_all(b"\n")
            .and_then(|()| self.input.flush())
            .map_err(|e| Error::Oracle(format!("writing to the oracle: {e}")))
    }

    fn receive_value(&mut self) -> Result<Value, Error> {
        self.line.clear();
        let n = self
            .output
            .read_line(&mut self.line)
            .map_err(|e| Error::Oracle(format!("reading from the oracle: {e}")))?;
        if n == 0 {
            return Err(Error::Oracle("the oracle exited".into()));
        }
        let v: Value = serde_json::from_str(&self.line)
            .map_err(|e| Error::Oracle(format!("bad answer line: {e}")))?;
        if let Some(f) = v.get("fatal") {
            return Err(Error::Oracle(format!("oracle: {f}")));
        }
        Ok(v)
    }

    /// Sends one batch of cases of `op`; read the answer with [`Oracle::receive`].
    pub fn send(&mut self, op: &str, cases: &[Value]) -> Result<(), Error> {
        self.send_value(&json!({"op": op, "cases": cases}))
    }

    /// Reads the answers to the batch sent last, one per case.
    pub fn receive(&mut self, expected: usize) -> Result<Vec<Value>, Error> {
        let v = self.receive_value()?;
        let Some(Value::Array(results)) = v.get("results").cloned() else {
            return Err(Error::Oracle("answer has no results".into()));
        };
        if results.len() != expected {
            return Err(Error::Oracle(format!(
                "{} answers for {expected} cases",
                results.len()
            )));
        }
        Ok(results)
    }

    /// Asks one batch and waits for its answers.
    pub fn ask(&mut self, op: &str, cases: &[Value]) -> Result<Vec<Value>, Error> {
        self.send(op, cases)?;
        self.receive(cases.len())
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
