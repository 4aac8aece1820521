//! Test certificates made at test time (rcgen): a CA, server certificates (valid, expired,
//! for another name), client certificates, as PEM files in a temporary directory that is
//! removed when the [`TestCa`] drops. Keys are ECDSA P-256 in PKCS#8, which Java (Netty, the
//! JDK), ZooKeeper's PEM stores, grpcio and rustls all read. Nothing here is ever committed.
//!
//! ```no_run
//! let ca = tests::certs::TestCa::new("demo");
//! let server = ca.server("provider", &["127.0.0.1", "localhost"]);
//! let client = ca.client("consumer", "consumer");
//! // server.cert / server.key / server.combined (key + chain), ca.ca_pem()
//! # let _ = (server, client);
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The PEM files of one issued certificate.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The certificate chain (leaf, then the CA).
    pub cert: PathBuf,
    /// The private key (PKCS#8).
    pub key: PathBuf,
    /// Key and chain in one file (ZooKeeper's PEM key store).
    pub combined: PathBuf,
    /// The leaf in DER (for in-process rustls servers).
    pub der: CertificateDer<'static>,
    /// The CA in DER.
    pub ca_der: CertificateDer<'static>,
    /// The private key in DER (PKCS#8).
    pub key_der: Vec<u8>,
}

impl CertFiles {
    /// The chain (leaf, CA) for a rustls server or client.
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        vec![self.der.clone(), self.ca_der.clone()]
    }

    /// The private key for rustls.
    pub fn private_key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

/// A test CA and the directory of its files.
pub struct TestCa {
    dir: Arc<TempDir>,
    name: String,
    issuer: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    ca_pem_text: String,
    ca_pem: PathBuf,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("name", &self.name)
            .field("dir", &self.dir.0)
            .finish()
    }
}

/// A directory removed on drop.
#[derive(Debug)]
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A validity that holds today (2024 to 2099).
fn valid(params: &mut CertificateParams) {
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
}

impl TestCa {
    /// A new CA named `name` (its common name, and the prefix of its directory).
    pub fn new(name: &str) -> TestCa {
        let dir = std::env::temp_dir().join(crate::unique(&format!("tls-{name}")));
        std::fs::create_dir_all(&dir).expect("create the certificate directory");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        valid(&mut params);
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("self-sign the CA");
        let ca_pem = dir.join("ca.pem");
        std::fs::write(&ca_pem, cert.pem()).expect("write ca.pem");
        TestCa {
            dir: Arc::new(TempDir(dir)),
            name: name.to_owned(),
            issuer: Issuer::new(params, key),
            ca_der: cert.der().clone(),
            ca_pem_text: cert.pem(),
            ca_pem,
        }
    }

    /// The CA certificate's PEM file (what clients and servers trust).
    pub fn ca_pem(&self) -> &Path {
        &self.ca_pem
    }

    /// The CA certificate in DER.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir.0
    }

    fn issue(
        &self,
        file: &str,
        names: &[&str],
        common_name: &str,
        usage: ExtendedKeyUsagePurpose,
        validity: impl FnOnce(&mut CertificateParams),
    ) -> CertFiles {
        let mut params =
            CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                .expect("certificate params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params);
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("sign the certificate");
        let chain = format!("{}{}", cert.pem(), self.ca_pem_text);
        let cert_path = self.dir().join(format!("{file}.pem"));
        let key_path = self.dir().join(format!("{file}.key"));
        let combined = self.dir().join(format!("{file}-combined.pem"));
        std::fs::write(&cert_path, &chain).expect("write the certificate");
        std::fs::write(&key_path, key.serialize_pem()).expect("write the key");
        std::fs::write(&combined, format!("{}{chain}", key.serialize_pem()))
            .expect("write the combined file");
        CertFiles {
            cert: cert_path,
            key: key_path,
            combined,
            der: cert.der().clone(),
            ca_der: self.ca_der.clone(),
            key_der: key.serialize_der(),
        }
    }

    /// A server certificate for `names` (IP addresses and DNS names), valid until 2099.
    pub fn server(&self, file: &str, names: &[&str]) -> CertFiles {
        self.issue(
            file,
            names,
            names.first().copied().unwrap_or("server"),
            ExtendedKeyUsagePurpose::ServerAuth,
            valid,
        )
    }

    /// A server certificate for `names` that expired on 2021-01-01.
    pub fn expired_server(&self, file: &str, names: &[&str]) -> CertFiles {
        self.issue(
            file,
            names,
            names.first().copied().unwrap_or("server"),
            ExtendedKeyUsagePurpose::ServerAuth,
            |p| {
                p.not_before = rcgen::date_time_ymd(2020, 1, 1);
                p.not_after = rcgen::date_time_ymd(2021, 1, 1);
            },
        )
    }

    /// A client certificate with common name `cn`, valid until 2099.
    pub fn client(&self, file: &str, cn: &str) -> CertFiles {
        self.issue(file, &[], cn, ExtendedKeyUsagePurpose::ClientAuth, valid)
    }
}
