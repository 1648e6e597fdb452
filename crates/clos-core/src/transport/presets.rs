//! Named TCP presets (`transport.preset`): the defaults of the stacks that papers and other
//! simulators used, each value with its source, so that a scenario can say "the hosts run
//! Linux 2.6" in one line. A preset fills the `[transport]` fields the scenario leaves out;
//! fields it writes itself win. docs/model.md lists the presets and what none of them models.
//!
//! Sources (read in their code, see docs/model.md, "TCP presets"):
//! - Linux: `include/net/tcp.h` (`TCP_INIT_CWND 10`, RFC 6928; `TCP_RTO_MIN` HZ/5 = 200 ms;
//!   `TCP_DELACK_MIN` HZ/25 = 40 ms), `Documentation/networking/ip-sysctl.rst` (`tcp_rmem`'s
//!   maximum up to 6 MB, `tcp_reordering` 3 adapting up to `tcp_max_reordering` 300, SACK on),
//!   `net/ipv4/tcp_dctcp.c` (`dctcp_shift_g` 4: g = 1/16; `dctcp_alpha_on_init` 1024: alpha = 1),
//!   `net/ipv4/tcp_input.c` (`tcp_cwnd_reduction`: PRR, since 3.2, with its own bound below
//!   ssthresh since 5.19; `tcp_timeout_mark_lost`; `tcp_incr_quickack` and
//!   `tcp_grow_window`, which ACK every segment while the receive window opens: measured on
//!   Linux 6.18 between two network namespaces, a connection's first 21 segments were each
//!   ACKed at once, docs/validation.md; `tcp_measure_rcv_mss` and `tcp_cleanup_rbuf`, which ACK
//!   a segment shorter than the MSS when the application reads it).
//!   `net/ipv4/tcp_output.c` (`tcp_xmit_retransmit_queue` restarts the RTO when it resends the
//!   first hole, in 2.6 as today; `tcp_cwnd_validate`, which `tcp_is_cwnd_limited` in
//!   `include/net/tcp.h` reads before Reno's and CUBIC's `cong_avoid` grow the window),
//!   `net/ipv4/tcp_cong.c` (`tcp_reno_ssthresh`: half the window), `net/ipv4/tcp_input.c`'s
//!   `tcp_enter_loss` (ssthresh cut once per window of data; the window in flight plus one),
//!   `net/ipv4/tcp_cubic.c` (`hystart = 1`).
//! - Linux 2.6 (DRILL's stack, through the Network Simulation Cradle): the same timers, and the
//!   RFC 3390 initial window (`tcp_init_cwnd`: 3 segments at an MSS of 1,460 B); no PRR (3.2).
//!   Its quickack span is computed, not measured: `tcp_select_initial_window` opens at 4 x MSS
//!   (5,840 B) and `tcp_grow_window` adds 2 x MSS per segment up to `tcp_space` (`tcp_rmem`'s
//!   87,380 B less a quarter, `tcp_adv_win_scale` 2: 65,535 B), so segments 1 to 21 grow it.
//!   2.6.26's `tcp_reno_ssthresh` halves the window and its `tcp_enter_loss` cuts ssthresh once
//!   per window of data, as today. Its `tcp_slow_start` grows the window by one segment per
//!   ACK (`tcp_abc` 0 by default: RFC 3465's byte counting came off by default in 2.6.19), and
//!   its `tcp_cubic.c` (version 2.2, read in NSC 0.5.2's copy of 2.6.26) has no floor on the
//!   growth while no W_max is known, which later kernels added, but resets at a timeout
//!   (`bictcp_state`). NSC 0.5.2 builds 2.6.26 with `CONFIG_DEFAULT_TCP_CONG "cubic"`
//!   (`linux-2.6.26/include/linux/autoconf.h`, "taken from 2.6.26 defconfig"), so its hosts run
//!   CUBIC unless told otherwise: `transport.kind = "cubic"` with this preset; the same file
//!   sets `CONFIG_HZ 1000`, so its timers run on a 1 ms tick (`timer_tick`). Its
//!   `tcp_is_cwnd_limited` grows the window only while what is in flight fills it (no GSO in
//!   NSC), stricter than `grow_when_limited`: not modelled, and a sender that its own NIC never
//!   holds back is limited by its window anyway.
//! - htsim (csg-htsim `sim/tcp.cpp`): NewReno without SACK, `_cwnd = 10*_mss`, `_ssthresh =
//!   100*_mss` (1,500 B packets), RTO at least 250 ms, an ACK for every packet.
//! - ns-3 (3.4x `tcp-socket.cc`, `tcp-socket-base.cc`): `InitialCwnd` 10, `DelAckCount` 2,
//!   `DelAckTimeout` 200 ms, `MinRto` 1 s, `Sack` on, `RcvBufSize` 131,072 B, `TcpPrrRecovery`
//!   as `tcp-l4-protocol.cc`'s default `RecoveryType`; `tcp-dctcp.cc`'s
//!   `GetSsThresh` ((1 - alpha/2) x cwnd), which `TcpSocketBase` calls on entering recovery and
//!   on a timeout as well as on ECE, where RFC 8257 §3.5 and Linux halve.

use crate::error::{bad, Result};
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Value};

/// (name, what it is, [(field, value)]).
type Preset = (&'static str, &'static str, fn() -> Value);

