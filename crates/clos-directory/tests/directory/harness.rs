//! Starting a directory system for one test, and the helpers the tests share.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use clos_directory::address::Aa;
use clos_directory::cluster::{find_etcd, DirectoryServers, EtcdCluster, ServerOptions};
use clos_directory::resolver::{Resolver, ResolverConfig};
use clos_directory::wire::{FrameBuffer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the lock that makes the fault tests run one after another.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The etcd binary. Without one the test is skipped with a notice, unless `CI` or
/// `CLOS_REQUIRE_ETCD` is set, where a missing etcd must fail loudly rather than pass silently.
pub fn etcd() -> Option<PathBuf> {
    match find_etcd() {
        Ok(p) => Some(p),
        Err(e) if std::env::var_os("CI").is_some() || std::env::var_os("CLOS_REQUIRE_ETCD").is_some() => {
            panic!("{e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            None
        }
    }
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clos-directory"))
}

/// A fresh folder for one test's data and logs, removed when the test passes (etcd
/// preallocates 64 MB of write-ahead log per member) and kept, with its path printed, when it
/// fails. Declare it before the processes using it, so it is dropped after they are killed.
pub struct Folder(pub PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test data and logs kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn folder(name: &str) -> Folder {
    let dir = std::env::temp_dir().join("clos-directory-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test folder");
    Folder(dir)
}

/// Fields drop in order: the processes first, then their folder.
pub struct System {
    pub etcd: EtcdCluster,
    pub ds: DirectoryServers,
    _folder: Folder,
}

/// Starts `members` etcd members and `servers` directory servers, all following the same
/// store, and waits until every server has synchronised.
pub async fn start(name: &str, members: usize, servers: usize, options: ServerOptions) -> Option<System> {
    let etcd_bin = etcd()?;
    let folder = folder(name);
    let dir = folder.0.clone();
    let etcd = EtcdCluster::start(&dir, members, &etcd_bin).expect("start etcd");
    etcd.wait_healthy(Duration::from_secs(20)).await.expect("etcd healthy");
    let ds = DirectoryServers::start(&dir, &binary(), &vec![etcd.endpoints(); servers], &options).expect("start servers");
    for i in 0..servers {
        ds.wait_ready(i, Duration::from_secs(20)).await.expect("server ready");
    }
    Some(System { etcd, ds, _folder: folder })
}

/// An agent speaking as `me`, with the cluster's agent credential (which may speak as any AA).
pub fn agent(ds: &DirectoryServers, me: Aa) -> Resolver {
    Resolver::new(ResolverConfig::new(ds.addrs(), ds.tokens.agent.as_bytes(), me)).expect("resolver")
}

/// The provisioning system, with the cluster's provisioner credential (every service).
pub fn provisioner(ds: &DirectoryServers) -> Resolver {
    Resolver::new(ResolverConfig::provisioner(ds.addrs(), ds.tokens.provisioner.as_bytes())).expect("resolver")
}

/// Sends `bytes` on a fresh connection, then reads replies until the server closes; returns
/// the replies. The server handles what it read before it sees the end of the input.
pub async fn exchange(server: std::net::SocketAddr, bytes: &[u8]) -> Vec<Reply> {
    let mut s = TcpStream::connect(server).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let _ = s.shutdown().await;
    let mut frames = FrameBuffer::new(4096);
    let mut replies = Vec::new();
    let read = async {
        loop {
            match s.read_buf(frames.spare(1024)).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    while let Ok(Some(body)) = frames.next_frame() {
                        replies.push(Reply::decode(body).expect("server replies are well-formed"));
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read).await.expect("the server must close the session");
    replies
}

pub fn aa(i: u32) -> Aa {
    Aa(0x0a00_0000 + i)
}

/// The value at quantile `q` of `values` (sorted in place).
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() as f64 * q) as usize).min(values.len() - 1)]
}
