//! A whole directory system on loopback: an etcd cluster and directory servers as child
//! processes. Used by `clos-directory up` (trying it out), the benchmark and the fault tests,
//! which need real processes to kill.

use std::fmt::Write as _;
use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

use crate::address::Aa;
use crate::connection::{Connection, Outcome};
use crate::credentials::PrincipalConfig;
use crate::store::Store;
use crate::tls::{ClientTls, LocalPki};
use crate::wire::{Reply, Request, Role};

/// A free TCP port on 127.0.0.1 (the OS picks it; there is a small window in which another
/// process could take it before we bind it again).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Finds the etcd server binary: `$CLOS_ETCD`, then `etcd` on the PATH.
pub fn find_etcd() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("CLOS_ETCD") {
        return Ok(PathBuf::from(p));
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let candidate = dir.join("etcd");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("etcd not found: install it (Debian: `apt-get install etcd-server`) or set CLOS_ETCD to its path")
}

/// Spawns `command` so that it dies with us: the kernel sends it SIGKILL when the thread that
/// started it exits (PR_SET_PDEATHSIG), so a crashed or killed test or `up` leaves no stray etcd
/// or directory server behind on the machine.
fn spawn_tied(command: &mut Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

pub struct EtcdNode {
    pub name: String,
    pub client_url: String,
    pub data_dir: PathBuf,
    pub log: PathBuf,
    child: Option<Child>,
    args: Vec<String>,
}

/// An etcd cluster of `size` members on loopback, with short Raft timers (50 ms heartbeat,
/// 500 ms election) so leader failover is quick in tests.
pub struct EtcdCluster {
    pub nodes: Vec<EtcdNode>,
    etcd: PathBuf,
}

impl EtcdCluster {
    pub fn start(dir: &Path, size: usize, etcd: &Path) -> anyhow::Result<EtcdCluster> {
        let ports: Vec<(u16, u16)> = (0..size).map(|_| Ok((free_port()?, free_port()?))).collect::<std::io::Result<_>>()?;
        let initial: Vec<String> = ports.iter().enumerate().map(|(i, (_, peer))| format!("e{i}=http://127.0.0.1:{peer}")).collect();
        let token = format!("clos-{}-{}", std::process::id(), ports[0].0);
        let mut nodes = Vec::new();
        for (i, (client, peer)) in ports.iter().enumerate() {
            let name = format!("e{i}");
            let data_dir = dir.join(format!("{name}.etcd"));
            let client_url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let args = vec![
                "--name".into(),
                name.clone(),
                "--data-dir".into(),
                data_dir.display().to_string(),
                "--listen-client-urls".into(),
                client_url.clone(),
                "--advertise-client-urls".into(),
                client_url.clone(),
                "--listen-peer-urls".into(),
                peer_url.clone(),
                "--initial-advertise-peer-urls".into(),
                peer_url,
                "--initial-cluster".into(),
                initial.join(","),
                "--initial-cluster-state".into(),
                "new".into(),
                "--initial-cluster-token".into(),
                token.clone(),
                "--heartbeat-interval".into(),
                "50".into(),
                "--election-timeout".into(),
                "500".into(),
                "--logger".into(),
                "zap".into(),
                "--log-level".into(),
                "warn".into(),
            ];
            let log = dir.join(format!("{name}.log"));
            nodes.push(EtcdNode { name, client_url, data_dir, log, child: None, args });
        }
        let mut cluster = EtcdCluster { nodes, etcd: etcd.to_path_buf() };
        for i in 0..size {
            cluster.restart(i)?;
        }
        Ok(cluster)
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.client_url.clone()).collect()
    }

    /// Starts member `i` (again), on its existing data directory.
    pub fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        let node = &mut self.nodes[i];
        kill(&mut node.child);
        let log = File::options().create(true).append(true).open(&node.log)?;
        let child = spawn_tied(Command::new(&self.etcd).args(&node.args).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log))
            .with_context(|| format!("cannot run {}", self.etcd.display()))?;
        node.child = Some(child);
        Ok(())
    }

    /// SIGKILL, no goodbye: what a crashed machine looks like to the others.
    pub fn kill(&mut self, i: usize) {
        kill(&mut self.nodes[i].child);
    }

    /// The process id of member `i`, while it runs (for fault tests that pause it).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.nodes[i].child.as_ref().map(|c| c.id())
    }

    /// Waits until a quorum answers linearizable reads.
    pub async fn wait_healthy(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let attempt = async {
                let store = Store::connect(&self.endpoints(), "/clos/health", Duration::from_millis(500)).await?;
                store.probe().await
            };
            match attempt.await {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > deadline => {
                    bail!("etcd cluster not healthy after {timeout:?}: {e} (logs in {})", self.nodes[0].log.display())
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// The index of the current leader, asking the live members.
    pub async fn leader(&self) -> anyhow::Result<usize> {
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            let Ok(mut client) = etcd_client::Client::connect([&node.client_url], None).await else { continue };
            let Ok(status) = client.status().await else { continue };
            if status.leader() == 0 {
                continue;
            }
            let leader = status.leader();
            for (j, other) in self.nodes.iter().enumerate() {
                if other.child.is_none() {
                    continue;
                }
                let Ok(mut c) = etcd_client::Client::connect([&other.client_url], None).await else { continue };
                if let Ok(s) = c.status().await {
                    if s.header().map(|h| h.member_id()) == Some(leader) {
                        return Ok(j);
                    }
                }
            }
        }
        Err(anyhow!("no etcd member reports a leader"))
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            kill(&mut node.child);
        }
    }
}

