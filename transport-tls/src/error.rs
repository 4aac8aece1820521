//! [`TlsError`]: what went wrong with a TLS configuration or handshake, said so that an operator
//! knows what to fix: which peer, which file, which name. Never key material or file contents.

use std::io;
use std::path::PathBuf;

use rustls::CertificateError;

use crate::time::format_unix;

/// Everything that can go wrong with TLS, from reading the configuration to the handshake and
/// the first records after it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A configured file cannot be read.
    #[error("TLS configuration: cannot read {what} {}: {source}", path.display())]
    ReadFile {
        /// What the file should hold ("CA file", "client certificate", "client private key").
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A configured file was read but does not hold what it should.
    #[error("TLS configuration: {what} {} {problem}", path.display())]
    BadFile {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong (never its contents).
        problem: String,
    },
    /// The settings contradict each other or ask for something unsupported.
    #[error("TLS configuration: {0}")]
    Config(String),
    /// The peer's certificate chain does not lead to a trusted CA.
    #[error(
        "TLS handshake with {peer}: its certificate is not signed by a trusted CA (trusted: {trust})"
    )]
    UnknownCa {
        /// `host:port`.
        peer: String,
        /// What was trusted (the CA file, or the built-in Mozilla roots).
        trust: String,
    },
    /// The peer's certificate has expired.
    #[error("TLS handshake with {peer}: its certificate has expired{detail}")]
    Expired {
        /// `host:port`.
        peer: String,
        /// When it expired, when known (" on 2020-01-01 00:00:00 UTC").
        detail: String,
    },
    /// The peer's certificate is not valid yet.
    #[error("TLS handshake with {peer}: its certificate is not valid yet{detail}")]
    NotYetValid {
        /// `host:port`.
        peer: String,
        /// From when it is valid, when known.
        detail: String,
    },
    /// The peer's certificate does not name the server name we checked.
    #[error(
        "TLS handshake with {peer}: its certificate is not valid for {expected}{presented} \
         (set the expected server name if the certificate names a service rather than the address)"
    )]
    NameMismatch {
        /// `host:port`.
        peer: String,
        /// The name checked (the provider's host, or the configured override).
        expected: String,
        /// The names the certificate holds, when known (" (it names a, b)").
        presented: String,
    },
    /// The peer's certificate was refused for another reason (revoked, bad signature, ...).
    #[error("TLS handshake with {peer}: its certificate was rejected: {reason}")]
    BadCertificate {
        /// `host:port`.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The peer sent a fatal alert: it refused the handshake or our client certificate.
    #[error("TLS handshake with {peer} refused by the peer (alert {alert}){hint}")]
    Refused {
        /// `host:port`.
        peer: String,
        /// The alert.
        alert: String,
        /// What probably caused it.
        hint: String,
    },
    /// The peer answered with something that is not TLS.
    #[error("TLS handshake with {peer}: the peer does not speak TLS on this port ({detail})")]
    NotTls {
        /// `host:port`.
        peer: String,
        /// What was seen.
        detail: String,
    },
    /// The handshake did not finish in time.
    #[error("TLS handshake with {peer} timed out after {ms} ms")]
    Timeout {
        /// `host:port`.
        peer: String,
        /// The limit.
        ms: u64,
    },
    /// Another handshake or record-layer failure.
    #[error("TLS with {peer}: {detail}")]
    Protocol {
        /// `host:port`.
        peer: String,
        /// What rustls said.
        detail: String,
    },
    /// The connection failed during the handshake (reset, closed, refused).
    #[error("TLS handshake with {peer}: {source}")]
    Io {
        /// `host:port`.
        peer: String,
        /// The I/O error.
        source: io::Error,
    },
}

impl TlsError {
    /// True when a new attempt may succeed without changing the configuration: the connection
    /// broke or timed out. Certificate, name, configuration and refusal errors come back the
    /// same way on every attempt.
    pub fn is_retryable(&self) -> bool {
        matches!(self, TlsError::Io { .. } | TlsError::Timeout { .. })
    }

    /// True for errors of the local configuration (files, settings), as opposed to the peer.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            TlsError::ReadFile { .. } | TlsError::BadFile { .. } | TlsError::Config(_)
        )
    }
}

