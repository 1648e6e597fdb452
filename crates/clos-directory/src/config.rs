//! A directory server's configuration file (TOML).
//!
//! Every default is VL2's where the paper gives one: a 50 ms update batch (§5.5), a 30 s lazy
//! resynchronisation (§4.3.2). Errors name the file and the field, and say how to fix it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::credentials::{Credentials, PrincipalConfig};
use crate::duration::{serde_text, serde_text_option};
use crate::freshness::StaleLookups;
use crate::policy::PolicyConfig;
use crate::tls::TlsConfig;
use crate::wire::Role;
use crate::wire::DEFAULT_MAX_FRAME_BYTES;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Names this server in logs.
    pub name: String,
    /// Where agents, ToRs and peers connect, e.g. "127.0.0.1:7001".
    pub listen: SocketAddr,
    /// No longer accepted (one secret for every role, issue 42): kept only to say what replaces
    /// it, `[[principals]]`.
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Everyone who may open a session, each with its own role and token (`credentials.rs`).
    #[serde(default)]
    pub principals: Vec<PrincipalConfig>,
    /// Threads answering sessions; lookups scale with them.
    #[serde(default = "defaults::workers")]
    pub workers: usize,
    #[serde(default = "defaults::max_frame_bytes")]
    pub max_frame_bytes: usize,
    /// Other directory servers to push acknowledged updates to (VL2 §4.3.2, optional). The
    /// server presents the token of the peer principal named as itself (`name`).
    #[serde(default)]
    pub peers: Vec<SocketAddr>,
    /// "json" (one object per line, for machines) or "text".
    #[serde(default = "defaults::log_format")]
    pub log_format: String,
    pub store: StoreConfig,
    #[serde(default)]
    pub sync: SyncConfig,
    #[serde(default)]
    pub updates: UpdateConfig,
    #[serde(default)]
    pub policy: PolicyConfig,
    #[serde(default)]
    pub sessions: SessionConfig,
    /// TLS on every session (`tls.rs`): required unless `[tls] enabled = false`.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
}

/// Limits on sessions, so that connections that never authenticate cannot hold the server's
/// descriptors (issue 42).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// A session that has not sent a valid Hello by then is closed (with TLS, the handshake has
    /// as long again before it).
    #[serde(default = "defaults::hello_timeout", with = "serde_text")]
    pub hello_timeout: Duration,
    /// Sessions still waiting for their Hello; a connection beyond it is closed at once.
    #[serde(default = "defaults::max_unauthenticated")]
    pub max_unauthenticated: usize,
    /// All sessions together; a connection beyond it is closed at once.
    #[serde(default = "defaults::max_sessions")]
    pub max_sessions: usize,
    /// Authenticated sessions of one principal; a Hello beyond it is rejected
    /// (`principal_sessions.rs`), so no principal can take every place in `max_sessions`.
    #[serde(default = "defaults::max_per_principal")]
    pub max_per_principal: usize,
    /// Requests per second one session may send on average (`rate_limit.rs`); beyond it the
    /// server reads the session's requests only as fast as this (backpressure).
    #[serde(default = "defaults::rate")]
    pub rate: u32,
    /// Requests one session may send at once, above `rate`.
    #[serde(default = "defaults::burst")]
    pub burst: u32,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            hello_timeout: defaults::hello_timeout(),
            max_unauthenticated: defaults::max_unauthenticated(),
            max_sessions: defaults::max_sessions(),
            max_per_principal: defaults::max_per_principal(),
            rate: defaults::rate(),
            burst: defaults::burst(),
        }
    }
}