/// Settings written into each directory server's config file.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub workers: usize,
    pub batch_window: String,
    pub probe_interval: String,
    pub max_staleness: String,
    /// `[sync] stale_lookups`: "serve" (the server's default) or "refuse".
    pub stale_lookups: String,
    pub resync_interval: String,
    pub push_to_peers: bool,
    pub isolate_services: bool,
    pub log_format: String,
    /// `[sessions]`: the Hello deadline and the cap on sessions still waiting for one.
    pub hello_timeout: String,
    pub max_unauthenticated: usize,
    /// Principals beyond the cluster's own (`LocalTokens`), e.g. a provisioner scoped to one
    /// service, or an agent credential naming one AA.
    pub principals: Vec<PrincipalConfig>,
    /// TLS with a throwaway CA made for the cluster (`LocalPki`). `clos-directory up` and
    /// `bench` turn it on; tests that write raw frames leave it off.
    pub tls: bool,
    /// `[sessions] max_per_principal`: 64 here, not the server's 16, because every emulated
    /// agent of a local cluster shares the one `agents` principal (and every provisioner client
    /// the `provisioning` one).
    pub max_per_principal: usize,
    /// `[sessions] max_sessions`: all sessions of a server together.
    pub max_sessions: usize,
    /// `[sessions] rate` and `burst`: each session's request rate limit.
    pub rate: u32,
    pub burst: u32,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            workers: 1,
            batch_window: "50ms".into(),
            probe_interval: "250ms".into(),
            max_staleness: "2s".into(),
            stale_lookups: "serve".into(),
            resync_interval: "30s".into(),
            push_to_peers: true,
            isolate_services: true,
            log_format: "json".into(),
            hello_timeout: "2s".into(),
            max_unauthenticated: 256,
            principals: Vec::new(),
            tls: false,
            max_per_principal: 64,
            max_sessions: 16_384,
            rate: 20_000,
            burst: 2_000,
        }
    }
}

/// The credentials a local cluster makes for itself, each in a token file in its folder: an
/// agent that may speak as any AA (`agent.token`; fine on loopback, see docs/directory.md),
/// a provisioner of every service (`provisioner.token`), a ToR (`tor.token`), and one peer
/// credential per directory server (`ds<i>.peer.token`).
#[derive(Clone, Debug)]
pub struct LocalTokens {
    pub agent: String,
    pub provisioner: String,
    pub tor: String,
    /// Each directory server's peer credential, by server index.
    pub peers: Vec<String>,
}

