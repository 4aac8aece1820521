//! `watch --status`: the health of the registry connection and of the service's directory,
//! one line per change, instead of the provider diff.
//!
//! The registry's state comes from [`registry_core::Registry::health`] (connecting, connected,
//! degraded with a reason, reconnecting with a reason, closed); the service's from a
//! [`RegistryDirectory`]'s [`RegistryDirectory::health`] (providers known, usable, disabled,
//! notifications, last notify, last error). The directory does not connect to providers: its
//! invokers only stand for the listed providers, so "available" counts the providers a
//! consumer would call (enabled, routed in), not live connections.
//!
//! Human lines: `HH:MM:SS.mmm registry connected server=.. reconnects=..` and
//! `HH:MM:SS.mmm service <key> ready providers=.. available=.. disabled=.. notifications=..`;
//! `--json`: one object per change, `{"kind":"registry",..}` or `{"kind":"directory",..}`
//! with the fields of [`RegistryHealth`] / [`DirectoryHealth`].

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;
use async_trait::async_trait;
use invoker::directory::{DirectoryHealth, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResult, SharedInvoker,
};
use registry_core::health::RegistryHealth;
use registry_core::{Registry, Url};
use serde_json::json;

use super::clock;

/// Stands for one listed provider; never called.
#[derive(Debug)]
struct Listed {
    url: Url,
}

#[async_trait]
impl Invoker for Listed {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Err(RpcError::new(
            RpcErrorCode::Unknown,
            "watch --status does not call providers",
        ))
    }
}

/// Makes a [`Listed`] for every provider.
#[derive(Debug)]
struct ListedFactory;

impl InvokerFactory for ListedFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(Listed {
            url: provider.clone(),
        }))
    }
}

/// Prints every change of the registry's and the directory's health until `stop` resolves
/// (exit 0) or the registry is closed (exit 1).
pub async fn run(
    registry: Arc<dyn Registry>,
    consumer: Url,
    json: bool,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<ExitCode> {
    let mut reg = registry.health();
    reg.mark_changed();
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        consumer,
        Arc::new(ListedFactory),
        DirectoryOptions {
            register: false,
            count_calls: false,
            ..DirectoryOptions::default()
        },
    )
    .await
    .map_err(|e| anyhow!("subscribe failed: {e}"))?;
    let mut svc = dir.health();
    svc.mark_changed();
    tokio::pin!(stop);
    let code = loop {
        tokio::select! {
            biased;
            _ = &mut stop => break ExitCode::SUCCESS,
            r = reg.changed() => {
                if r.is_err() {
                    eprintln!("registry closed");
                    break ExitCode::FAILURE;
                }
                let h = reg.borrow_and_update().clone();
                write_line(&registry_line(&h, json))?;
            }
            r = svc.changed() => {
                if r.is_err() {
                    break ExitCode::FAILURE;
                }
                let h = svc.borrow_and_update().clone();
                write_line(&directory_line(&h, json))?;
            }
        }
    };
    dir.destroy();
    Ok(code)
}

fn write_line(line: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// One registry health line.
pub fn registry_line(h: &RegistryHealth, json: bool) -> String {
    if json {
        let mut v = json!({ "kind": "registry" });
        if let (Some(o), Ok(serde_json::Value::Object(f))) =
            (v.as_object_mut(), serde_json::to_value(h))
        {
            o.extend(f);
        }
        return v.to_string();
    }
    let mut s = format!(
        "{} registry {} server={} reconnects={}",
        clock(),
        h.state,
        h.server.as_deref().unwrap_or("-"),
        h.reconnects
    );
    if h.pending_retries > 0 {
        s.push_str(&format!(" pending_retries={}", h.pending_retries));
    }
    if let Some(e) = &h.last_error {
        s.push_str(&format!(" last_error={e:?}"));
    }
    s
}

/// One directory health line.
pub fn directory_line(h: &DirectoryHealth, json: bool) -> String {
    if json {
        let mut v = json!({ "kind": "directory" });
        if let (Some(o), Ok(serde_json::Value::Object(f))) =
            (v.as_object_mut(), serde_json::to_value(h))
        {
            o.extend(f);
        }
        return v.to_string();
    }
    let phase = serde_json::to_value(h.phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut s = format!(
        "{} service {} {phase} providers={} available={} disabled={} notifications={}",
        clock(),
        h.service,
        h.providers,
        h.available,
        h.disabled,
        h.notifications
    );
    if let Some(e) = &h.last_error {
        s.push_str(&format!(" last_error={e:?}"));
    }
    s
}
