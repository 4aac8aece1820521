//! Helpers shared by the `dubbo-registry invoke` tests: running the binary and reading its
//! exit code and output, and the peers those tests call (`tests::dubbo2_peers`, `tests::triple_peers`).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // not every test uses every helper

/// The Java Dubbo2 and Node (sofa-rpc-node) peers and the Dubbo2 URL builders.
#[allow(unused_imports)]
pub use tests::dubbo2_peers as dubbo;

/// The value table and helpers of the interop tests with the real Java and Go Dubbo peers.
pub mod interop;

/// Helpers of the application-level tests against the real Java peers.
pub mod app;

/// The grpcio and Node Triple peers and the test `.proto` files.
pub use tests::triple_peers as triple;

use serde_json::Value;

/// A port on 127.0.0.1 that was free a moment ago: a target nothing listens on.
pub fn free_port() -> u16 {
    triple::free_port()
}

/// What one `dubbo-registry` run ended with.
pub struct Out {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl Out {
    /// Stdout parsed as one JSON value; panics (showing both streams) when it is not one.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {:?} / {:?}", self.stdout, self.stderr))
    }
}

/// Runs `dubbo-registry invoke` with the given arguments, in order, and waits for it to exit.
pub async fn invoke(args: &[&str]) -> Out {
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .arg("invoke")
        .args(args)
        .output()
        .await
        .unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `dubbo-registry invoke` with the argument lists `parts` one after the other.
pub async fn invoke_parts(parts: &[&[&str]]) -> Out {
    invoke(&parts.concat()).await
}
