//! [`Link`]: one established gRPC connection to one Nacos server, and the handshake that
//! makes it usable (Nacos's `GrpcClient.connectToServer`):
//!
//! 1. a fresh HTTP/2 connection (`Endpoint::connect`, h2c, no HTTP/2 keepalive pings,
//!    decoding limit 64 MiB so a 10k-instance service fits); over TLS (ALPN h2, `https`) when
//!    the URL asks for it, the handshake done by `transport_tls` in the channel's connector;
//! 2. `ServerCheckRequest` (anything but a `ServerCheckResponse`, e.g. "server is starting",
//!    ends the attempt);
//! 3. the bi-stream is opened by a reader task (never awaited inline: a Java server sends its
//!    response headers only with its first message) and `ConnectionSetupRequest` is its first
//!    message;
//! 4. the client waits for `SetupAckRequest` when the server negotiates abilities (Java 2.3+),
//!    else (and when no ack comes) probes `HealthCheckRequest` until it stops answering 301.
//!
//! Unary calls and the stream share the one HTTP/2 connection, which is what binds them to the
//! same server-side connection id.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use registry_core::backoff::Backoff;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tracing::debug;

use super::proto::{Payload, STREAM_PATH, UNARY_PATH};
use super::wire::{self, ResponseHead, ServerCheckResponse, SUCCESS};
use crate::error::{snippet, NacosError};

/// Largest message accepted from the server.
pub(crate) const MAX_DECODING: usize = 64 << 20;
/// How long a Java 2.3+ server may take to send SetupAckRequest.
const SETUP_ACK_WAIT: Duration = Duration::from_secs(5);

/// What the handshake needs to know.
#[derive(Debug, Clone)]
pub(crate) struct LinkSettings {
    /// TLS of the connection (ALPN h2), `None` for h2c.
    pub tls: Option<transport_tls::TlsClient>,
    /// Added to the main port.
    pub grpc_port_offset: i32,
    /// Per-request timeout (also the connect and setup timeout).
    pub timeout: Duration,
    /// `naming` or `config` (the `module` label).
    pub module: &'static str,
    /// `AppName` label.
    pub app_name: String,
    /// `tenant` of the setup (config connections).
    pub tenant: Option<String>,
}

/// Something the server sent on the stream, or the end of the stream.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A server request (push, detection, reset, setup ack).
    Message(Payload),
    /// The stream ended; why.
    Closed(String),
}

/// A reply: its type and JSON.
#[derive(Debug)]
pub(crate) struct Reply {
    /// `Metadata.type`.
    pub ty: String,
    /// The JSON body.
    pub json: Vec<u8>,
}

/// What the server said it can do (the `abilityTable` of its `SetupAckRequest`; Java 2.3+).
/// A server that sends no table (rnacos, Java before 2.3) can do neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServerAbilities {
    /// `supportPersistentInstanceByGrpc`: `PersistentInstanceRequest` is handled.
    pub persistent_instance: bool,
    /// `fuzzyWatch` (3.0+): `NamingFuzzyWatchRequest` and its pushes are handled.
    pub fuzzy_watch: bool,
}

impl ServerAbilities {
    /// The abilities of a `SetupAckRequest` body (unknown or unreadable: none).
    pub(crate) fn of_setup_ack(json: &[u8]) -> Self {
        let ack: wire::SetupAck = serde_json::from_slice(json).unwrap_or_default();
        let on = |k: &str| ack.ability_table.get(k) == Some(&serde_json::Value::Bool(true));
        ServerAbilities {
            persistent_instance: on(wire::ABILITY_PERSISTENT_INSTANCE),
            fuzzy_watch: on(wire::ABILITY_FUZZY_WATCH),
        }
    }
}

/// One usable connection. Cheap to clone; the connection closes when the session drops its
/// last clone and the reader task.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    channel: Channel,
    /// `host:port` (main port) of the server.
    pub server: Arc<str>,
    /// Which connection of the session this is (1, 2, ...).
    pub generation: u64,
    /// The server's id for it.
    pub connection_id: Arc<str>,
    /// What the server can do.
    pub abilities: ServerAbilities,
    out: mpsc::Sender<Payload>,
    client_ip: Arc<str>,
    timeout: Duration,
}

