//! Traffic: the basic patterns of the foundation (VL2's all-to-all shuffle, permutations, an
//! explicit flow list). Each generator draws from its own random stream.

use crate::error::{bad, Result};
use crate::rng::{below, shuffle, Stream};
use crate::scenario::{WorkloadKind, WorkloadSpec};
use crate::topology::Topology;
use crate::units::{parse_bytes, parse_duration, Time};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start: Time,
}

pub fn generate(w: &WorkloadSpec, topo: &Topology, rng: &mut Stream) -> Result<Vec<FlowSpec>> {
    let n = topo.n_hosts as u32;
    let hosts = w.hosts.unwrap_or(n);
    if hosts > n {
        return Err(bad("workload.hosts", format!("the fabric has only {n} hosts, asked for {hosts}")));
    }
    let jitter = w.start_jitter.map_or(0, |d| d.0);
    let bytes = w.bytes.map_or(0, |b| b.0);
    let mut flows = match w.kind {
        WorkloadKind::Shuffle => {
            let mut v = Vec::with_capacity((hosts * (hosts - 1)) as usize);
            for s in 0..hosts {
                for d in 0..hosts {
                    if s != d {
                        v.push(FlowSpec { src: s, dst: d, bytes, start: 0 });
                    }
                }
            }
            v
        }
        WorkloadKind::Permutation => {
            let pods: Vec<u32> = (0..hosts).map(|h| topo.nodes[h as usize].pod).collect();
            let dst = permutation(hosts, if w.cross_pod == Some(true) { Some(&pods) } else { None }, rng)?;
            (0..hosts).map(|s| FlowSpec { src: s, dst: dst[s as usize], bytes, start: 0 }).collect()
        }
        WorkloadKind::Flows => return read_flow_file(w.file.as_deref().unwrap_or_default(), n),
    };
    if jitter > 0 {
        for f in &mut flows {
            f.start = below(rng, jitter + 1);
        }
    }
    Ok(flows)
}

/// A random permutation without fixed points; with `pods`, no host maps into its own pod.
/// Starts from a shuffled order and repairs conflicts by swapping targets with random partners
/// (a swap is taken only if it leaves both positions valid), which keeps the result uniform
/// enough for load-balancing experiments and always terminates when a solution exists.
fn permutation(n: u32, pods: Option<&[u32]>, rng: &mut Stream) -> Result<Vec<u32>> {
    let ok = |s: u32, d: u32| s != d && pods.is_none_or(|p| p[s as usize] != p[d as usize]);
    if let Some(p) = pods {
        let mut count = std::collections::BTreeMap::new();
        for &x in p {
            *count.entry(x).or_insert(0u32) += 1;
        }
        if count.values().any(|&c| 2 * c > n) {
            return Err(bad("workload.cross_pod", "one pod holds more than half the hosts, so a cross-pod permutation is impossible"));
        }
    }
    let mut dst: Vec<u32> = (0..n).collect();
    shuffle(rng, &mut dst);
    for _round in 0..1000 {
        let mut clean = true;
        for i in 0..n {
            if ok(i, dst[i as usize]) {
                continue;
            }
            clean = false;
            for _ in 0..4 * n {
                let j = below(rng, n as u64) as u32;
                if ok(i, dst[j as usize]) && ok(j, dst[i as usize]) {
                    dst.swap(i as usize, j as usize);
                    break;
                }
            }
        }
        if clean {
            return Ok(dst);
        }
    }
    Err(bad("workload", "could not find a valid permutation; use more hosts"))
}

/// CSV with header `src,dst,bytes,start`; sizes and times may carry units (`64KB`, `1ms`),
/// bare times are seconds.
fn read_flow_file(path: &str, n_hosts: u32) -> Result<Vec<FlowSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| bad("workload.file", format!("cannot read `{path}`: {e}")))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header: Vec<String> = match lines.next() {
        Some((_, h)) => h.split(',').map(|c| c.trim().to_lowercase()).collect(),
        None => return Err(bad(format!("{path}"), "is empty; expected a header line `src,dst,bytes,start`")),
    };
    if header != ["src", "dst", "bytes", "start"] {
        return Err(bad(format!("{path}:1"), format!("header must be `src,dst,bytes,start`, got `{}`", header.join(","))));
    }
    let mut flows = Vec::new();
    for (i, line) in lines {
        let at = format!("{path}:{}", i + 1);
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() != 4 {
            return Err(bad(at, format!("expected 4 columns (src,dst,bytes,start), got {}", cols.len())));
        }
        let host = |c: &str, what: &str| -> Result<u32> {
            let h: u32 = c.trim_start_matches('h').parse().map_err(|_| bad(&at, format!("{what} `{c}` is not a host number (0-based, or `h17`)")))?;
            if h >= n_hosts {
                return Err(bad(&at, format!("{what} host {h} does not exist; the fabric has hosts 0..{}", n_hosts - 1)));
            }
            Ok(h)
        };
        let (src, dst) = (host(cols[0], "src")?, host(cols[1], "dst")?);
        if src == dst {
            return Err(bad(&at, format!("src and dst are both host {src}")));
        }
        let bytes = parse_bytes(cols[2]).map_err(|e| bad(&at, format!("bytes: {e}")))?;
        let start = parse_duration(cols[3]).map_err(|e| bad(&at, format!("start: {e}")))?;
        flows.push(FlowSpec { src, dst, bytes, start });
    }
    if flows.is_empty() {
        return Err(bad(path, "holds no flows"));
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Streams;
    use crate::topology::fat_tree::{build, FatTree};
    use crate::units::Rate;

    #[test]
    fn cross_pod_permutation_is_a_bijection_leaving_every_pod() {
        let t = build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let pods: Vec<u32> = (0..128).map(|h| t.nodes[h].pod).collect();
        let d = permutation(128, Some(&pods), &mut Streams::new(5).stream()).unwrap();
        let mut seen = d.clone();
        seen.sort();
        assert_eq!(seen, (0..128).collect::<Vec<_>>());
        assert!((0..128).all(|s| pods[s] != pods[d[s] as usize]));
    }

    #[test]
    fn flow_file_errors_name_the_line() {
        let dir = std::env::temp_dir().join(format!("clos-flows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.csv");
        std::fs::write(&f, "src,dst,bytes,start\n0,1,10KB,0\n0,99,1,0\n").unwrap();
        let e = read_flow_file(f.to_str().unwrap(), 4).unwrap_err().to_string();
        assert!(e.contains("f.csv:3") && e.contains("host 99 does not exist"), "{e}");
        std::fs::write(&f, "src,dst,bytes,start\n0,1,10KB,1ms\n").unwrap();
        assert_eq!(read_flow_file(f.to_str().unwrap(), 4).unwrap()[0], FlowSpec { src: 0, dst: 1, bytes: 10_000, start: 1_000_000_000 });
    }
}
