//! Issue 42, authorised writes. The attacks as reported, by a tenant holding a credential: a web
//! agent re-pointed a secret AA to an LA of its choice, moved a db AA into service web, removed
//! a secret AA, and an AA with no mapping registered itself into secret and could then read
//! every secret AA. All were acknowledged. Now agents only look up, as the AA their credential
//! names (VL2 §4.3.2: updates come from the network provisioning system), and a provisioner
//! writes only the services its credential names, never moving an AA between services.

use std::sync::Arc;
use std::time::Duration;

use clos_directory::address::{Aa, La};
use clos_directory::batcher::{run_batcher, BatchSettings, PendingUpdate};
use clos_directory::cluster::ServerOptions;
use clos_directory::credentials::{Credentials, PrincipalConfig};
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{LookupError, Resolver, ResolverConfig, UpdateError};
use clos_directory::store::{Guarded, Store};
use clos_directory::table::Table;
use clos_directory::wire::{Reply, Request, Role};
use tokio::sync::{broadcast, mpsc};

use crate::harness::{aa, exchange, provisioner, serial, start};

const WEB_AGENT: &str = "tenant-web-agent-token-1";
const NEW_AGENT: &str = "tenant-new-agent-token-9";
const WEB_PROVISIONER: &str = "web-provisioner-token-42";

fn mapping(la: u32, service: &str) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: service.into() })
}

