//! TLS on every session: agents, ToRs, provisioners and peer servers (issue 39).
//!
//! Tokens identify principals ([`crate::credentials`]), but in clear a token can be read off the
//! network and replayed, and an agent cannot tell its directory server from an impostor. So
//! every session runs inside TLS 1.3: the server presents a certificate from its config
//! (`[tls] certificate`, `key`), and clients verify it against a CA file, naming the server by
//! the IP address they dialled (the certificate must list it as a subject alternative name).
//! The token then travels inside the encrypted session, as a password does inside HTTPS.
//!
//! Server authentication plus per-principal tokens, not mutual TLS: a token is already bound to
//! its principal and, for agents, to the AAs it may speak as; TLS adds what tokens lacked
//! (confidentiality, integrity, the server's identity) without a certificate per host.
//!
//! A client that speaks plaintext to a TLS server is told so in a `Rejected` frame it can
//! decode, rather than seeing a failed handshake: the server looks at the first byte, which is
//! 0x16 (a TLS handshake record) for TLS and 0x00 (the top byte of a frame length) for the
//! directory protocol.
//!
//! Dependencies: rustls (with tokio-rustls) over ring. rustls' default provider, aws-lc-rs,
//! builds a large C library with cmake; ring builds in seconds, and this service needs no
//! FIPS mode nor post-quantum key exchange. rcgen writes the throwaway CA and certificates of a
//! local cluster ([`LocalPki`]), so `clos directory up` works with TLS and no manual step.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::wire::Reply;

/// The first byte of a TLS handshake record (RFC 8446 §5.1, ContentType handshake).
const TLS_HANDSHAKE: u8 = 0x16;

/// `[tls]` in a server's config. TLS is on unless `enabled = false`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// This server's certificate chain (PEM), leaf first. It must name the address clients
    /// dial as a subject alternative name (an IP address, e.g. 127.0.0.1).
    #[serde(default)]
    pub certificate: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// The CA (PEM) that signed the other directory servers' certificates: this server checks
    /// them when it pushes to its `peers`. Needed only with peers.
    #[serde(default)]
    pub ca: Option<PathBuf>,
}

fn yes() -> bool {
    true
}

impl TlsConfig {
    /// Makes relative paths relative to the config file's folder.
    pub fn resolve(&mut self, folder: &Path) {
        for path in [&mut self.certificate, &mut self.key, &mut self.ca].into_iter().flatten() {
            if path.is_relative() {
                *path = folder.join(&*path);
            }
        }
    }

    /// What the server needs to accept sessions: `None` when TLS is off.
    pub fn server(&self) -> Result<Option<ServerTls>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let (Some(certificate), Some(key)) = (&self.certificate, &self.key) else {
            let missing = if self.certificate.is_none() { "certificate" } else { "key" };
            return Err(format!(
                "tls.{missing}: missing; give the server its certificate and key (PEM): [tls] certificate = \"ds0.crt\", key = \"ds0.key\" \
                 (`clos directory up` writes a local cluster's), or turn TLS off with [tls] enabled = false"
            ));
        };
        ServerTls::from_files(certificate, key).map(Some)
    }

    /// What the server needs to push to its peers: `None` when TLS is off.
    pub fn peer_client(&self) -> Result<Option<ClientTls>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let Some(ca) = &self.ca else {
            return Err("tls.ca: missing; a server with peers checks their certificates against a CA file (PEM): [tls] ca = \"ca.crt\"".into());
        };
        ClientTls::from_ca_file(ca).map(Some).map_err(|e| format!("tls.ca: {e}"))
    }
}

/// A server's side of TLS: its certificate and key.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: tokio_rustls::TlsAcceptor,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn certificates(pem: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates =
        CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().map_err(|e| format!("{}: not PEM certificates: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{}: no certificate in it (expected -----BEGIN CERTIFICATE-----)", path.display()));
    }
    Ok(certificates)
}

impl ServerTls {
    pub fn from_files(certificate: &Path, key: &Path) -> Result<ServerTls, String> {
        let chain = certificates(&read(certificate).map_err(|e| format!("tls.certificate: {e}"))?, certificate).map_err(|e| format!("tls.certificate: {e}"))?;
        let key_pem = read(key).map_err(|e| format!("tls.key: {e}"))?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| format!("tls.key: {}: no private key in it: {e}", key.display()))?;
        ServerTls::new(chain, key_der).map_err(|e| format!("tls.key: {e} (is {} the key of {}?)", key.display(), certificate.display()))
    }

    pub fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> Result<ServerTls, String> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| e.to_string())?;
        // Sessions are long-lived and never resumed: tickets would be bytes sent for nothing.
        config.send_tls13_tickets = 0;
        Ok(ServerTls { acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) })
    }

    /// Completes the server side of a handshake. A client that sends a directory frame
    /// instead of a TLS handshake gets a `Rejected` frame saying so, and the connection closes.
    pub async fn accept(&self, mut stream: TcpStream) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        let mut first = [0u8; 1];
        if stream.peek(&mut first).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed before the TLS handshake"));
        }
        if first[0] != TLS_HANDSHAKE {
            let mut out = Vec::new();
            Reply::Rejected { message: PLAINTEXT_REFUSED.into() }.encode(&mut out);
            let _ = stream.write_all(&out).await;
            let _ = stream.shutdown().await;
            // Read what the client sent before closing: a socket closed with unread bytes sends
            // a reset, which can reach the client before it has read the refusal.
            let mut sink = [0u8; 4096];
            let drain = async {
                let mut left: usize = 64 * 1024;
                while left > 0 {
                    match stream.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => left = left.saturating_sub(n),
                    }
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_millis(200), drain).await;
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a plaintext client on a TLS server"));
        }
        self.acceptor.accept(stream).await
    }
}

