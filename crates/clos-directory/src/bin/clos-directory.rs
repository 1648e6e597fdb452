//! `clos-directory`: VL2's directory system (VL2 §4.3). Run a directory server from a config
//! file, start a local cluster on loopback, query it, or benchmark it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use clos_directory::address::{Aa, La};
use clos_directory::bench::{self, BenchOptions};
use clos_directory::cluster::{find_etcd, DirectoryServers, EtcdCluster, ServerOptions};
use clos_directory::config::ServerConfig;
use clos_directory::duration::parse_duration;
use clos_directory::mapping::{validate_service, Mapping};
use clos_directory::resolver::{Resolver, ResolverConfig};
use clos_directory::tls::ClientTls;
use clos_directory::wire::Role;

#[derive(Parser)]
#[command(name = "clos-directory", version, about = "VL2's directory system: AA-to-LA lookups over an etcd-replicated store")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one directory server from a TOML config file.
    Serve {
        /// The config file (see docs/directory.md for every field).
        #[arg(long)]
        config: PathBuf,
    },
    /// Start a local cluster on loopback (etcd members + directory servers) and keep it running.
    Up {
        /// etcd members (the RSM tier).
        #[arg(long, default_value_t = 3)]
        etcd: usize,
        /// Directory servers.
        #[arg(long, default_value_t = 3)]
        servers: usize,
        /// Folder for configs, data and logs (default: a new folder under the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Stop after this long (e.g. "10s"); by default run until Ctrl-C.
        #[arg(long = "for", value_parser = parse_duration)]
        run_for: Option<Duration>,
        /// Serve in clear instead of TLS (tokens then travel unencrypted).
        #[arg(long)]
        no_tls: bool,
    },
    /// Resolve AAs as an agent (with an agent's credential naming the --as AA).
    Lookup {
        #[command(flatten)]
        client: ClientArgs,
        /// AAs to resolve.
        #[arg(required = true, value_parser = parse_aa)]
        targets: Vec<Aa>,
    },
    /// Map an AA to an LA (or remove it with --remove) as the provisioning system, with a
    /// provisioner's credential, and wait for the acknowledgement.
    Update {
        #[command(flatten)]
        client: ClientArgs,
        #[arg(value_parser = parse_aa)]
        aa: Aa,
        #[arg(value_parser = parse_la, required_unless_present = "remove")]
        la: Option<La>,
        /// The service the AA belongs to (access control).
        #[arg(long, default_value = "default", value_parser = parse_service)]
        service: String,
        #[arg(long)]
        remove: bool,
    },
    /// Measure lookup and update latency and throughput on a local cluster (VL2 §5.5).
    Bench(BenchOptions),
}

#[derive(clap::Args)]
struct ClientArgs {
    /// Directory servers, comma-separated host:port.
    #[arg(long, value_delimiter = ',', required = true)]
    servers: Vec<SocketAddr>,
    /// File holding this principal's token (an agent's for lookup, a provisioner's for update).
    #[arg(long)]
    token_file: PathBuf,
    /// The AA this client speaks as (lookup: the requester for access control, which the
    /// agent's credential must name).
    #[arg(long = "as", value_parser = parse_aa, default_value = "0.0.0.0")]
    me: Aa,
    /// The CA file (PEM) that signed the servers' certificates: sessions run in TLS and the
    /// servers are checked against it (`up` prints its path).
    #[arg(long, required_unless_present = "no_tls")]
    ca_file: Option<PathBuf>,
    /// Speak in clear, to servers whose config has [tls] enabled = false.
    #[arg(long, conflicts_with = "ca_file")]
    no_tls: bool,
}