/// The replicated store (VL2's RSM): an etcd cluster.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// etcd client URLs, e.g. ["http://127.0.0.1:2379"].
    pub endpoints: Vec<String>,
    /// Key prefix under which mappings live; lets several directories share one etcd.
    #[serde(default = "defaults::prefix")]
    pub prefix: String,
    #[serde(default = "defaults::request_timeout", with = "serde_text")]
    pub request_timeout: Duration,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncConfig {
    /// Full re-read of the store, a safety net beside the change stream (VL2 §4.3.2: 30 s).
    #[serde(default = "defaults::resync_interval", with = "serde_text")]
    pub resync_interval: Duration,
    /// How often the server confirms it can still reach the store.
    #[serde(default = "defaults::probe_interval", with = "serde_text")]
    pub probe_interval: Duration,
    /// After this long without confirmed contact with the store, the server no longer answers
    /// as current: it marks answers `Stale` with their age, or refuses them (`stale_lookups`).
    /// The documented staleness bound of an unmarked answer.
    #[serde(default = "defaults::max_staleness", with = "serde_text")]
    pub max_staleness: Duration,
    /// Past `max_staleness`: "serve" from memory, marked stale (VL2's availability, the
    /// default), or "refuse" (`Unavailable`). See `freshness.rs`.
    #[serde(default = "defaults::stale_lookups")]
    pub stale_lookups: StaleLookups,
    /// With "serve": stop serving stale answers once contact has been lost this long (no
    /// limit if absent).
    #[serde(default, with = "serde_text_option")]
    pub max_stale_age: Option<Duration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateConfig {
    /// Updates arriving within this window are committed together (VL2 §5.5: 50 ms).
    #[serde(default = "defaults::batch_window", with = "serde_text")]
    pub batch_window: Duration,
    /// Operations per etcd transaction; etcd refuses more than its --max-txn-ops (default 128).
    #[serde(default = "defaults::max_txn_ops")]
    pub max_txn_ops: usize,
    /// How long the server keeps retrying a batch before answering `Unavailable`. Keep it below
    /// the agents' update timeout (2 s) so a retried update is not also still being retried here.
    #[serde(default = "defaults::commit_timeout", with = "serde_text")]
    pub commit_timeout: Duration,
    /// How long a removal's tombstone keeps the marks of the updates it includes
    /// (`origin.rs`), so that a late copy of an earlier update cannot bring the AA back. Keep it
    /// above the provisioning clients' retry span (update_attempts × update_timeout, 16 s).
    #[serde(default = "defaults::tombstone_ttl", with = "serde_text")]
    pub tombstone_ttl: Duration,
}

mod defaults {
    use std::time::Duration;
    pub fn workers() -> usize {
        1
    }
    pub fn max_frame_bytes() -> usize {
        super::DEFAULT_MAX_FRAME_BYTES
    }
    pub fn log_format() -> String {
        "json".into()
    }
    pub fn prefix() -> String {
        "/clos/vl2".into()
    }
    pub fn request_timeout() -> Duration {
        Duration::from_secs(1)
    }
    pub fn resync_interval() -> Duration {
        Duration::from_secs(30)
    }
    pub fn probe_interval() -> Duration {
        Duration::from_millis(250)
    }
    pub fn max_staleness() -> Duration {
        Duration::from_secs(2)
    }
    pub fn batch_window() -> Duration {
        Duration::from_millis(50)
    }
    pub fn max_txn_ops() -> usize {
        128
    }
    pub fn commit_timeout() -> Duration {
        Duration::from_millis(1500)
    }
    pub fn stale_lookups() -> super::StaleLookups {
        super::StaleLookups::Serve
    }
    pub fn tombstone_ttl() -> Duration {
        Duration::from_secs(60)
    }
    pub fn hello_timeout() -> Duration {
        Duration::from_secs(2)
    }
    pub fn max_unauthenticated() -> usize {
        256
    }
    pub fn max_sessions() -> usize {
        16_384
    }
    pub fn max_per_principal() -> usize {
        16
    }
    pub fn rate() -> u32 {
        20_000
    }
    pub fn burst() -> u32 {
        2_000
    }
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            resync_interval: defaults::resync_interval(),
            probe_interval: defaults::probe_interval(),
            max_staleness: defaults::max_staleness(),
            stale_lookups: defaults::stale_lookups(),
            max_stale_age: None,
        }
    }
}

impl Default for UpdateConfig {
    fn default() -> Self {
        UpdateConfig {
            batch_window: defaults::batch_window(),
            max_txn_ops: defaults::max_txn_ops(),
            commit_timeout: defaults::commit_timeout(),
            tombstone_ttl: defaults::tombstone_ttl(),
        }
    }
}