/// A freshly opened link with the stream's receiving side.
#[derive(Debug)]
pub(crate) struct Opened {
    pub link: Link,
    pub inbound: mpsc::Receiver<Inbound>,
    pub reader: JoinHandle<()>,
    /// Server requests that arrived during the handshake.
    pub early: Vec<Payload>,
}

fn grpc_target(server: &str, offset: i32) -> Result<(String, String), NacosError> {
    let (host, port) = server
        .rsplit_once(':')
        .ok_or_else(|| NacosError::InvalidConfig(format!("server {server:?} has no port")))?;
    let port: i32 = port
        .parse()
        .map_err(|_| NacosError::InvalidConfig(format!("server {server:?}: bad port")))?;
    let grpc = port + offset;
    if !(1..=65535).contains(&grpc) {
        return Err(NacosError::InvalidConfig(format!(
            "gRPC port {grpc} of {server} (offset {offset}) is out of range"
        )));
    }
    Ok((host.to_owned(), format!("{host}:{grpc}")))
}

fn transport_error(server: &str, what: &str, e: &dyn std::error::Error) -> NacosError {
    let mut reason = format!("{what}: {e}");
    let mut src = e.source();
    while let Some(x) = src {
        reason.push_str(": ");
        reason.push_str(&x.to_string());
        src = x.source();
    }
    NacosError::Connect {
        server: server.to_owned(),
        reason,
    }
}

/// The channel's connector over TLS: TCP to the URI's authority, then the TLS handshake
/// (ALPN h2), the certificate checked against `host` (or the configured server name). tonic
/// is built without TLS of its own, so an `https` URI goes to this connector as it is.
fn tls_connector(
    tls: transport_tls::TlsClient,
    host: String,
) -> impl tower::Service<
    tonic::codegen::http::Uri,
    Response = hyper_util::rt::TokioIo<transport_tls::TlsStream<tokio::net::TcpStream>>,
    Error = std::io::Error,
    Future = impl std::future::Future<
        Output = std::io::Result<
            hyper_util::rt::TokioIo<transport_tls::TlsStream<tokio::net::TcpStream>>,
        >,
    > + Send,
> + Send
       + 'static {
    tower::service_fn(move |uri: tonic::codegen::http::Uri| {
        let (tls, host) = (tls.clone(), host.clone());
        async move {
            let peer = uri
                .authority()
                .map(|a| a.as_str().to_owned())
                .ok_or_else(|| std::io::Error::other("gRPC URI without an authority"))?;
            let tcp = tokio::net::TcpStream::connect(&peer).await?;
            let _ = tcp.set_nodelay(true);
            let stream = tls
                .handshake(tcp, &host, &peer)
                .await
                .map_err(std::io::Error::other)?;
            Ok(hyper_util::rt::TokioIo::new(stream))
        }
    })
}