fn parse_aa(s: &str) -> Result<Aa, String> {
    s.parse()
}
fn parse_la(s: &str) -> Result<La, String> {
    s.parse()
}
fn parse_service(s: &str) -> Result<String, String> {
    validate_service(s).map(|_| s.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn runtime(workers: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(workers.max(1)).enable_all().build()?)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { config } => {
            let config = ServerConfig::load(&config).map_err(anyhow::Error::msg)?;
            clos_directory::log::init(&config.log_format);
            runtime(config.workers)?.block_on(clos_directory::server::serve(config))
        }
        Command::Up { etcd, servers, dir, run_for, no_tls } => runtime(2)?.block_on(up(etcd, servers, dir, run_for, !no_tls)),
        Command::Lookup { client, targets } => runtime(1)?.block_on(async {
            let resolver = resolver(&client, Role::Agent)?;
            for (target, answer) in targets.iter().zip(resolver.resolve_many(&targets).await) {
                // An answer from a server cut off from the store says so, with its age.
                let stale = answer.stale.map(|age| format!(" (stale: no contact with the store for {:.1} s)", age.as_secs_f64())).unwrap_or_default();
                match answer.result {
                    Ok(la) => println!("{target} -> {la}{stale}"),
                    Err(e) => println!("{target}: {e}{stale}"),
                }
            }
            Ok(())
        }),
        Command::Update { client, aa, la, service, remove } => runtime(1)?.block_on(async {
            let resolver = resolver(&client, Role::Provisioner)?;
            let mapping = if remove { None } else { la.map(|la| Mapping { la, service }) };
            let revision = resolver.update(aa, mapping).await?;
            println!("acknowledged at store revision {revision}");
            Ok(())
        }),
        Command::Bench(options) => runtime(1)?.block_on(bench::run(options)),
    }
}

fn resolver(client: &ClientArgs, role: Role) -> anyhow::Result<Resolver> {
    let token = std::fs::read_to_string(&client.token_file).map_err(|e| anyhow::anyhow!("--token-file: cannot read {}: {e}", client.token_file.display()))?;
    let config = match role {
        Role::Provisioner => ResolverConfig::provisioner(client.servers.clone(), token.trim().as_bytes()),
        _ => ResolverConfig::new(client.servers.clone(), token.trim().as_bytes(), client.me),
    };
    let tls = match &client.ca_file {
        Some(ca) => Some(ClientTls::from_ca_file(ca).map_err(|e| anyhow::anyhow!("--ca-file: {e}"))?),
        None => None,
    };
    Resolver::new(config.with_tls(tls)).map_err(anyhow::Error::msg)
}

async fn up(etcd_members: usize, servers: usize, dir: Option<PathBuf>, run_for: Option<Duration>, tls: bool) -> anyhow::Result<()> {
    if !(1..=7).contains(&etcd_members) || !(1..=16).contains(&servers) {
        anyhow::bail!("--etcd must be 1 to 7 and --servers 1 to 16");
    }
    let chosen = dir.is_some();
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("clos-directory-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("--dir: cannot create {}: {e}", dir.display()))?;
    let etcd = EtcdCluster::start(&dir, etcd_members, &find_etcd()?)?;
    etcd.wait_healthy(Duration::from_secs(20)).await?;
    let endpoints = vec![etcd.endpoints(); servers];
    let binary = std::env::current_exe()?;
    let options = ServerOptions { isolate_services: false, tls, ..ServerOptions::default() };
    let ds = DirectoryServers::start(&dir, &binary, &endpoints, &options)?;
    for i in 0..servers {
        ds.wait_ready(i, Duration::from_secs(20)).await?;
    }
    let addrs: Vec<String> = ds.addrs().iter().map(|a| a.to_string()).collect();
    println!("VL2 directory system up on loopback");
    println!("  store (etcd):      {}", etcd.endpoints().join(" "));
    println!("  directory servers: {}", addrs.join(" "));
    println!("  folder:            {} (configs ds*.toml, logs *.log, token files *.token, certificates *.crt)", dir.display());
    let transport = match &ds.ca_file {
        Some(ca) => {
            println!("  TLS:               on; a throwaway CA made for this cluster ({}) signed the servers' certificates", ca.display());
            format!("--ca-file {}", ca.display())
        }
        None => {
            println!("  TLS:               OFF (--no-tls): tokens and answers travel in clear");
            "--no-tls".to_string()
        }
    };
    println!("try:");
    let provisioner = dir.join("provisioner.token");
    let agent = dir.join("agent.token");
    println!("  clos-directory update --servers {} --token-file {} {transport} 10.0.0.5 20.0.0.1 --service web", addrs.join(","), provisioner.display());
    println!("  clos-directory lookup --servers {} --token-file {} {transport} 10.0.0.5", addrs.join(","), agent.display());
    match run_for {
        Some(d) => tokio::time::sleep(d).await,
        None => {
            println!("press Ctrl-C to stop");
            tokio::signal::ctrl_c().await?;
        }
    }
    drop(ds);
    drop(etcd);
    if !chosen {
        // A folder we made up is ours to remove; etcd preallocates 64 MB per member.
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!("stopped");
    Ok(())
}