impl ServerConfig {
    /// Reads and checks a config file. The error names the file, the field and the fix.
    pub fn load(path: &Path) -> Result<ServerConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read the config file: {e}", path.display()))?;
        let mut config = ServerConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        config.check_no_shared_token().map_err(|e| format!("{}: {e}", path.display()))?;
        let folder = path.parent().unwrap_or(Path::new("."));
        for (i, principal) in config.principals.iter_mut().enumerate() {
            principal.read_token_file(folder).map_err(|e| format!("{}: principals[{i}] ({}).{e}", path.display(), principal.name))?;
        }
        if let Some(tls) = &mut config.tls {
            tls.resolve(folder);
        }
        config.check().map_err(|e| format!("{}: {e}", path.display()))?;
        config.check_tls_files().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(config)
    }

    /// Parses config text without reading token files (for tests and embedding).
    pub fn parse(text: &str) -> Result<ServerConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())
    }

    /// The single cluster token of earlier versions let whoever held it open any role: push
    /// forged replication, rewrite any AA (issue 42). It is refused with what replaces it.
    fn check_no_shared_token(&self) -> Result<(), String> {
        let field = match (&self.token, &self.token_file) {
            (Some(_), _) => "token",
            (None, Some(_)) => "token_file",
            (None, None) => return Ok(()),
        };
        Err(format!(
            "{field}: one token for every session is no longer accepted (its holder could act as any agent, ToR, provisioner or peer); \
             remove it and give each principal its own credential: [[principals]] with name, role (\"agent\", \"tor\", \"provisioner\" \
             or \"peer\"), token_file, and aas (agents) or services (provisioners); see docs/directory.md#credentials"
        ))
    }

    /// Reads `[tls]`'s files, so that a missing or mismatched certificate stops the server at
    /// start, naming the field.
    pub fn check_tls_files(&self) -> Result<(), String> {
        let Some(tls) = &self.tls else { return Ok(()) };
        tls.server()?;
        if !self.peers.is_empty() {
            tls.peer_client()?;
        }
        Ok(())
    }

    /// The compiled `[[principals]]`.
    pub fn credentials(&self) -> Result<Credentials, String> {
        Credentials::new(&self.principals)
    }

    /// This server's own peer credential, which it presents when it pushes to `peers`.
    pub fn peer_token(&self) -> Option<Vec<u8>> {
        self.credentials().ok()?.principal(&self.name, Role::Peer).map(|p| p.token().to_vec())
    }

    fn check(&self) -> Result<(), String> {
        self.check_no_shared_token()?;
        let credentials = self.credentials()?;
        if !self.peers.is_empty() && credentials.principal(&self.name, Role::Peer).is_none() {
            return Err(format!(
                "peers: this server pushes to its peers as the peer principal named \"{0}\" (its name), and there is none; \
                 add [[principals]] name = \"{0}\", role = \"peer\", token_file = \"...\" (the same entry in every peer's config), or remove peers",
                self.name
            ));
        }
        if self.workers == 0 || self.workers > 256 {
            return Err(format!("workers: {} is out of range; use 1 to 256", self.workers));
        }
        if !(64..=1 << 20).contains(&self.max_frame_bytes) {
            return Err(format!("max_frame_bytes: {} is out of range; use 64 to 1048576", self.max_frame_bytes));
        }
        let sessions = &self.sessions;
        if sessions.hello_timeout.is_zero() {
            return Err("sessions.hello_timeout: must be positive, e.g. \"2s\"".into());
        }
        if sessions.max_unauthenticated == 0 || sessions.max_unauthenticated > sessions.max_sessions {
            return Err(format!(
                "sessions.max_unauthenticated: {} must be at least 1 and at most sessions.max_sessions ({})",
                sessions.max_unauthenticated, sessions.max_sessions
            ));
        }
        if sessions.max_per_principal == 0 || sessions.max_per_principal > sessions.max_sessions {
            return Err(format!(
                "sessions.max_per_principal: {} must be at least 1 and at most sessions.max_sessions ({})",
                sessions.max_per_principal, sessions.max_sessions
            ));
        }
        if sessions.rate == 0 || sessions.burst == 0 {
            return Err("sessions.rate and sessions.burst: must be at least 1 (requests per second, and requests at once)".into());
        }
        match &self.tls {
            None => {
                return Err("tls: missing; sessions carry tokens, so TLS is on unless turned off: give the server its certificate with \
                     [tls] certificate = \"ds0.crt\", key = \"ds0.key\", ca = \"ca.crt\" (`clos directory up` writes a local cluster's), \
                     or write [tls] enabled = false to send tokens in clear; see docs/directory.md#tls"
                    .into());
            }
            Some(tls) if tls.enabled && !self.peers.is_empty() && tls.ca.is_none() => {
                return Err("tls.ca: missing; a server with peers checks their certificates against a CA file (PEM): [tls] ca = \"ca.crt\"".into());
            }
            Some(_) => {}
        }
        if self.log_format != "json" && self.log_format != "text" {
            return Err(format!("log_format: '{}' is not \"json\" or \"text\"", self.log_format));
        }
        if self.store.endpoints.is_empty() {
            return Err("store.endpoints: empty; list the etcd client URLs, e.g. [\"http://127.0.0.1:2379\"]".into());
        }
        for e in &self.store.endpoints {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return Err(format!("store.endpoints: '{e}' is not a URL; write it as http://host:port"));
            }
        }
        if !self.store.prefix.starts_with('/') {
            return Err(format!("store.prefix: '{}' must start with '/'", self.store.prefix));
        }
        if self.updates.max_txn_ops == 0 {
            return Err("updates.max_txn_ops: must be at least 1".into());
        }
        if self.sync.max_staleness <= self.sync.probe_interval {
            return Err(format!(
                "sync.max_staleness ({:?}) must exceed sync.probe_interval ({:?}), or every probe gap would make the server refuse lookups",
                self.sync.max_staleness, self.sync.probe_interval
            ));
        }
        if let Some(limit) = self.sync.max_stale_age {
            if limit <= self.sync.max_staleness {
                return Err(format!(
                    "sync.max_stale_age ({limit:?}) must exceed sync.max_staleness ({:?}): it bounds how long answers are served marked stale after that",
                    self.sync.max_staleness
                ));
            }
        }
        if self.updates.tombstone_ttl < Duration::from_secs(1) {
            return Err(format!("updates.tombstone_ttl ({:?}) must be at least 1s (etcd leases count in seconds)", self.updates.tombstone_ttl));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "ds1"
listen = "127.0.0.1:7001"
[[principals]]
name = "provisioning"
role = "provisioner"
services = ["*"]
token = "0123456789abcdef-provisioning"
[store]
endpoints = ["http://127.0.0.1:2379"]
[tls]
enabled = false
"#;

    #[test]
    fn a_minimal_config_gets_vl2_defaults() {
        let c = ServerConfig::parse(MINIMAL).unwrap();
        c.check().unwrap();
        assert_eq!(c.updates.batch_window, Duration::from_millis(50));
        assert_eq!(c.sync.resync_interval, Duration::from_secs(30));
        assert_eq!((c.sync.stale_lookups, c.sync.max_stale_age), (StaleLookups::Serve, None), "VL2 keeps lookups available");
    }

    #[test]
    fn stale_lookups_are_configured_by_name_and_bound() {
        let c = ServerConfig::parse(&format!("{MINIMAL}[sync]\nstale_lookups = \"refuse\"\nmax_stale_age = \"10m\"\n")).unwrap();
        assert_eq!((c.sync.stale_lookups, c.sync.max_stale_age), (StaleLookups::Refuse, Some(Duration::from_secs(600))));
        let err = ServerConfig::parse(&format!("{MINIMAL}[sync]\nstale_lookups = \"maybe\"\n")).unwrap_err();
        assert!(err.contains("unknown variant `maybe`, expected `serve` or `refuse`"), "{err}");
        let c = ServerConfig::parse(&format!("{MINIMAL}[sync]\nmax_stale_age = \"1s\"\n")).unwrap();
        assert!(c.check().unwrap_err().starts_with("sync.max_stale_age (1s) must exceed sync.max_staleness (2s)"), "{}", c.check().unwrap_err());
    }

    #[test]
    fn mistakes_name_the_field() {
        let err = ServerConfig::parse(&MINIMAL.replace("[store]", "colour = 1\n[store]")).unwrap_err();
        assert!(err.contains("unknown field `colour`"), "{err}");
        let err = ServerConfig::parse(&format!("{MINIMAL}[updates]\nbatch_window = \"50\"\n")).unwrap_err();
        assert!(err.contains("batch_window") && err.contains("no unit"), "{err}");
        let c = ServerConfig::parse(&MINIMAL.replace("token = \"0123456789abcdef-provisioning\"", "")).unwrap();
        assert!(c.check().unwrap_err().starts_with("principals[0] (provisioning).token: missing"), "{}", c.check().unwrap_err());
        let c = ServerConfig::parse(&MINIMAL.replace("http://127.0.0.1:2379", "127.0.0.1:2379")).unwrap();
        assert!(c.check().unwrap_err().starts_with("store.endpoints"));
        let c = ServerConfig::parse(&format!("{MINIMAL}[sessions]\nmax_per_principal = 0\n")).unwrap();
        assert!(c.check().unwrap_err().starts_with("sessions.max_per_principal: 0 must be at least 1"));
    }

    /// TLS is on by default: a config that says nothing about it does not start in clear.
    #[test]
    fn a_config_without_tls_is_refused_unless_it_turns_tls_off() {
        let c = ServerConfig::parse(&MINIMAL.replace("[tls]\nenabled = false\n", "")).unwrap();
        let err = c.check().unwrap_err();
        assert!(err.starts_with("tls: missing;") && err.contains("[tls] enabled = false"), "{err}");
        let c = ServerConfig::parse(&MINIMAL.replace("enabled = false", "certificate = \"ds1.crt\"")).unwrap();
        assert_eq!(c.check(), Ok(()));
        let err = c.check_tls_files().unwrap_err();
        assert!(err.starts_with("tls.key: missing"), "{err}");
        assert_eq!(ServerConfig::parse(MINIMAL).unwrap().sessions.max_per_principal, 16);
    }

    /// A config of the single-token era fails with one line naming the field and the fix.
    #[test]
    fn the_shared_token_of_earlier_versions_is_refused_with_the_fix() {
        let old = "name = \"ds1\"\nlisten = \"127.0.0.1:7001\"\ntoken_file = \"token\"\n[store]\nendpoints = [\"http://127.0.0.1:2379\"]\n";
        let err = ServerConfig::parse(old).unwrap().check().unwrap_err();
        assert!(err.starts_with("token_file: one token for every session is no longer accepted"), "{err}");
        assert!(err.contains("[[principals]]") && err.contains("docs/directory.md#credentials"), "{err}");
        let dir = std::env::temp_dir().join(format!("clos-directory-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ds1.toml"), old).unwrap();
        let err = ServerConfig::load(&dir.join("ds1.toml")).unwrap_err();
        assert!(err.contains("ds1.toml: token_file: one token"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_server_with_peers_needs_its_own_peer_credential() {
        let c = ServerConfig::parse(&MINIMAL.replace("listen =", "peers = [\"127.0.0.1:7002\"]\nlisten =")).unwrap();
        let err = c.check().unwrap_err();
        assert!(err.starts_with("peers: this server pushes to its peers as the peer principal named \"ds1\""), "{err}");
        let with_peer = format!("{MINIMAL}\n[[principals]]\nname = \"ds1\"\nrole = \"peer\"\ntoken = \"0123456789abcdef-ds1-peer\"\n");
        let c = ServerConfig::parse(&with_peer.replace("listen =", "peers = [\"127.0.0.1:7002\"]\nlisten =")).unwrap();
        assert_eq!(c.check(), Ok(()));
        assert_eq!(c.peer_token().as_deref(), Some(&b"0123456789abcdef-ds1-peer"[..]));
    }
}
