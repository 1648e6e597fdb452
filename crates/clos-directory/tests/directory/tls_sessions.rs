//! Issue 39: sessions run in TLS. A cluster made the way `clos-directory up` makes one (a
//! throwaway CA, a certificate per server) serves agents, provisioners and peer pushes in TLS;
//! a client that does not trust the server's certificate gives up before it sends its token,
//! so an impostor server learns nothing; a plaintext client is refused with a reason it can
//! read.

use std::time::Duration;

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{LookupError, Resolver, ResolverConfig};
use clos_directory::tls::{ClientTls, LocalPki, ServerTls, PLAINTEXT_REFUSED};
use clos_directory::wire::{Reply, Request, Role, PROTOCOL};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

use crate::harness::{aa, exchange, folder, serial, start};

fn web(la: u32) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: "web".into() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_run_in_tls_and_untrusted_or_plaintext_peers_are_refused() {
    let _serial = serial();
    let Some(sys) = start("tls", 1, 2, ServerOptions { tls: true, ..ServerOptions::default() }).await else { return };
    let servers = sys.ds.addrs();
    let trusted = sys.ds.tls.clone().expect("the cluster made a CA");

    // Provisioner, agents and peers, all in TLS.
    let provisioning =
        Resolver::new(ResolverConfig::provisioner(servers.clone(), sys.ds.tokens.provisioner.as_bytes()).with_tls(Some(trusted.clone()))).unwrap();
    provisioning.update(aa(1), web(5)).await.expect("an update in TLS");
    provisioning.update(aa(2), web(7)).await.expect("an update in TLS");
    for server in &servers {
        let mut config = ResolverConfig::new(vec![*server], sys.ds.tokens.agent.as_bytes(), aa(1)).with_tls(Some(trusted.clone()));
        config.cache = false;
        let agent = Resolver::new(config).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while agent.lookup(aa(2)).await != Ok(La(7)) {
            assert!(tokio::time::Instant::now() < deadline, "server {server} never answered in TLS");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // A server retries an unreachable peer every second (the other may have started later).
    for s in &sys.ds.servers {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            let log = std::fs::read_to_string(&s.log).unwrap();
            assert!(!log.contains("peer not trusted"), "{} trusts its peer's certificate", s.name);
            if log.contains("pushing acknowledged updates to peer") {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{} pushes to its peer in TLS", s.name);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // A client with another CA (as an agent misconfigured, or tricked into trusting an
    // attacker's) does not trust the cluster's servers: no session, and its token never leaves.
    let elsewhere = folder("tls-rogue");
    let rogue = LocalPki::write(&elsewhere.0, 1).unwrap();
    let rogue_ca = ClientTls::from_ca_file(&rogue.ca).unwrap();
    let mut config = ResolverConfig::new(vec![servers[0]], sys.ds.tokens.agent.as_bytes(), aa(1)).with_tls(Some(rogue_ca));
    config.cache = false;
    match Resolver::new(config).unwrap().lookup(aa(2)).await {
        Err(LookupError::Unavailable(reason)) => assert!(reason.contains("certificate is not trusted"), "{reason}"),
        other => panic!("a client that does not trust the server's CA must get no answer, got {other:?}"),
    }

    // An impostor server with a certificate from its own CA: a cluster agent refuses it
    // during the handshake, before the Hello, so the impostor reads no token.
    let impostor = ServerTls::from_files(&rogue.servers[0].0, &rogue.servers[0].1).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let impostor_addr = listener.local_addr().unwrap();
    let heard = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut read = Vec::new();
        if let Ok(mut session) = impostor.accept(stream).await {
            let _ = tokio::time::timeout(Duration::from_secs(2), session.read_to_end(&mut read)).await;
        }
        read
    });
    let mut config = ResolverConfig::new(vec![impostor_addr], sys.ds.tokens.agent.as_bytes(), aa(1)).with_tls(Some(trusted.clone()));
    config.cache = false;
    match Resolver::new(config).unwrap().lookup(aa(2)).await {
        Err(LookupError::Unavailable(reason)) => assert!(reason.contains("certificate is not trusted"), "{reason}"),
        other => panic!("an impostor must not be believed, got {other:?}"),
    }
    let read = heard.await.unwrap();
    let token = sys.ds.tokens.agent.as_bytes();
    assert!(!read.windows(token.len()).any(|w| w == token), "the impostor must not read the agent's token");

    // Plaintext to a TLS server: a Rejected frame saying so, whether raw or from a resolver.
    let mut hello = Vec::new();
    Request::Hello { role: Role::Agent, aa: aa(1), token: sys.ds.tokens.agent.as_bytes().to_vec(), protocol: PROTOCOL }.encode(&mut hello);
    assert_eq!(exchange(servers[0], &hello).await, vec![Reply::Rejected { message: PLAINTEXT_REFUSED.into() }]);
    let plaintext = Resolver::new(ResolverConfig::new(vec![servers[0]], sys.ds.tokens.agent.as_bytes(), aa(1))).unwrap();
    match plaintext.lookup(aa(2)).await {
        Err(LookupError::Unavailable(reason)) => assert!(reason.contains("this server requires TLS"), "{reason}"),
        other => panic!("a plaintext client must be refused, got {other:?}"),
    }
    // Tokens still decide who may do what inside TLS: an agent's token opens no provisioner session.
    let wrong_role = Resolver::new(ResolverConfig::provisioner(servers.clone(), sys.ds.tokens.agent.as_bytes()).with_tls(Some(trusted))).unwrap();
    assert!(wrong_role.update(aa(2), web(666)).await.is_err());
}
