//! A scripted Nacos v1 HTTP server: `instance/list` answers as [`Fake::mode`] says (good,
//! garbage, 500, dropped), logins hand out short-lived tokens and, with auth on, requests
//! without the current token get 403. Registrations and beats are counted. For bad-input tests
//! of the HTTP transport.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long [`Fake::wait_lists`] waits.
const T: Duration = Duration::from_secs(15);

/// [`Fake::mode`]: `instance/list` answers one host.
pub const GOOD: u8 = 0;
/// [`Fake::mode`]: `instance/list` answers HTML.
pub const GARBAGE: u8 = 1;
/// [`Fake::mode`]: `instance/list` answers HTTP 500.
pub const FIVE_HUNDRED: u8 = 2;
/// [`Fake::mode`]: `instance/list` drops the connection.
pub const DROP: u8 = 3;
/// [`Fake::mode`]: `instance/list` answers two hosts.
pub const TWO_HOSTS: u8 = 4;

/// A tiny scripted Nacos: `instance/list` answers according to `mode`; with `auth`, requests
/// need `Authorization: Bearer tok<valid>` and `auth/login` hands out `tok<valid>`.
#[derive(Debug)]
pub struct Fake {
    /// `host:port` it listens on.
    pub addr: String,
    /// How `instance/list` answers ([`GOOD`], [`GARBAGE`], ...).
    pub mode: AtomicU8,
    /// `instance/list` requests received.
    pub lists: AtomicU64,
    /// Logins received.
    pub logins: AtomicU64,
    /// The number of the token currently valid (`tok<valid>`).
    pub valid: AtomicU64,
    /// Requests need a token.
    pub auth: bool,
    /// The token TTL it hands out.
    pub ttl_secs: u64,
    /// Registrations received.
    pub registers: AtomicU64,
    /// Beats received.
    pub beats: AtomicU64,
    /// The last beat request, raw.
    pub last_beat: std::sync::Mutex<String>,
}

/// The JSON of one enabled Dubbo provider host on 127.0.0.1:`port`.
pub fn host(port: u16) -> String {
    format!(
        r#"{{"ip":"127.0.0.1","port":{port},"enabled":true,"healthy":true,"metadata":{{"protocol":"dubbo","path":"S","interface":"S","side":"provider"}}}}"#
    )
}

impl Fake {
    /// Starts a fake on a free port; with `auth`, tokens live `ttl_secs`.
    pub async fn start(auth: bool, ttl_secs: u64) -> Arc<Fake> {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Arc::new(Fake {
            addr: l.local_addr().unwrap().to_string(),
            mode: AtomicU8::new(GOOD),
            lists: AtomicU64::new(0),
            logins: AtomicU64::new(0),
            valid: AtomicU64::new(1),
            auth,
            ttl_secs,
            registers: AtomicU64::new(0),
            beats: AtomicU64::new(0),
            last_beat: std::sync::Mutex::new(String::new()),
        });
        let f = fake.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = l.accept().await {
                let f = f.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    // Read the body too (Content-Length), for form-encoded beats.
                    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let req = String::from_utf8_lossy(&buf).to_string();
                    let (status, body) = f.answer(&req);
                    if status == 0 {
                        return; // drop the connection
                    }
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(resp.as_bytes()).await;
                });
            }
        });
        fake
    }

    /// The status and body answering the raw request `req` (status 0: drop the connection).
    pub fn answer(&self, req: &str) -> (u16, String) {
        let line = req.lines().next().unwrap_or("");
        if line.starts_with("POST /nacos/v1/ns/instance?") {
            self.registers.fetch_add(1, Ordering::SeqCst);
            return (200, "ok".into());
        }
        if line.starts_with("PUT /nacos/v1/ns/instance/beat") {
            self.beats.fetch_add(1, Ordering::SeqCst);
            *self.last_beat.lock().unwrap() = req.to_owned();
            return (200, r#"{"code":20404,"clientBeatInterval":100}"#.into());
        }
        if line.contains("/nacos/v3/auth/") {
            // A 2.x server: no v3 API.
            return (404, "no such api".into());
        }
        if line.contains("/nacos/v1/auth/users/login") || line.contains("/nacos/v1/auth/login") {
            self.logins.fetch_add(1, Ordering::SeqCst);
            let t = self.valid.load(Ordering::SeqCst);
            return (
                200,
                format!(r#"{{"accessToken":"tok{t}","tokenTtl":{}}}"#, self.ttl_secs),
            );
        }
        if self.auth {
            let want = format!(
                "authorization: bearer tok{}",
                self.valid.load(Ordering::SeqCst)
            );
            if !req.to_ascii_lowercase().lines().any(|l| l.trim() == want) {
                return (403, r#"{"status":403,"message":"unknown user!"}"#.into());
            }
        }
        if line.contains("/nacos/v1/ns/instance/list") {
            self.lists.fetch_add(1, Ordering::SeqCst);
            return match self.mode.load(Ordering::SeqCst) {
                GOOD => (200, format!(r#"{{"name":"x","hosts":[{}]}}"#, host(20001))),
                TWO_HOSTS => (
                    200,
                    format!(
                        r#"{{"name":"x","hosts":[{},{}]}}"#,
                        host(20001),
                        host(20002)
                    ),
                ),
                GARBAGE => (200, "<html>definitely not json".into()),
                FIVE_HUNDRED => (500, "caused: internal error".into()),
                _ => (0, String::new()),
            };
        }
        (200, "ok".into())
    }

    /// `instance/list` requests so far.
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::SeqCst)
    }

    /// Waits (up to 15 s) for `more` further `instance/list` requests.
    pub async fn wait_lists(&self, more: u64) {
        let target = self.lists() + more;
        crate::eventually("more polls", T, || async {
            (self.lists() >= target).then_some(())
        })
        .await;
    }
}