/// What the classification needs to know about our side, for the messages.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// What is trusted ("CA file /etc/ca.pem", "the built-in Mozilla roots").
    pub(crate) trust: String,
    /// True when we present a client certificate.
    pub(crate) client_cert: bool,
}

/// Turns an I/O error from a TLS stream (the handshake, or a read or write after it) into a
/// [`TlsError`] naming the cause.
pub(crate) fn classify(peer: &str, err: io::Error, ctx: &Context) -> TlsError {
    let rustls_err = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .cloned();
    match rustls_err {
        Some(e) => from_rustls(peer, e, ctx),
        None => match err.kind() {
            io::ErrorKind::InvalidData if alert_in_text(&err).is_some() => {
                let alert = alert_in_text(&err).unwrap_or_default();
                refused(peer.to_owned(), &alert, ctx)
            }
            io::ErrorKind::UnexpectedEof => TlsError::Protocol {
                peer: peer.to_owned(),
                detail: if ctx.client_cert {
                    "the peer closed the connection during or right after the handshake: it may \
                     not serve TLS on this port, or it refused our client certificate"
                } else {
                    "the peer closed the connection during or right after the handshake: it may \
                     not serve TLS on this port, or it requires a client certificate (mutual \
                     TLS; none is configured)"
                }
                .to_owned(),
            },
            io::ErrorKind::InvalidData => TlsError::NotTls {
                peer: peer.to_owned(),
                detail: err.to_string(),
            },
            _ => TlsError::Io {
                peer: peer.to_owned(),
                source: err,
            },
        },
    }
}

fn from_rustls(peer: &str, e: rustls::Error, ctx: &Context) -> TlsError {
    let peer = peer.to_owned();
    match e {
        rustls::Error::InvalidCertificate(c) => from_certificate(peer, c, ctx),
        rustls::Error::AlertReceived(alert) => refused(peer, &format!("{alert:?}"), ctx),
        rustls::Error::InvalidMessage(m) => TlsError::NotTls {
            peer,
            detail: format!("invalid TLS message: {m:?}"),
        },
        other => TlsError::Protocol {
            peer,
            detail: other.to_string(),
        },
    }
}

/// A fatal alert from the peer, `alert` as rustls names it (`CertificateRequired`, ...).
fn refused(peer: String, alert: &str, ctx: &Context) -> TlsError {
    let about_certificates = matches!(
        alert,
        "CertificateRequired"
            | "BadCertificate"
            | "UnknownCA"
            | "CertificateUnknown"
            | "HandshakeFailure"
            | "AccessDenied"
    );
    let hint = if about_certificates && !ctx.client_cert {
        ": it probably requires a client certificate (mutual TLS); configure one"
    } else {
        match alert {
            "BadCertificate" | "UnknownCA" | "CertificateUnknown" | "CertificateExpired"
            | "CertificateRevoked" | "AccessDenied" => {
                ": it rejected our client certificate (is it signed by a CA the peer trusts, and \
                 still valid?)"
            }
            "HandshakeFailure" => {
                ": no common protocol version or cipher suite, or our client certificate was not \
                 accepted"
            }
            "NoApplicationProtocol" => ": it does not serve the application protocol we offered",
            _ => "",
        }
    };
    TlsError::Refused {
        peer,
        alert: alert.to_owned(),
        hint: hint.to_owned(),
    }
}

/// The alert named in a message that lost its `rustls::Error` (an HTTP/2 library keeps only
/// the text of an I/O error): rustls writes "received fatal alert: NAME".
fn alert_in_text(err: &io::Error) -> Option<String> {
    let text = err.to_string();
    let name = text.split("received fatal alert: ").nth(1)?;
    let name: String = name
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!name.is_empty()).then_some(name)
}