/// What a plaintext client of a TLS server is told.
pub const PLAINTEXT_REFUSED: &str =
    "this server requires TLS: connect with TLS and verify it with the cluster's CA file (--ca-file, ResolverConfig::tls); see docs/directory.md#tls";

/// A client's side of TLS: the CA it trusts to have signed directory servers' certificates.
#[derive(Clone)]
pub struct ClientTls {
    connector: tokio_rustls::TlsConnector,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    pub fn from_ca_file(ca: &Path) -> Result<ClientTls, String> {
        ClientTls::from_ca_pem(&read(ca)?).map_err(|e| format!("{}: {e}", ca.display()))
    }

    /// Trusts the CA certificates in `pem` (and nothing else: not the system's roots).
    pub fn from_ca_pem(pem: &[u8]) -> Result<ClientTls, String> {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in certificates(pem, Path::new("CA"))? {
            roots.add(certificate).map_err(|e| format!("not a usable CA certificate: {e}"))?;
        }
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls { connector: tokio_rustls::TlsConnector::from(Arc::new(config)) })
    }

    /// Runs the handshake on `stream`, checking the certificate names `server`'s IP address.
    pub async fn connect(&self, server: IpAddr, stream: TcpStream) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        self.connector.connect(ServerName::IpAddress(server.into()), stream).await.map_err(|e| {
            let why = match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                Some(rustls::Error::InvalidCertificate(reason)) => {
                    format!("the server's certificate is not trusted ({reason:?}): it must be signed by the CA file given and name {server}")
                }
                Some(rustls::Error::InvalidMessage(_)) | Some(rustls::Error::InappropriateMessage { .. }) => {
                    "the server did not answer in TLS (is its [tls] enabled = false?)".to_string()
                }
                _ => e.to_string(),
            };
            io::Error::new(io::ErrorKind::PermissionDenied, format!("TLS handshake with {server}: {why}"))
        })
    }
}

/// The two halves of a session, in TLS or not.
pub type SessionReader = Box<dyn AsyncRead + Send + Unpin>;
pub type SessionWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// Opens a session's connection to `server`: TCP, then the TLS handshake if `tls` is given.
pub async fn connect(server: SocketAddr, tls: Option<&ClientTls>) -> io::Result<(SessionReader, SessionWriter)> {
    let stream = TcpStream::connect(server).await?;
    stream.set_nodelay(true)?;
    match tls {
        None => {
            let (rd, wr) = stream.into_split();
            Ok((Box::new(rd), Box::new(wr)))
        }
        Some(tls) => {
            let (rd, wr) = tokio::io::split(tls.connect(server.ip(), stream).await?);
            Ok((Box::new(rd), Box::new(wr)))
        }
    }
}

/// A local cluster's throwaway public-key infrastructure: a CA made for this cluster only, and
/// a certificate for 127.0.0.1 and localhost per directory server, signed by it. Nothing else
/// trusts the CA, and its key stays in the cluster's folder.
pub struct LocalPki {
    pub ca: PathBuf,
    /// Each directory server's (certificate, key), by index.
    pub servers: Vec<(PathBuf, PathBuf)>,
}

impl LocalPki {
    /// Writes `ca.crt` and `ds<i>.crt`, `ds<i>.key` for `servers` servers into `dir`.
    pub fn write(dir: &Path, servers: usize) -> Result<LocalPki, String> {
        let err = |e: rcgen::Error| format!("cannot make the local cluster's certificates: {e}");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "clos-directory local cluster CA");
        ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        let ca_key = rcgen::KeyPair::generate().map_err(err)?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let write = |name: &str, text: &str| -> Result<PathBuf, String> {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(path)
        };
        let ca = write("ca.crt", &ca_cert.pem())?;
        let mut files = Vec::new();
        for i in 0..servers {
            let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).map_err(err)?;
            params.distinguished_name.push(rcgen::DnType::CommonName, format!("ds{i}"));
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
            let key = rcgen::KeyPair::generate().map_err(err)?;
            let certificate = params.signed_by(&key, &issuer).map_err(err)?;
            let key_path = write(&format!("ds{i}.key"), &key.serialize_pem())?;
            restrict(&key_path);
            files.push((write(&format!("ds{i}.crt"), &certificate.pem())?, key_path));
        }
        Ok(LocalPki { ca, servers: files })
    }
}

/// Private keys are readable by their owner only.
fn restrict(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_pki_loads_as_server_and_client_configs() {
        let dir = std::env::temp_dir().join(format!("clos-directory-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = LocalPki::write(&dir, 2).unwrap();
        let mut config = TlsConfig { enabled: true, certificate: Some("ds1.crt".into()), key: Some("ds1.key".into()), ca: Some("ca.crt".into()) };
        config.resolve(&dir);
        assert!(config.server().unwrap().is_some());
        assert!(config.peer_client().unwrap().is_some());
        // A certificate with the wrong key, a missing file, and TLS off.
        let err = ServerTls::from_files(&pki.servers[0].0, &pki.servers[1].1).err().unwrap();
        assert!(err.starts_with("tls.key: "), "{err}");
        let err = ClientTls::from_ca_file(&dir.join("nowhere.crt")).unwrap_err();
        assert!(err.contains("cannot read"), "{err}");
        let missing = TlsConfig { enabled: true, certificate: None, key: None, ca: None };
        assert!(missing.server().err().unwrap().starts_with("tls.certificate: missing"));
        let off = TlsConfig { enabled: false, ..missing };
        assert!(off.server().unwrap().is_none() && off.peer_client().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