pub const PRESETS: &[Preset] = &[
    ("linux", "a current Linux host: IW10, RTO_min 200 ms, delayed ACKs (2 segments, 40 ms), SACK, PRR with Linux's bound, ssthresh from the window, growth only while the window limits, reordering adaptation with undo, 6 MB receive window, quick ACKs for the first 21 segments, RACK-TLP loss detection, HyStart and Linux's window growth with CUBIC", || {
        json!({"initial_window": 10, "rto_min": "200ms", "delayed_ack": 2, "delayed_ack_timeout": "40ms", "quickack": 21, "push_ack": true, "sack": true, "prr": true, "prr_bound": "linux", "ssthresh_from": "window", "grow_when_limited": true, "hystart": true, "cubic_growth": "linux", "rack": true, "tlp": true, "rto_estimator": "linux", "handshake_rtt": true, "resend_restarts_rto": true,
               "adaptive_dupack_threshold": true, "max_dupack_threshold": 300, "rwnd": "6MB", "dctcp_g": 0.0625, "dctcp_alpha": 1.0})
    }),
    ("linux-2.6", "Linux 2.6 before IW10 (DRILL's NSC stack): IW3, RTO_min 200 ms, delayed ACKs (2 segments, 40 ms), SACK, ssthresh from the window, slow start by one segment per ACK, 2.6.26's CUBIC, timers on NSC's 1 ms tick, reordering adaptation with undo, quick ACKs for the first 21 segments", || {
        json!({"initial_window": 3, "rto_min": "200ms", "delayed_ack": 2, "delayed_ack_timeout": "40ms", "quickack": 21, "push_ack": true, "sack": true, "ssthresh_from": "window",
               "slow_start": "per_ack", "cubic_growth": "linux-2.6", "timer_tick": "1ms",
               "rto_estimator": "linux", "handshake_rtt": true, "resend_restarts_rto": true, "adaptive_dupack_threshold": true, "max_dupack_threshold": 300, "rwnd": "6MB"})
    }),
    ("htsim", "htsim's TcpSrc: NewReno without SACK, IW10, initial ssthresh 100 packets, RTO_min 250 ms, no delayed ACKs", || {
        json!({"initial_window": 10, "initial_ssthresh": "150KB", "rto_min": "250ms", "delayed_ack": 1, "sack": false,
               "adaptive_dupack_threshold": false})
    }),
    ("ns3", "ns-3's TcpSocket defaults: IW10, RTO_min 1 s, delayed ACKs (2 segments, 200 ms), SACK, PRR, 128 KiB receive buffer; its DCTCP cuts by alpha/2 on a loss too", || {
        json!({"initial_window": 10, "rto_min": "1s", "delayed_ack": 2, "delayed_ack_timeout": "200ms", "sack": true, "prr": true,
               "rwnd": 131072, "adaptive_dupack_threshold": false, "dctcp_loss": "alpha"})
    }),
];

/// `transport.preset` in the scenario's JSON Schema: one of the presets' names, each described.
pub fn schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<Value> = PRESETS.iter().map(|(name, what, _)| json!({"const": name, "description": what})).collect();
    json_schema!({"type": "string", "oneOf": names})
}

/// Fill the `[transport]` table of a scenario (as JSON) from its `preset`, if it names one.
pub fn apply(scenario: &mut Value) -> Result<()> {
    let Some(transport) = scenario.get_mut("transport").and_then(Value::as_object_mut) else { return Ok(()) };
    let Some(name) = transport.get("preset") else { return Ok(()) };
    let names = || PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ");
    let Some(name) = name.as_str() else {
        return Err(bad("transport.preset", format!("expected a preset's name, one of {}", names())));
    };
    let Some((_, _, fields)) = PRESETS.iter().find(|p| p.0 == name) else {
        return Err(bad("transport.preset", format!("unknown preset \"{name}\"; the presets are {}", names())));
    };
    if let Value::Object(fields) = fields() {
        for (key, value) in fields {
            transport.entry(key).or_insert(value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn transport(toml_transport: &str) -> crate::scenario::TransportSpec {
        let json = format!(
            r#"{{"topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1}}, "transport": {toml_transport}, "workload": {{"kind": "permutation", "bytes": 1000}}}}"#
        );
        Scenario::from_json(&json).map(|s| s.transport).map_err(|e| e.to_string()).unwrap()
    }

    #[test]
    fn a_preset_fills_what_the_scenario_leaves_out() {
        let t = transport(r#"{"preset": "linux-2.6", "rto_min": "10ms"}"#);
        assert_eq!((t.initial_window, t.rto_min.0, t.delayed_ack, t.delayed_ack_timeout.0), (3, 10_000_000_000, 2, 40_000_000_000));
        assert!(t.sack && t.adaptive_dupack_threshold && t.push_ack);
        assert_eq!(t.quickack, 21);
        let h = transport(r#"{"preset": "htsim"}"#);
        assert_eq!((h.sack, h.initial_ssthresh.map(|b| b.0), h.rto_min.0), (false, Some(150_000), 250_000_000_000));
        assert_eq!(h.preset.as_deref(), Some("htsim"));
    }

    #[test]
    fn an_unknown_preset_is_named_with_the_choices() {
        let json = r#"{"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1}, "transport": {"preset": "bsd"}, "workload": {"kind": "permutation", "bytes": 1000}}"#;
        let e = Scenario::from_json(json).unwrap_err().to_string();
        assert!(e.starts_with("transport.preset: unknown preset \"bsd\"") && e.contains("linux, linux-2.6, htsim, ns3"), "{e}");
    }
}