/// 16 random bytes from the kernel, in hex: a fresh token.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn with_token_file(dir: &Path, name: &str, role: Role, file: &str) -> anyhow::Result<(PrincipalConfig, String)> {
    let token = new_token()?;
    std::fs::write(dir.join(file), &token)?;
    let principal = PrincipalConfig { token: None, token_file: Some(PathBuf::from(file)), ..PrincipalConfig::new(name, role, "") };
    Ok((principal, token))
}

pub struct DirectoryServer {
    pub name: String,
    pub addr: SocketAddr,
    pub config: PathBuf,
    pub log: PathBuf,
    child: Option<Child>,
}

/// Directory server processes, each with its own config file and log.
pub struct DirectoryServers {
    pub servers: Vec<DirectoryServer>,
    binary: PathBuf,
    pub tokens: LocalTokens,
    /// What clients need to reach the servers in TLS (the cluster's CA), when it is on.
    pub tls: Option<ClientTls>,
    /// The cluster CA's certificate file, when TLS is on (`--ca-file` of the client commands).
    pub ca_file: Option<PathBuf>,
}

impl DirectoryServers {
    /// Writes one config per server (store endpoints may differ per server, e.g. to route one
    /// through a partitionable proxy) and starts them.
    pub fn start(dir: &Path, binary: &Path, store_endpoints: &[Vec<String>], options: &ServerOptions) -> anyhow::Result<DirectoryServers> {
        let addrs: Vec<SocketAddr> = store_endpoints.iter().map(|_| Ok(SocketAddr::from(([127, 0, 0, 1], free_port()?)))).collect::<std::io::Result<_>>()?;
        let (mut agent, agent_token) = with_token_file(dir, "agents", Role::Agent, "agent.token")?;
        agent.aas = Some(vec!["*".into()]);
        let (mut provisioner, provisioner_token) = with_token_file(dir, "provisioning", Role::Provisioner, "provisioner.token")?;
        provisioner.services = Some(vec!["*".into()]);
        let (tor, tor_token) = with_token_file(dir, "tors", Role::Tor, "tor.token")?;
        let mut principals = vec![agent, provisioner, tor];
        let mut peer_tokens = Vec::new();
        for i in 0..addrs.len() {
            let (peer, token) = with_token_file(dir, &format!("ds{i}"), Role::Peer, &format!("ds{i}.peer.token"))?;
            principals.push(peer);
            peer_tokens.push(token);
        }
        principals.extend(options.principals.iter().cloned());
        let principals: String = principals.iter().map(|p| format!("\n{}", p.to_toml())).collect();
        let pki = if options.tls { Some(LocalPki::write(dir, addrs.len()).map_err(anyhow::Error::msg)?) } else { None };
        let mut servers = Vec::new();
        for (i, endpoints) in store_endpoints.iter().enumerate() {
            let name = format!("ds{i}");
            let peers: Vec<String> =
                if options.push_to_peers { addrs.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, a)| format!("\"{a}\"")).collect() } else { Vec::new() };
            let endpoints: Vec<String> = endpoints.iter().map(|e| format!("\"{e}\"")).collect();
            let mut text = String::new();
            let _ = writeln!(text, "# Directory server {name}, written by clos-directory's local cluster.");
            let _ = writeln!(text, "name = \"{name}\"\nlisten = \"{}\"", addrs[i]);
            let _ = writeln!(text, "workers = {}\nlog_format = \"{}\"\npeers = [{}]", options.workers, options.log_format, peers.join(", "));
            let _ = writeln!(text, "\n[store]\nendpoints = [{}]", endpoints.join(", "));
            let _ = writeln!(
                text,
                "\n[sync]\nresync_interval = \"{}\"\nprobe_interval = \"{}\"\nmax_staleness = \"{}\"\nstale_lookups = \"{}\"",
                options.resync_interval, options.probe_interval, options.max_staleness, options.stale_lookups
            );
            let _ = writeln!(text, "\n[updates]\nbatch_window = \"{}\"", options.batch_window);
            let _ = writeln!(text, "\n[policy]\nisolate_services = {}", options.isolate_services);
            let _ = writeln!(
                text,
                "\n[sessions]\nhello_timeout = \"{}\"\nmax_unauthenticated = {}\nmax_sessions = {}\nmax_per_principal = {}\nrate = {}\nburst = {}",
                options.hello_timeout, options.max_unauthenticated, options.max_sessions, options.max_per_principal, options.rate, options.burst
            );
            match &pki {
                Some(pki) => {
                    let file = |p: &Path| p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                    let _ = writeln!(
                        text,
                        "\n# A throwaway CA made for this cluster signed the certificate (docs/directory.md#tls).\n[tls]\ncertificate = \"{}\"\nkey = \"{}\"\nca = \"{}\"",
                        file(&pki.servers[i].0),
                        file(&pki.servers[i].1),
                        file(&pki.ca)
                    );
                }
                None => {
                    let _ = writeln!(text, "\n# Tokens travel in clear: for tests on loopback only.\n[tls]\nenabled = false");
                }
            }
            let _ = write!(text, "\n# Who may open a session, and as what (docs/directory.md#credentials).{principals}");
            let config = dir.join(format!("{name}.toml"));
            std::fs::write(&config, text)?;
            let log = dir.join(format!("{name}.log"));
            servers.push(DirectoryServer { name, addr: addrs[i], config, log, child: None });
        }
        let tokens = LocalTokens { agent: agent_token, provisioner: provisioner_token, tor: tor_token, peers: peer_tokens };
        let tls = match &pki {
            Some(pki) => Some(ClientTls::from_ca_file(&pki.ca).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let ca_file = pki.map(|p| p.ca);
        let mut all = DirectoryServers { servers, binary: binary.to_path_buf(), tokens, tls, ca_file };
        for i in 0..all.servers.len() {
            all.restart(i)?;
        }
        Ok(all)
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.servers.iter().map(|s| s.addr).collect()
    }

    pub fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        let s = &mut self.servers[i];
        kill(&mut s.child);
        let log = File::options().create(true).append(true).open(&s.log)?;
        let child =
            spawn_tied(Command::new(&self.binary).arg("serve").arg("--config").arg(&s.config).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log))
                .with_context(|| format!("cannot run {}", self.binary.display()))?;
        s.child = Some(child);
        Ok(())
    }

    pub fn kill(&mut self, i: usize) {
        kill(&mut self.servers[i].child);
    }

    /// The process id of server `i`, while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.servers[i].child.as_ref().map(|c| c.id())
    }

    /// Whether server `i` is still running (it has not exited or crashed).
    pub fn is_running(&mut self, i: usize) -> bool {
        match &mut self.servers[i].child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Waits until server `i` accepts sessions and has synchronised with the store.
    pub async fn wait_ready(&self, i: usize, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let s = &self.servers[i];
        loop {
            if let Ok(c) = Connection::open(s.addr, Role::Agent, Aa(0), self.tokens.agent.as_bytes(), self.tls.as_ref(), Duration::from_millis(300), None).await
            {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                if c.send(1, Request::Lookup { id: 1, target: Aa(0) }, (tx, 0)) {
                    if let Ok(Some((_, Outcome::Reply(r)))) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
                        if !matches!(r, Reply::Unavailable { .. }) {
                            return Ok(());
                        }
                    }
                }
            }
            if Instant::now() > deadline {
                bail!("directory server {} not ready after {timeout:?} (log: {})", s.name, s.log.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for DirectoryServers {
    fn drop(&mut self) {
        for s in &mut self.servers {
            kill(&mut s.child);
        }
    }
}
