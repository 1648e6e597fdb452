//! The directory benchmark, after VL2 §5.5: emulated agents generate bursty lookups and
//! updates on loopback against a local cluster; we report latency percentiles against offered
//! rate, the highest lookup rate whose 99th percentile stays under 10 ms, update throughput with
//! 50 ms batching, and the directory servers' own CPU time, so rates can be stated per core.
//!
//! Load is open-loop: arrival times are drawn in advance (bursts in a Poisson process, as VL2's
//! "bursty random process"), and a slow server cannot slow the generator down. Latency runs from
//! the moment a burst is sent; how late that is against its schedule (tokio's timers fire up to
//! 1 ms late, and a saturated generator falls behind) is reported apart as the generator's lag,
//! so it is neither hidden nor charged to the directory.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use crate::address::{Aa, La};
use crate::cluster::{find_etcd, DirectoryServers, EtcdCluster, ServerOptions};
use crate::duration::parse_duration;
use crate::mapping::Mapping;
use crate::resolver::{Resolver, ResolverConfig};

#[derive(clap::Args, Clone, Debug)]
pub struct BenchOptions {
    /// etcd members (VL2 §5.5 used 3 RSM nodes).
    #[arg(long, default_value_t = 3)]
    pub etcd: usize,
    /// Directory servers (VL2 §5.5: 3).
    #[arg(long, default_value_t = 3)]
    pub servers: usize,
    /// Worker threads per directory server.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Emulated agents; each keeps a session with every server.
    #[arg(long, default_value_t = 16)]
    pub agents: usize,
    /// Servers each lookup goes to (VL2: 2).
    #[arg(long, default_value_t = 2)]
    pub k: usize,
    /// Lookups per burst (VL2 §3: a median of 10 concurrent correspondents per server).
    #[arg(long, default_value_t = 10)]
    pub burst: usize,
    /// Offered update rates, updates/s, one step each.
    #[arg(long, value_delimiter = ',', default_value = "3000,6000,12000,24000")]
    pub update_rates: Vec<f64>,
    /// Offered lookup rates, lookups/s over all servers, one step each.
    #[arg(long, value_delimiter = ',', default_value = "25000,50000,100000,150000,200000")]
    pub lookup_rates: Vec<f64>,
    /// Length of each step.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub step: Duration,
    /// Batch window of the directory servers (VL2 §5.5: 50 ms).
    #[arg(long, default_value = "50ms")]
    pub batch_window: String,
    /// Write the full results here as JSON.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder for the cluster's configs, data and logs (default: a temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Speak in clear instead of TLS (to measure what TLS costs).
    #[arg(long)]
    pub no_tls: bool,
    /// Each session's request rate limit, requests/s (`[sessions] rate`); the burst is a tenth.
    /// One emulated agent's session takes up to rate × k / (agents × servers) of the lookups.
    #[arg(long, default_value_t = 20_000)]
    pub session_rate: u32,
}

/// Latency percentiles of one step, in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Percentiles {
    pub p1: f64,
    pub p10: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub offered_per_s: f64,
    pub completed_per_s: f64,
    pub completed: usize,
    pub failed: usize,
    /// Lookups answered from a server cut off from the store, marked stale (`freshness.rs`);
    /// they count as completed. Zero while the store is healthy.
    pub stale: usize,
    pub latency_ms: Percentiles,
    /// 99th percentile of how late requests were sent against their schedule; large values
    /// mean the load generator, not the directory, was the bottleneck.
    pub generator_lag_p99_ms: f64,
    /// CPU seconds used by all directory servers during the step.
    pub server_cpu_s: f64,
    /// Completed requests per directory-server CPU second (the per-core rate).
    pub per_server_cpu_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub servers: usize,
    pub etcd_members: usize,
    pub workers_per_server: usize,
    pub agents: usize,
    pub k: usize,
    pub burst: usize,
    pub step_s: f64,
    pub batch_window: String,
    pub mappings: usize,
    pub updates: Vec<Step>,
    pub lookups: Vec<Step>,
    /// Highest offered lookup rate up to which every step answered every lookup with p99 under
    /// 10 ms (VL2 §5.5's criterion).
    pub max_lookup_rate_p99_under_10ms: f64,
    pub cores: usize,
    /// Whether the sessions ran in TLS.
    pub tls: bool,
    /// Each session's request rate limit, requests/s.
    pub session_rate: u32,
}

