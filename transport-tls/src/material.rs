//! Reading the PEM files of a [`TlsConfig`](crate::TlsConfig): the trusted CAs, our
//! certificate chain and our private key. Errors name the file and the problem, never what the
//! file holds.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::TlsError;

/// Configured files larger than this are refused (a CA bundle is ~200 KB).
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// The built-in Mozilla roots (`webpki-roots`), built once per process.
pub(crate) fn mozilla_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            Arc::new(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
        })
        .clone()
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let read_err = |source| TlsError::ReadFile {
        what,
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if meta.len() > MAX_FILE {
        return Err(TlsError::BadFile {
            what,
            path: path.to_owned(),
            problem: format!("is {} bytes, more than a PEM file can be", meta.len()),
        });
    }
    std::fs::read(path).map_err(read_err)
}

/// What a PEM parse error says, without any of the file's bytes.
fn pem_problem(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "has a PEM section without its END line".into(),
        pem::Error::IllegalSectionStart { .. } => "has a malformed PEM BEGIN line".into(),
        pem::Error::Base64Decode(_) => "has invalid base64 in a PEM section".into(),
        pem::Error::NoItemsFound => "holds no PEM section of the expected kind".into(),
        _ => "is not a readable PEM file".into(),
    }
}

/// Every certificate in the PEM file (at least one).
pub(crate) fn certificates(
    what: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(what, path)?;
    let bad = |problem: String| TlsError::BadFile {
        what,
        path: path.to_owned(),
        problem,
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(pem_problem(&e)))?;
    if certs.is_empty() {
        return Err(bad(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// The trusted CAs of the PEM file: every certificate in it that parses as a trust anchor.
pub(crate) fn trust_store(path: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    const WHAT: &str = "CA file";
    let certs = certificates(WHAT, path)?;
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(TlsError::BadFile {
            what: WHAT,
            path: path.to_owned(),
            problem: "holds no certificate usable as a trust anchor".into(),
        });
    }
    if ignored > 0 {
        tracing::warn!(
            file = %path.display(),
            ignored,
            "TLS: certificates in the CA file that cannot be trust anchors were ignored"
        );
    }
    Ok(Arc::new(roots))
}

/// The private key of the PEM file (the first one: PKCS#8, PKCS#1 or SEC1).
pub(crate) fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    const WHAT: &str = "client private key";
    let bytes = read(WHAT, path)?;
    let bad = |problem: &str| TlsError::BadFile {
        what: WHAT,
        path: path.to_owned(),
        problem: problem.to_owned(),
    };
    if contains(&bytes, b"-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return Err(bad(
            "holds an encrypted private key, which is not supported: decrypt it with \
             `openssl pkcs8 -in encrypted.pem -out key.pem`",
        ));
    }
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(k) => Ok(k),
        Err(pem::Error::NoItemsFound) => Err(bad(
            "holds no PEM private key (-----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)",
        )),
        Err(e) => Err(bad(&pem_problem(&e))),
    }
}

/// The PEM texts of a configuration, checked by the same readers as [`crate::TlsClient::new`],
/// for a library that takes PEM rather than a `rustls::ClientConfig` (the ZooKeeper client).
/// `Debug` leaves the private key out.
pub struct PemTexts {
    /// The CA file's text.
    pub ca: String,
    /// The client certificate chain's and private key's texts (one file may hold both).
    pub identity: Option<(String, String)>,
}

impl std::fmt::Debug for PemTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PemTexts")
            .field("ca_bytes", &self.ca.len())
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

/// The PEM texts of `cfg` (see [`PemTexts`]); a CA file is required (`what` names the
/// setting in the error).
pub fn pem_texts(cfg: &crate::TlsConfig, ca_setting: &str) -> Result<PemTexts, TlsError> {
    let Some(ca_path) = &cfg.trust else {
        return Err(TlsError::Config(format!(
            "{ca_setting} is required: this connection trusts only a configured CA file"
        )));
    };
    trust_store(ca_path)?;
    let text = |what: &'static str, path: &Path| -> Result<String, TlsError> {
        String::from_utf8(read(what, path)?).map_err(|_| TlsError::BadFile {
            what,
            path: path.to_owned(),
            problem: "is not text (PEM expected)".into(),
        })
    };
    let ca = text("CA file", ca_path)?;
    let identity = match (&cfg.cert_chain, &cfg.private_key) {
        (Some(chain), Some(key)) => {
            certificates("client certificate", chain)?;
            private_key(key)?;
            Some((
                text("client certificate", chain)?,
                text("client private key", key)?,
            ))
        }
        (None, None) => None,
        _ => {
            return Err(TlsError::Config(
                "a client certificate needs both its chain and its private key".into(),
            ))
        }
    };
    Ok(PemTexts { ca, identity })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_named_without_their_contents() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = trust_store(&missing).unwrap_err();
        assert!(matches!(e, TlsError::ReadFile { .. }));
        assert!(e.to_string().contains("missing.pem"), "{e}");

        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "secret-looking text, not PEM\n").unwrap();
        let e = trust_store(&junk).unwrap_err().to_string();
        assert!(e.contains("holds no PEM certificate"), "{e}");
        assert!(!e.contains("secret-looking"), "{e}");
        let e = private_key(&junk).unwrap_err().to_string();
        assert!(e.contains("holds no PEM private key"), "{e}");

        let enc = dir.path().join("enc.pem");
        std::fs::write(
            &enc,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = private_key(&enc).unwrap_err().to_string();
        assert!(e.contains("encrypted private key"), "{e}");

        let cut = dir.path().join("cut.pem");
        std::fs::write(&cut, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
        let e = certificates("CA file", &cut).unwrap_err().to_string();
        assert!(e.contains("without its END line"), "{e}");
        assert!(!e.contains("MIIB"), "{e}");
    }

    #[test]
    fn mozilla_roots_are_there() {
        assert!(mozilla_roots().len() > 50);
    }
}