impl Link {
    /// Connects to `server` (`host:mainport`) and runs the handshake.
    pub(crate) async fn open(
        server: &str,
        generation: u64,
        s: &LinkSettings,
    ) -> Result<Opened, NacosError> {
        let (host, target) = grpc_target(server, s.grpc_port_offset)?;
        let scheme = if s.tls.is_some() { "https" } else { "http" };
        let endpoint = Endpoint::from_shared(format!("{scheme}://{target}"))
            .map_err(|e| NacosError::InvalidConfig(format!("server {server}: {e}")))?
            .connect_timeout(s.timeout)
            .tcp_nodelay(true);
        let connect = async {
            match &s.tls {
                None => endpoint.connect().await,
                Some(tls) => {
                    endpoint
                        .connect_with_connector(tls_connector(tls.clone(), host.clone()))
                        .await
                }
            }
        };
        let channel = tokio::time::timeout(s.timeout, connect)
            .await
            .map_err(|_| NacosError::Timeout {
                server: server.to_owned(),
                op: "grpc connect",
            })?
            .map_err(|e| transport_error(server, "grpc connect failed", &e))?;
        let client_ip: Arc<str> = registry_core::address::local_ip_for(&target).into();
        let (out, out_rx) = mpsc::channel::<Payload>(256);
        let mut link = Link {
            channel,
            server: server.into(),
            generation,
            connection_id: "".into(),
            abilities: ServerAbilities::default(),
            out,
            client_ip,
            timeout: s.timeout,
        };
        let check = match link
            .call(
                "server check",
                "ServerCheckRequest",
                &wire::Base::of("internal"),
                None,
            )
            .await
        {
            Ok(c) => c,
            Err(e) => {
                // A TLS refusal after the handshake (a client certificate the server wants)
                // reaches the call only as "cancelled": a handshake of our own says why.
                if let Some(tls) = &s.tls {
                    let within = s.timeout.min(Duration::from_secs(2));
                    if let Some(why) = tls.diagnose(&target, &host, within).await {
                        return Err(NacosError::Connect {
                            server: server.to_owned(),
                            reason: why.to_string(),
                        });
                    }
                }
                return Err(e);
            }
        };
        if check.ty != "ServerCheckResponse" {
            return Err(NacosError::Malformed {
                server: server.to_owned(),
                op: "server check",
                reason: format!("unexpected reply type {:?}", check.ty),
            });
        }
        let check: ServerCheckResponse =
            serde_json::from_slice(&check.json).map_err(|e| NacosError::Malformed {
                server: server.to_owned(),
                op: "server check",
                reason: e.to_string(),
            })?;
        link.connection_id = check.connection_id.unwrap_or_default().into();

        // The stream: setup first, then whatever the session sends.
        let version = concat!("Nacos-Rust-Dubbo:v", env!("CARGO_PKG_VERSION"));
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("source", "sdk");
        labels.insert("module", s.module);
        labels.insert("AppName", s.app_name.as_str());
        let setup = wire::ConnectionSetup {
            base: wire::Base::of("internal"),
            client_version: version,
            labels,
            // What this client can receive: naming connections handle fuzzy-watch pushes.
            ability_table: check.support_ability_negotiation.then(|| {
                let mut t = std::collections::BTreeMap::new();
                if s.module == "naming" {
                    t.insert(wire::ABILITY_FUZZY_WATCH.to_owned(), true);
                }
                t
            }),
            tenant: s.tenant.as_deref(),
        };
        let setup_json = serde_json::to_vec(&setup).unwrap_or_default();
        link.out
            .try_send(Payload::new(
                "ConnectionSetupRequest",
                setup_json,
                HashMap::new(),
                &link.client_ip,
            ))
            .map_err(|_| NacosError::Connect {
                server: server.to_owned(),
                reason: "stream closed before setup".into(),
            })?;
        let (in_tx, mut inbound) = mpsc::channel::<Inbound>(1024);
        let reader = tokio::spawn(read_stream(link.channel.clone(), out_rx, in_tx));

        let mut early = Vec::new();
        let mut registered = false;
        if check.support_ability_negotiation {
            let deadline = tokio::time::Instant::now() + SETUP_ACK_WAIT.min(s.timeout * 2);
            while !registered {
                match tokio::time::timeout_at(deadline, inbound.recv()).await {
                    Ok(Some(Inbound::Message(p))) if p.type_name() == "SetupAckRequest" => {
                        link.abilities = ServerAbilities::of_setup_ack(p.json());
                        registered = true;
                    }
                    Ok(Some(Inbound::Message(p))) => early.push(p),
                    Ok(Some(Inbound::Closed(why))) => {
                        reader.abort();
                        return Err(NacosError::Connect {
                            server: server.to_owned(),
                            reason: format!("stream closed during setup: {why}"),
                        });
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }
        if !registered {
            if let Err(e) = link.probe_registered(&mut inbound, &mut early).await {
                reader.abort();
                return Err(e);
            }
        }
        debug!(server, connection_id = %link.connection_id, generation, abilities = ?link.abilities, "nacos grpc connection ready");
        Ok(Opened {
            link,
            inbound,
            reader,
            early,
        })
    }

    /// HealthCheck until the server knows the connection (not 301), within the timeout.
    async fn probe_registered(
        &self,
        inbound: &mut mpsc::Receiver<Inbound>,
        early: &mut Vec<Payload>,
    ) -> Result<(), NacosError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut pauses =
            Backoff::exponential(Duration::from_millis(20), Duration::from_millis(500)).attempts();
        let mut pause = pauses.next_delay();
        loop {
            while let Ok(m) = inbound.try_recv() {
                match m {
                    Inbound::Message(p) => early.push(p),
                    Inbound::Closed(why) => {
                        return Err(NacosError::Connect {
                            server: self.server.to_string(),
                            reason: format!("stream closed during setup: {why}"),
                        })
                    }
                }
            }
            match self.health_check().await {
                Ok(()) => return Ok(()),
                Err(NacosError::Grpc { code, .. }) if code == wire::CODE_UNREGISTERED => {}
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() + pause > deadline {
                return Err(NacosError::Timeout {
                    server: self.server.to_string(),
                    op: "connection setup",
                });
            }
            tokio::time::sleep(pause).await;
            pause = pauses.next_delay();
        }
    }

    /// One `HealthCheckRequest`.
    pub(crate) async fn health_check(&self) -> Result<(), NacosError> {
        self.call(
            "health check",
            "HealthCheckRequest",
            &wire::Base::of("internal"),
            None,
        )
        .await
        .map(drop)
    }

    /// A unary call of type `ty` with body `body`: the reply, or the error it carries
    /// (`ErrorResponse`, `resultCode != 200`), or a transport error.
    pub(crate) async fn call<B: serde::Serialize>(
        &self,
        op: &'static str,
        ty: &str,
        body: &B,
        token: Option<&str>,
    ) -> Result<Reply, NacosError> {
        let json =
            serde_json::to_vec(body).map_err(|e| NacosError::InvalidConfig(e.to_string()))?;
        let mut headers = HashMap::new();
        if let Some(t) = token {
            headers.insert("accessToken".to_owned(), t.to_owned());
        }
        let req = Payload::new(ty, json, headers, &self.client_ip);
        let mut grpc =
            tonic::client::Grpc::new(self.channel.clone()).max_decoding_message_size(MAX_DECODING);
        let fut = async {
            grpc.ready()
                .await
                .map_err(|e| transport_error(&self.server, "grpc channel not ready", &e))?;
            grpc.unary(
                tonic::Request::new(req),
                PathAndQuery::from_static(UNARY_PATH),
                tonic_prost::ProstCodec::<Payload, Payload>::default(),
            )
            .await
            .map_err(|st| status_error(&self.server, op, &st))
        };
        let resp = tokio::time::timeout(self.timeout, fut)
            .await
            .map_err(|_| NacosError::Timeout {
                server: self.server.to_string(),
                op,
            })??
            .into_inner();
        let reply = Reply {
            ty: resp.type_name().to_owned(),
            json: resp.json().to_vec(),
        };
        check_reply(&self.server, op, &reply)?;
        Ok(reply)
    }

    /// Sends a reply (or request) on the stream, waiting at most the request timeout for room
    /// in it: a server that stops reading its stream cannot hold the session.
    ///
    /// Errors: [`NacosError::Timeout`] (op `stream send`) when the stream stays full,
    /// [`NacosError::Connect`] when it is closed; both call for a reconnect.
    pub(crate) async fn send_stream(&self, ty: &str, json: Vec<u8>) -> Result<(), NacosError> {
        let p = Payload::new(ty, json, HashMap::new(), &self.client_ip);
        match tokio::time::timeout(self.timeout, self.out.send(p)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(NacosError::Connect {
                server: self.server.to_string(),
                reason: "stream closed".into(),
            }),
            Err(_) => Err(NacosError::Timeout {
                server: self.server.to_string(),
                op: "stream send",
            }),
        }
    }
}

fn status_error(server: &str, op: &'static str, st: &tonic::Status) -> NacosError {
    match st.code() {
        tonic::Code::DeadlineExceeded => NacosError::Timeout {
            server: server.to_owned(),
            op,
        },
        tonic::Code::ResourceExhausted => NacosError::Malformed {
            server: server.to_owned(),
            op,
            reason: format!("reply too large: {}", snippet(st.message())),
        },
        c => NacosError::Connect {
            server: server.to_owned(),
            reason: format!("{op}: grpc status {c:?}: {}", snippet(st.message())),
        },
    }
}

/// The error a reply carries, if any.
pub(crate) fn check_reply(server: &str, op: &'static str, reply: &Reply) -> Result<(), NacosError> {
    let head: ResponseHead =
        serde_json::from_slice(&reply.json).map_err(|e| NacosError::Malformed {
            server: server.to_owned(),
            op,
            reason: format!("{} body is not JSON: {e}", reply.ty),
        })?;
    if reply.ty != "ErrorResponse" && head.result_code == SUCCESS {
        return Ok(());
    }
    let code = if head.error_code != 0 {
        head.error_code
    } else {
        head.result_code
    };
    Err(NacosError::grpc(
        server,
        op,
        code,
        head.message.as_deref().unwrap_or(""),
    ))
}

/// The reader task: opens the stream, forwards what the server sends, reports the end.
async fn read_stream(
    channel: Channel,
    out_rx: mpsc::Receiver<Payload>,
    in_tx: mpsc::Sender<Inbound>,
) {
    let outbound =
        futures::stream::unfold(
            out_rx,
            |mut rx| async move { rx.recv().await.map(|p| (p, rx)) },
        );
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(MAX_DECODING);
    let why = match grpc.ready().await {
        Err(e) => format!("channel not ready: {e}"),
        Ok(()) => match grpc
            .streaming(
                tonic::Request::new(outbound),
                PathAndQuery::from_static(STREAM_PATH),
                tonic_prost::ProstCodec::<Payload, Payload>::default(),
            )
            .await
        {
            Err(st) => format!("stream refused: {:?} {}", st.code(), snippet(st.message())),
            Ok(resp) => {
                let mut s = resp.into_inner();
                loop {
                    match s.message().await {
                        Ok(Some(p)) => {
                            if in_tx.send(Inbound::Message(p)).await.is_err() {
                                return;
                            }
                        }
                        Ok(None) => break "stream ended by the server".to_owned(),
                        Err(st) => {
                            break format!(
                                "stream error: {:?} {}",
                                st.code(),
                                snippet(st.message())
                            )
                        }
                    }
                }
            }
        },
    };
    let _ = in_tx.send(Inbound::Closed(why)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_port() {
        assert_eq!(
            grpc_target("127.0.0.1:8848", 1000).unwrap().1,
            "127.0.0.1:9848"
        );
        assert!(grpc_target("127.0.0.1:65000", 1000).is_err());
        assert!(grpc_target("nohost", 1000).is_err());
    }

    #[test]
    fn reply_classification() {
        let ok = Reply {
            ty: "InstanceResponse".into(),
            json: br#"{"resultCode":200}"#.to_vec(),
        };
        assert!(check_reply("s", "x", &ok).is_ok());
        let unreg = Reply {
            ty: "ErrorResponse".into(),
            json: br#"{"resultCode":500,"errorCode":301,"message":"Connection is unregistered."}"#
                .to_vec(),
        };
        let e = check_reply("s", "x", &unreg).unwrap_err();
        assert!(e.is_retryable() && e.needs_reconnect(), "{e}");
        let garbage = Reply {
            ty: "InstanceResponse".into(),
            json: b"<html>".to_vec(),
        };
        assert!(matches!(
            check_reply("s", "x", &garbage),
            Err(NacosError::Malformed { .. })
        ));
    }
}