fn percentiles(mut us: Vec<u32>) -> Percentiles {
    if us.is_empty() {
        return Percentiles { p1: 0.0, p10: 0.0, p25: 0.0, p50: 0.0, p75: 0.0, p90: 0.0, p99: 0.0, p999: 0.0, max: 0.0, mean: 0.0 };
    }
    us.sort_unstable();
    let at = |q: f64| us[((us.len() as f64 * q) as usize).min(us.len() - 1)] as f64 / 1000.0;
    let mean = us.iter().map(|&u| u as f64).sum::<f64>() / us.len() as f64 / 1000.0;
    Percentiles {
        p1: at(0.01),
        p10: at(0.10),
        p25: at(0.25),
        p50: at(0.50),
        p75: at(0.75),
        p90: at(0.90),
        p99: at(0.99),
        p999: at(0.999),
        max: *us.last().expect("non-empty") as f64 / 1000.0,
        mean,
    }
}

/// CPU seconds (user + system) a process has used, from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0.0) + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn servers_cpu(ds: &DirectoryServers, n: usize) -> f64 {
    (0..n).filter_map(|i| ds.pid(i)).map(cpu_seconds).sum()
}

fn exponential(rng: &mut Xoshiro256PlusPlus, mean: f64) -> f64 {
    let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    -mean * u.ln()
}

fn aa(i: usize) -> Aa {
    Aa(0x0a00_0000 + i as u32)
}