fn refused(result: Result<i64, UpdateError>, expected: &str, what: &str) {
    match result {
        Err(UpdateError::Refused(reason)) => assert!(reason.contains(expected), "{what}: refused with '{reason}', expected it to mention '{expected}'"),
        other => panic!("{what}: must be refused, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_authorised_by_role_and_service_scope() {
    let _serial = serial();
    let agent_for = |name: &str, token: &str, a: Aa| PrincipalConfig { aas: Some(vec![a.to_string()]), ..PrincipalConfig::new(name, Role::Agent, token) };
    let options = ServerOptions {
        principals: vec![
            agent_for("tenant-web", WEB_AGENT, aa(1)),
            agent_for("tenant-new", NEW_AGENT, aa(9)),
            PrincipalConfig { services: Some(vec!["web".into()]), ..PrincipalConfig::new("web-provisioning", Role::Provisioner, WEB_PROVISIONER) },
        ],
        ..ServerOptions::default()
    };
    let Some(sys) = start("writes", 1, 2, options).await else { return };
    let servers = sys.ds.addrs();
    let everything = provisioner(&sys.ds);
    everything.update(aa(1), mapping(10, "web")).await.expect("setup");
    everything.update(aa(2), mapping(20, "web")).await.expect("setup");
    everything.update(aa(5), mapping(50, "secret")).await.expect("setup");
    everything.update(aa(6), mapping(60, "db")).await.expect("setup");
    tokio::time::sleep(Duration::from_millis(100)).await;

    // As reported: the web tenant's own agent credential (formerly the cluster token).
    let web_agent = Resolver::new(ResolverConfig::new(servers.clone(), WEB_AGENT.as_bytes(), aa(1))).unwrap();
    assert_eq!(web_agent.lookup(aa(2)).await, Ok(La(20)), "the agent looks up as its own AA");
    let not_agents = "Update is not allowed in a session opened as Agent";
    refused(web_agent.update(aa(5), mapping(666, "secret")).await, not_agents, "re-pointing a secret AA");
    refused(web_agent.update(aa(6), mapping(666, "web")).await, not_agents, "moving a db AA into web");
    let web_agent = Resolver::new(ResolverConfig::new(servers.clone(), WEB_AGENT.as_bytes(), aa(1))).unwrap();
    refused(web_agent.update(aa(5), None).await, "Remove is not allowed in a session opened as Agent", "removing a secret AA");
    let newcomer = Resolver::new(ResolverConfig::new(servers.clone(), NEW_AGENT.as_bytes(), aa(9))).unwrap();
    refused(newcomer.update(aa(9), mapping(90, "secret")).await, not_agents, "an unmapped AA registering itself into secret");
    let newcomer = Resolver::new(ResolverConfig::new(servers.clone(), NEW_AGENT.as_bytes(), aa(9))).unwrap();
    assert_eq!(newcomer.lookup(aa(5)).await, Err(LookupError::Denied), "and it reads no secret AA");

    // An agent speaks only as the AA its credential names: not as a secret AA, to read them.
    let impostor = Resolver::new(ResolverConfig::new(servers.clone(), WEB_AGENT.as_bytes(), aa(5))).unwrap();
    match impostor.lookup(aa(5)).await {
        Err(LookupError::Unavailable(reason)) => assert!(reason.contains("wrong token for an agent speaking as 10.0.0.5"), "{reason}"),
        other => panic!("an agent speaking as an AA its credential does not name must be rejected, got {other:?}"),
    }
    // Nor may it report a misdelivery, whose answer carries the target's LA (ToRs only).
    let mut bytes = Vec::new();
    Request::Hello { role: Role::Agent, aa: aa(1), token: WEB_AGENT.as_bytes().to_vec(), protocol: 1 }.encode(&mut bytes);
    Request::Report { id: 1, sender: aa(1), target: aa(5), stale_la: La(1) }.encode(&mut bytes);
    match exchange(servers[0], &bytes).await.as_slice() {
        [Reply::Welcome, Reply::Rejected { message }] => assert!(message.contains("Report is not allowed in a session opened as Agent"), "{message}"),
        other => panic!("a report from an agent must be rejected, got {other:?}"),
    }

    // The same attacks with a provisioner credential scoped to web: refused with the reason.
    let web_provisioner = Resolver::new(ResolverConfig::provisioner(servers.clone(), WEB_PROVISIONER.as_bytes())).unwrap();
    refused(
        web_provisioner.update(aa(5), mapping(666, "secret")).await,
        "Update.service: secret is outside this credential's services (web)",
        "re-pointing a secret AA",
    );
    refused(web_provisioner.update(aa(6), mapping(666, "web")).await, "Update.aa: 10.0.0.6 belongs to service db, outside", "moving a db AA into web");
    refused(web_provisioner.update(aa(5), None).await, "Remove.aa: 10.0.0.5 belongs to service secret, outside", "removing a secret AA");
    refused(web_provisioner.update(aa(9), mapping(90, "secret")).await, "Update.service: secret is outside", "registering an unmapped AA into secret");
    assert_eq!(newcomer.lookup(aa(5)).await, Err(LookupError::Denied), "the newcomer still reads no secret AA");
    // Within its scope it works, and no update moves an AA between services, whoever sends it.
    web_provisioner.update(aa(2), mapping(21, "web")).await.expect("a web AA by the web provisioner");
    refused(everything.update(aa(6), mapping(61, "web")).await, "never moves an AA to another service (web): remove it", "moving db to web with every service");

    // The store holds what it held before the attacks (linearizable reads).
    let store = Store::connect(&sys.etcd.endpoints(), "/clos/vl2", Duration::from_secs(2)).await.unwrap();
    assert_eq!(store.read(aa(5)).await.unwrap().map(|(m, _)| m), mapping(50, "secret"));
    assert_eq!(store.read(aa(6)).await.unwrap().map(|(m, _)| m), mapping(60, "db"));
    assert_eq!(store.read(aa(9)).await.unwrap(), None);
    assert_eq!(store.read(aa(2)).await.unwrap().map(|(m, _)| m), mapping(21, "web"));
    // Moving on purpose: a removal, then a new mapping.
    everything.update(aa(6), None).await.expect("removal");
    everything.update(aa(6), mapping(61, "web")).await.expect("re-added to web");
    assert_eq!(store.read(aa(6)).await.unwrap().map(|(m, _)| m), mapping(61, "web"));
}

/// The decisions above are made on a server's table, which may lag the store by a moment; the
/// commit is guarded by the revisions they were based on, so a stale decision is not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_decided_on_a_stale_entry_is_not_committed() {
    let _serial = serial();
    let Some(sys) = start("guarded", 1, 1, ServerOptions::default()).await else { return };
    let store = Store::connect(&sys.etcd.endpoints(), "/clos/vl2", Duration::from_secs(2)).await.unwrap();
    let created = match store.commit_guarded(&[(aa(7), 0)], &[(aa(7), mapping(70, "db"))]).await.unwrap() {
        Guarded::Committed(revision) => revision,
        other => panic!("a new key guarded as absent commits, got {other:?}"),
    };
    // A writer that still believes AA 7 absent (a lagging table) must not overwrite it.
    match store.commit_guarded(&[(aa(7), 0)], &[(aa(7), mapping(71, "web"))]).await.unwrap() {
        Guarded::Moved { current, .. } => {
            assert_eq!(current.len(), 1);
            let entry = current[0].clone().expect("the key exists");
            assert_eq!((entry.mapping, entry.revision), (mapping(70, "db"), created));
        }
        other => panic!("a stale guard must not commit, got {other:?}"),
    }
    assert_eq!(store.read(aa(7)).await.unwrap().map(|(m, _)| m), mapping(70, "db"));
    // Guarded at the right revision, it commits.
    assert!(matches!(store.commit_guarded(&[(aa(7), created)], &[(aa(7), mapping(72, "db"))]).await.unwrap(), Guarded::Committed(_)));

    // The batcher with a table that has not heard of AA 7 (as a server whose change stream
    // lags): a web provisioner's update of AA 7 looks like creating a web AA, but the guard
    // fails, the decision is made again on the store's entry (db), and it is refused. An
    // update within db, decided on the same stale table, is acknowledged.
    let credentials = Credentials::new(&[
        PrincipalConfig { services: Some(vec!["web".into()]), ..PrincipalConfig::new("web-provisioning", Role::Provisioner, WEB_PROVISIONER) },
        PrincipalConfig { services: Some(vec!["db".into()]), ..PrincipalConfig::new("db-provisioning", Role::Provisioner, "db-provisioner-token-43") },
    ])
    .unwrap();
    let web = credentials.authenticate(Role::Provisioner, Aa(0), WEB_PROVISIONER.as_bytes()).unwrap();
    let db = credentials.authenticate(Role::Provisioner, Aa(0), b"db-provisioner-token-43").unwrap();
    let stale = Arc::new(Table::new());
    let (updates, inbox) = mpsc::unbounded_channel();
    let (peers, _) = broadcast::channel(16);
    let settings =
        BatchSettings { window: Duration::from_millis(5), max_txn_ops: 128, commit_timeout: Duration::from_secs(1), tombstone_ttl: Duration::from_secs(60) };
    tokio::spawn(run_batcher(inbox, store.clone(), stale.clone(), peers, settings));
    let (outbox, mut replies) = mpsc::unbounded_channel();
    updates.send(PendingUpdate { aa: aa(7), mapping: mapping(666, "web"), id: 1, outbox: outbox.clone(), writer: web, origin: None }).unwrap();
    match replies.recv().await {
        Some(Reply::Refused { id: 1, reason }) => assert!(reason.contains("10.0.0.7 belongs to service db"), "{reason}"),
        other => panic!("a stale decision must be made again and refused, got {other:?}"),
    }
    assert_eq!(store.read(aa(7)).await.unwrap().map(|(m, _)| m), mapping(72, "db"));
    updates.send(PendingUpdate { aa: aa(7), mapping: mapping(73, "db"), id: 2, outbox, writer: db, origin: None }).unwrap();
    assert!(matches!(replies.recv().await, Some(Reply::Acked { id: 2, .. })));
    assert_eq!(store.read(aa(7)).await.unwrap().map(|(m, _)| m), mapping(73, "db"));
}