fn from_certificate(peer: String, c: CertificateError, ctx: &Context) -> TlsError {
    match c {
        CertificateError::UnknownIssuer => TlsError::UnknownCa {
            peer,
            trust: ctx.trust.clone(),
        },
        CertificateError::Expired => TlsError::Expired {
            peer,
            detail: String::new(),
        },
        CertificateError::ExpiredContext { not_after, .. } => TlsError::Expired {
            peer,
            detail: format!(" on {}", format_unix(not_after.as_secs())),
        },
        CertificateError::NotValidYet => TlsError::NotYetValid {
            peer,
            detail: String::new(),
        },
        CertificateError::NotValidYetContext { not_before, .. } => TlsError::NotYetValid {
            peer,
            detail: format!(" (valid from {})", format_unix(not_before.as_secs())),
        },
        CertificateError::NotValidForName => TlsError::NameMismatch {
            peer,
            expected: "the expected server name".to_owned(),
            presented: String::new(),
        },
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => TlsError::NameMismatch {
            peer,
            expected: expected.to_str().into_owned(),
            presented: if presented.is_empty() {
                " (it names no host or address)".to_owned()
            } else {
                let names: Vec<&str> = presented.iter().map(|n| plain_name(n)).collect();
                format!(" (it names {})", names.join(", "))
            },
        },
        other => TlsError::BadCertificate {
            peer,
            reason: format!("{other:?}"),
        },
    }
}

/// `127.0.0.1` for rustls' `IpAddress(127.0.0.1)`, `a.example` for `DnsName("a.example")`.
fn plain_name(n: &str) -> &str {
    n.strip_prefix("DnsName(\"")
        .and_then(|n| n.strip_suffix("\")"))
        .or_else(|| {
            n.strip_prefix("IpAddress(")
                .and_then(|n| n.strip_suffix(')'))
        })
        .unwrap_or(n)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn ctx(client_cert: bool) -> Context {
        Context {
            trust: "CA file ca.pem".into(),
            client_cert,
        }
    }

    fn wrap(e: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn certificate_errors_name_the_cause() {
        let e = classify(
            "10.0.0.1:20880",
            wrap(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            )),
            &ctx(false),
        );
        assert!(matches!(e, TlsError::UnknownCa { .. }));
        assert_eq!(
            e.to_string(),
            "TLS handshake with 10.0.0.1:20880: its certificate is not signed by a trusted CA \
             (trusted: CA file ca.pem)"
        );
        assert!(!e.is_retryable());

        let e = classify(
            "p:1",
            wrap(rustls::Error::InvalidCertificate(
                CertificateError::ExpiredContext {
                    time: rustls_pki_types::UnixTime::since_unix_epoch(
                        std::time::Duration::from_secs(1_700_000_000),
                    ),
                    not_after: rustls_pki_types::UnixTime::since_unix_epoch(
                        std::time::Duration::from_secs(1_600_000_000),
                    ),
                },
            )),
            &ctx(false),
        );
        assert_eq!(
            e.to_string(),
            "TLS handshake with p:1: its certificate has expired on 2020-09-13 12:26:40 UTC"
        );

        let e = classify(
            "127.0.0.1:1",
            wrap(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForNameContext {
                    expected: rustls_pki_types::ServerName::try_from("127.0.0.1")
                        .unwrap()
                        .to_owned(),
                    presented: vec![
                        "DnsName(\"other.example\")".into(),
                        "IpAddress(10.0.0.9)".into(),
                    ],
                },
            )),
            &ctx(false),
        );
        assert!(matches!(e, TlsError::NameMismatch { .. }), "{e}");
        assert!(e.to_string().contains("not valid for 127.0.0.1"), "{e}");
        assert!(
            e.to_string().contains("(it names other.example, 10.0.0.9)"),
            "{e}"
        );
    }

    #[test]
    fn alerts_hint_at_client_certificates() {
        let refused = |client_cert| {
            classify(
                "p:1",
                wrap(rustls::Error::AlertReceived(
                    rustls::AlertDescription::CertificateRequired,
                )),
                &ctx(client_cert),
            )
            .to_string()
        };
        assert!(refused(false).contains("requires a client certificate"));
        let e = classify(
            "p:1",
            wrap(rustls::Error::AlertReceived(
                rustls::AlertDescription::BadCertificate,
            )),
            &ctx(true),
        );
        assert!(
            e.to_string().contains("rejected our client certificate"),
            "{e}"
        );
    }

    #[test]
    fn plain_io_errors_stay_retryable() {
        let e = classify(
            "p:1",
            io::Error::new(io::ErrorKind::ConnectionReset, "reset"),
            &ctx(false),
        );
        assert!(e.is_retryable());
        let e = classify(
            "p:1",
            io::Error::new(io::ErrorKind::UnexpectedEof, "eof"),
            &ctx(false),
        );
        assert!(
            e.to_string().contains("requires a client certificate"),
            "{e}"
        );
    }
}