/// Runs the whole benchmark: starts a cluster, runs the update steps (which also load the
/// mappings), then the lookup steps, prints a table and writes JSON.
pub async fn run(options: BenchOptions) -> anyhow::Result<()> {
    let dir = options.dir.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("clos-directory-bench-{}", std::process::id())));
    std::fs::create_dir_all(&dir)?;
    let etcd = EtcdCluster::start(&dir, options.etcd, &find_etcd()?)?;
    etcd.wait_healthy(Duration::from_secs(20)).await?;
    let server_options = ServerOptions {
        workers: options.workers,
        batch_window: options.batch_window.clone(),
        log_format: "json".into(),
        tls: !options.no_tls,
        rate: options.session_rate,
        burst: (options.session_rate / 10).max(1),
        ..ServerOptions::default()
    };
    let binary = std::env::current_exe()?;
    let ds = DirectoryServers::start(&dir, &binary, &vec![etcd.endpoints(); options.servers], &server_options)?;
    for i in 0..options.servers {
        ds.wait_ready(i, Duration::from_secs(20)).await?;
    }
    let mut agents = Vec::new();
    // Updates come from the provisioning system (VL2 §4.3.2): one provisioner client per agent,
    // so that updates spread over sessions as before.
    let mut provisioners = Vec::new();
    for a in 0..options.agents {
        let mut config = ResolverConfig::provisioner(ds.addrs(), ds.tokens.provisioner.as_bytes()).with_tls(ds.tls.clone());
        config.seed = options.seed.wrapping_mul(1000).wrapping_add(a as u64) ^ 0x9e37;
        let p = Arc::new(Resolver::new(config).map_err(anyhow::Error::msg)?);
        p.connect_all().await;
        provisioners.push(p);
        let mut config = ResolverConfig::new(ds.addrs(), ds.tokens.agent.as_bytes(), aa(a)).with_tls(ds.tls.clone());
        config.k = options.k;
        config.cache = false;
        config.seed = options.seed.wrapping_mul(1000).wrapping_add(a as u64);
        let r = Arc::new(Resolver::new(config).map_err(anyhow::Error::msg)?);
        r.connect_all().await;
        agents.push(r);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(options.seed);

    eprintln!("updates: {} steps of {:?}", options.update_rates.len(), options.step);
    let mut updates = Vec::new();
    let mut written = 0usize;
    for &rate in &options.update_rates {
        let cpu0 = servers_cpu(&ds, options.servers);
        let (step, count) = update_step(&provisioners, rate, options.step, written, &mut rng).await;
        written += count;
        let cpu = servers_cpu(&ds, options.servers) - cpu0;
        let step = Step { server_cpu_s: cpu, per_server_cpu_s: step.completed as f64 / cpu.max(1e-9), ..step };
        eprintln!(
            "  offered {rate:>8.0}/s  acked {:>8.0}/s  p50 {:.1} ms  p99 {:.1} ms  failed {}",
            step.completed_per_s, step.latency_ms.p50, step.latency_ms.p99, step.failed
        );
        updates.push(step);
    }
    // Give the change streams a moment so every server holds every mapping.
    tokio::time::sleep(Duration::from_millis(300)).await;

    eprintln!("lookups: {} steps of {:?}", options.lookup_rates.len(), options.step);
    let mut lookups = Vec::new();
    for &rate in &options.lookup_rates {
        let cpu0 = servers_cpu(&ds, options.servers);
        let step = lookup_step(&agents, rate, options.step, options.burst, written.max(options.agents), &mut rng).await;
        let cpu = servers_cpu(&ds, options.servers) - cpu0;
        let step = Step { server_cpu_s: cpu, per_server_cpu_s: step.completed as f64 * options.k as f64 / cpu.max(1e-9), ..step };
        eprintln!(
            "  offered {rate:>8.0}/s  answered {:>8.0}/s  p50 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  failed {}",
            step.completed_per_s, step.latency_ms.p50, step.latency_ms.p99, step.latency_ms.p999, step.failed
        );
        lookups.push(step);
    }
    // The highest rate of the longest run of passing steps from the lowest rate up: a rate that
    // passes only above a failing one is noise, not capacity.
    let max_rate = lookups
        .iter()
        .take_while(|s| s.failed == 0 && s.latency_ms.p99 < 10.0 && s.completed_per_s >= 0.95 * s.offered_per_s)
        .map(|s| s.offered_per_s)
        .fold(0.0, f64::max);
    let report = BenchReport {
        servers: options.servers,
        etcd_members: options.etcd,
        workers_per_server: options.workers,
        agents: options.agents,
        k: options.k,
        burst: options.burst,
        step_s: options.step.as_secs_f64(),
        batch_window: options.batch_window.clone(),
        mappings: written,
        updates,
        lookups,
        max_lookup_rate_p99_under_10ms: max_rate,
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        tls: !options.no_tls,
        session_rate: options.session_rate,
    };
    print_table(&report);
    if let Some(out) = &options.out {
        std::fs::write(out, serde_json::to_string_pretty(&report)?).map_err(|e| anyhow::anyhow!("--out: cannot write {}: {e}", out.display()))?;
        eprintln!("wrote {}", out.display());
    }
    drop(agents);
    drop(provisioners);
    drop(ds);
    drop(etcd);
    if options.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

async fn update_step(agents: &[Arc<Resolver>], rate: f64, length: Duration, first: usize, rng: &mut Xoshiro256PlusPlus) -> (Step, usize) {
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let lags = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(Mutex::new(0usize));
    let start = tokio::time::Instant::now();
    let mut at = 0.0;
    let mut count = 0;
    let mut tasks = tokio::task::JoinSet::new();
    while at < length.as_secs_f64() {
        let when = start + Duration::from_secs_f64(at);
        let agent = agents[count % agents.len()].clone();
        let target = aa(first + count);
        let la = La(0x1400_0000 + (rng.next_u64() % 4096) as u32);
        let (latencies, lags, failed) = (latencies.clone(), lags.clone(), failed.clone());
        tasks.spawn(async move {
            tokio::time::sleep_until(when).await;
            let sent = tokio::time::Instant::now();
            let r = agent.update(target, Some(Mapping { la, service: "bench".into() })).await;
            match r {
                Ok(_) => latencies.lock().unwrap().push(micros(sent.elapsed())),
                Err(_) => *failed.lock().unwrap() += 1,
            }
            lags.lock().unwrap().push(micros(sent - when));
        });
        count += 1;
        at += exponential(rng, 1.0 / rate);
    }
    while tasks.join_next().await.is_some() {}
    (measured(rate, length, start, &latencies, &lags, &failed), count)
}

async fn lookup_step(agents: &[Arc<Resolver>], rate: f64, length: Duration, burst: usize, population: usize, rng: &mut Xoshiro256PlusPlus) -> Step {
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let lags = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(Mutex::new(0usize));
    let stale = Arc::new(Mutex::new(0usize));
    let start = tokio::time::Instant::now();
    let mut at = 0.0;
    let mut tasks = tokio::task::JoinSet::new();
    let burst_rate = rate / burst as f64;
    while at < length.as_secs_f64() {
        let when = start + Duration::from_secs_f64(at);
        let agent = agents[(rng.next_u64() % agents.len() as u64) as usize].clone();
        let targets: Vec<Aa> = (0..burst).map(|_| aa((rng.next_u64() % population as u64) as usize)).collect();
        let (latencies, lags, failed, stale) = (latencies.clone(), lags.clone(), failed.clone(), stale.clone());
        tasks.spawn(async move {
            tokio::time::sleep_until(when).await;
            let sent = tokio::time::Instant::now();
            let results = agent.resolve_many(&targets).await;
            let took = micros(sent.elapsed());
            lags.lock().unwrap().push(micros(sent - when));
            *stale.lock().unwrap() += results.iter().filter(|a| a.stale.is_some()).count();
            let bad = results.iter().filter(|a| a.result.is_err()).count();
            latencies.lock().unwrap().extend(std::iter::repeat_n(took, results.len() - bad));
            *failed.lock().unwrap() += bad;
        });
        at += exponential(rng, 1.0 / burst_rate);
        // Keep the number of pending tasks bounded by running ahead at most 100 ms.
        if at > start.elapsed().as_secs_f64() + 0.1 {
            tokio::time::sleep_until(start + Duration::from_secs_f64(at - 0.1)).await;
        }
    }
    while tasks.join_next().await.is_some() {}
    let stale = *stale.lock().unwrap();
    Step { stale, ..measured(rate, length, start, &latencies, &lags, &failed) }
}

/// What a load step measured, once all its requests have returned. Server CPU is filled in by
/// the caller, which owns the servers.
fn measured(rate: f64, length: Duration, start: tokio::time::Instant, latencies: &Mutex<Vec<u32>>, lags: &Mutex<Vec<u32>>, failed: &Mutex<usize>) -> Step {
    let elapsed = start.elapsed().as_secs_f64();
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    let completed = latencies.len();
    Step {
        offered_per_s: rate,
        completed_per_s: completed as f64 / elapsed.max(length.as_secs_f64()),
        completed,
        failed: *failed.lock().unwrap(),
        stale: 0,
        latency_ms: percentiles(latencies),
        generator_lag_p99_ms: percentiles(std::mem::take(&mut *lags.lock().unwrap())).p99,
        server_cpu_s: 0.0,
        per_server_cpu_s: 0.0,
    }
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

fn print_table(r: &BenchReport) {
    println!(
        "\nVL2 directory benchmark: {} directory servers x {} worker(s), {} etcd members, {} agents, k = {}, bursts of {}, {} s steps, {} cores, {}, sessions limited to {} requests/s",
        r.servers,
        r.workers_per_server,
        r.etcd_members,
        r.agents,
        r.k,
        r.burst,
        r.step_s,
        r.cores,
        if r.tls { "TLS" } else { "no TLS" },
        r.session_rate
    );
    println!("\n| updates offered/s | acked/s | p50 ms | p99 ms | p99.9 ms | failed | generator lag p99 ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for s in &r.updates {
        println!(
            "| {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {} | {:.1} |",
            s.offered_per_s, s.completed_per_s, s.latency_ms.p50, s.latency_ms.p99, s.latency_ms.p999, s.failed, s.generator_lag_p99_ms
        );
    }
    println!("\n| lookups offered/s | answered/s | per server/s | p50 ms | p99 ms | p99.9 ms | failed | generator lag p99 ms | server requests per CPU-s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &r.lookups {
        println!(
            "| {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {:.2} | {:.0} |",
            s.offered_per_s,
            s.completed_per_s,
            s.completed_per_s / r.servers as f64,
            s.latency_ms.p50,
            s.latency_ms.p99,
            s.latency_ms.p999,
            s.failed,
            s.generator_lag_p99_ms,
            s.per_server_cpu_s
        );
    }
    println!(
        "\nhighest lookup rate with p99 < 10 ms: {:.0}/s ({:.0}/s per directory server)",
        r.max_lookup_rate_p99_under_10ms,
        r.max_lookup_rate_p99_under_10ms / r.servers as f64
    );
}
