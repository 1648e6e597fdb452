//! The TCP sender: NewReno congestion control (RFC 5681) with SACK-based loss recovery in the
//! style of RFC 6675, an RFC 6298 retransmission timer, and DCTCP (RFC 8257) as an option.
//!
//! Loss recovery keeps a scoreboard of SACKed segments. A hole is deemed lost when at least
//! `dupack_threshold` SACKed segments lie above it (RFC 6675 IsLost, counted in segments);
//! "pipe" counts segments in flight: outstanding, not SACKed, not lost, plus retransmissions of
//! lost holes. Recovery starts on `dupack_threshold` duplicate ACKs or when the first hole is
//! deemed lost, halves the window once per window of data (NewReno's recovery point), and
//! retransmits lost holes before new data. A retransmission timeout makes every outstanding hole
//! lost and restarts from a one-segment window in slow start. Round-trip samples come from echoed
//! send times (RFC 7323 timestamps), so retransmitted segments give valid samples.
//!
//! With `TcpParams::rack`, RACK (RFC 8985 §6.2) also deems lost what was sent before a segment
//! now delivered: in recovery every hole below the highest SACKed segment (Linux's reordering
//! window there is zero), a retransmission once a later retransmission or new data sent after
//! it is delivered, every original sent before a retransmission now delivered (`RackLog`, also
//! after a timeout; a delivery sooner than the least round trip proves nothing, as in Linux's
//! `tcp_rack_advance`), and outside recovery a hole below SACKed data a quarter of the least
//! round trip after the ACK that reported the data, plus Linux's 2 ms timer floor (the
//! reordering timer, `rack_at`). As Linux's scoreboard, the log remembers a retransmission
//! until it is delivered or found lost, across recoveries: a recovery that starts while an
//! earlier one's retransmissions are on their way does not send them again (nor take their
//! ACKs for proof that a retransmission was spurious). After a timeout, what was sent within
//! the latest round trip stays in flight (`tcp_timeout_mark_lost`), from each segment's send
//! time, which the log keeps while RACK is on.
//!
//! With `TcpParams::tlp`, a tail loss probe (RFC 8985 §7, Linux's `tcp_schedule_loss_probe`):
//! outside recovery, when nothing has been acknowledged for two smoothed round trips plus 2 ms
//! (plus `rto_min` with one segment out, for its delayed ACK), and before the RTO, the flow
//! sends one new segment, or resends its highest, so that a lost tail draws SACKs instead of
//! waiting for the timer (`probe_at`). An ACK for a resent probe that the probe itself drew
//! shows it repaired a loss, and the window is halved once (`tcp_process_tlp_ack`).
//!
//! The PLTS host agent (seed 002 names "an agent which dynamically adjusts the threshold of
//! duplicate acknowledgement"; its design is in the half of the paper we lack) is modelled as
//! follows, when `TcpParams::adaptive_dupthresh` is set: a fast retransmission is detected as
//! spurious when the ACK that fills the retransmitted hole echoes a send time earlier than the
//! retransmission (the Eifel algorithm, RFC 3522: the original arrived, merely late). The
//! window reduction is then undone (RFC 4015) and the flow's duplicate-ACK threshold is raised
//! to one more than the number of segments SACKed above the hole when recovery started (the
//! reordering extent just observed, as RR-TCP and Linux's tcp_reordering do), up to the cap.

use super::cubic::Cubic;
use super::hystart::HyStart;
use super::sack::RangeSet;
use super::{DctcpLoss, PrrBound, RtoEstimator, SlowStart, SsthreshFrom, TcpParams};
use crate::packet::SackBlocks;
use crate::units::{Time, PS_PER_S};
use std::collections::VecDeque;

/// Linux's least timeout for its RACK and loss-probe timers (`TCP_TIMEOUT_MIN_US`, 2 ms), added
/// to each (`tcp_rack_reo_timeout`, `tcp_schedule_loss_probe`). The kernel then rounds up to its
/// clock tick (4 ms at HZ=250), which `TcpParams::timer_tick` models.
pub const TIMEOUT_MIN: Time = 2 * crate::units::PS_PER_MS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    None,
    /// Fast recovery after duplicate ACKs: window held at ssthresh.
    Fast,
    /// After a timeout: slow start from one segment while lost holes are resent.
    Timeout,
}

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Fast retransmissions found spurious (Eifel), with the adaptive agent on.
    pub spurious: u64,
    /// Window reductions for a full host queue (`[host] queue`).
    pub local_congestion: u64,
    /// Tail loss probes sent (`transport.tlp`; Linux's `TCPLossProbes`).
    pub probes: u64,
}

#[derive(Clone, Debug)]
pub struct Sender {
    bytes: u64,
    mss: u64,
    /// Segments in the flow.
    pub total: u32,
    /// Oldest unacknowledged segment.
    pub una: u32,
    /// Next new segment to send.
    pub nxt: u32,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// The receiver's advertised window, bytes (`transport.rwnd`).
    rwnd: u64,
    ssthresh: u64,
    ca_credit: u64,
    dupacks: u32,
    sacked: RangeSet,
    recovery: Recovery,
    /// NewReno recovery point: no new window reduction for losses below it.
    recover: u32,
    /// Next hole to consider for retransmission (RFC 6675 HighRxt).
    high_rxt: u32,
    /// Holes below this are deemed lost.
    lost_limit: u32,
    /// RFC 6675 (4.3): the first lost segment goes out on entering recovery, whatever the window.
    resend_first: bool,
    srtt: Option<Time>,
    rttvar: Time,
    /// Linux's estimator's state (`transport.rto_estimator = "linux"`; `None`: RFC 6298).
    linux_rtt: Option<Box<LinuxRtt>>,
    backoff: u32,
    /// DCTCP: estimate of the fraction of marked bytes.
    pub alpha: f64,
    obs_end: u32,
    obs_acked: u64,
    obs_marked: u64,
    cwr_end: u32,
    /// DCTCP with `transport.dctcp_loss = "alpha"`: a loss cuts the window as a mark does.
    loss_by_alpha: bool,
    /// A loss halves the window rather than the flight (`transport.ssthresh_from = "window"`).
    halve_window: bool,
    /// The most segments one ACK grows the window by in slow start: 2 (RFC 3465's L), or 1
    /// (`transport.slow_start = "per_ack"`).
    ss_segments: u8,
    /// Whether the window limits the sender (`transport.grow_when_limited`; `None`: it grows
    /// on every ACK).
    usage: Option<CwndUsage>,
    /// CUBIC's state (`transport.kind = "cubic"`); `None`: Reno's increase and decrease.
    cubic: Option<Box<Cubic>>,
    /// Linux's hybrid slow start (`transport.hystart` with CUBIC); `None`: off.
    hystart: Option<Box<HyStart>>,
    /// Proportional rate reduction (RFC 6937) in this recovery: segments delivered since it
    /// began, the flight when it began (RecoverFS), and `nxt` and the retransmissions then (what
    /// it has sent since, prr_out, is read from them rather than counted at every send).
    prr_delivered: u32,
    recover_fs: u32,
    prr_nxt: u32,
    prr_retransmits: u64,
    /// This flow's duplicate-ACK threshold (raised by the PLTS agent).
    pub dupthresh: u32,
    /// Eifel bookkeeping for the last fast recovery: when it started, the hole, the SACKed
    /// segments above it, and the window to restore if it proves spurious.
    eifel: Option<Eifel>,
    /// RACK's record of the retransmissions still on their way (`transport.rack`; `None`: off),
    /// kept across recoveries and cleared by a timeout.
    rack: Option<Box<RackLog>>,
    /// Retransmissions RACK found lost again and not yet resent (`RackLog::lost`'s length).
    relost: u32,
    /// When RACK's reordering timer deems the hole below SACKed data lost outside recovery
    /// (`transport.rack`; 0: not armed).
    pub rack_at: Time,
    /// The least round trip sampled (RACK's reordering window is a quarter of it).
    min_rtt: Time,
    /// The round trip of the latest ACK (Linux's `rack.rtt_us`): after a timeout, what was sent
    /// more recently is not deemed lost yet.
    rack_rtt: Time,
    /// When the tail loss probe is due (`transport.tlp`; 0: not armed).
    pub probe_at: Time,
    /// The probe's episode: `nxt` after it was sent (0: none), and when it was sent if it was a
    /// retransmission (0: new data).
    tlp_high: u32,
    tlp_resent_at: Time,
    pub stats: SenderStats,
}

/// What RACK orders by send time (RFC 8985 §6.2 applies to retransmissions as to originals:
/// one sent before a segment now delivered is lost), as Linux keeps each segment's send time.
#[derive(Clone, Debug, Default)]
struct RackLog {
    /// Each retransmission still outstanding, in the order sent.
    sent: Vec<Resent>,
    /// Retransmissions found lost, to send again before any other hole, lowest first.
    lost: Vec<u32>,
    /// When each segment from `first` up to `nxt` was first sent (originals leave in order).
    first: u32,
    originals: VecDeque<Time>,
}

impl RackLog {
    /// Everything below `una` is acknowledged: its send times go.
    #[inline]
    fn acked(&mut self, una: u32) {
        let n = (una.saturating_sub(self.first) as usize).min(self.originals.len());
        self.originals.drain(..n);
        self.first += n as u32;
    }
}

/// A retransmission on its way.
#[derive(Clone, Copy, Debug)]
struct Resent {
    seg: u32,
    /// `nxt` when it was sent: a segment at or above that was first sent after it.
    nxt: u32,
    at: Time,
}

/// Linux's round-trip estimator (`tcp_rtt_estimator`): the mean deviation x4 (`mdev_us`), its
/// largest in the current round trip (`mdev_max_us`), and where that round trip ends
/// (`rtt_seq`). `Sender::rttvar` holds Linux's `rttvar_us`.
#[derive(Clone, Debug, Default)]
struct LinuxRtt {
    mdev: Time,
    mdev_max: Time,
    rtt_seq: u32,
}

/// Linux's `tcp_cwnd_validate`: whether the window stopped a send in the current window of
/// data (`is_cwnd_limited`), and if not the most segments outstanding in it
/// (`max_packets_out`); a new window of data starts once SND.UNA reaches `until`
/// (`cwnd_usage_seq`).
#[derive(Clone, Copy, Debug, Default)]
struct CwndUsage {
    limited: bool,
    max_out: u32,
    until: u32,
}

#[derive(Clone, Copy, Debug)]
struct Eifel {
    start: Time,
    hole: u32,
    sacked_above: u32,
    cwnd: u64,
    ssthresh: u64,
    /// The cut was undone while recovery went on (Linux's `tcp_try_undo_partial`).
    undone: bool,
}

impl Sender {
    /// Start loading the SACKed ranges (`World::prefetch_ahead`).
    #[inline]
    pub fn prefetch_ranges(&self) {
        self.sacked.prefetch();
    }

    /// A sender of `bytes` in segments of `mss` bytes (the flow's: `TcpParams::flow_mss`).
    pub fn new(bytes: u64, mss: u32, p: &TcpParams) -> Sender {
        let mss = mss as u64;
        let total = bytes.div_ceil(mss).max(1) as u32;
        Sender {
            bytes,
            mss,
            total,
            una: 0,
            nxt: 0,
            cwnd: p.initial_window as u64 * mss,
            rwnd: p.rwnd,
            ssthresh: p.initial_ssthresh,
            ca_credit: 0,
            dupacks: 0,
            sacked: RangeSet::default(),
            recovery: Recovery::None,
            recover: 0,
            high_rxt: 0,
            lost_limit: 0,
            resend_first: false,
            srtt: None,
            rttvar: 0,
            linux_rtt: (p.rto_estimator == RtoEstimator::Linux).then(Box::default),
            backoff: 0,
            alpha: p.dctcp_alpha, // RFC 8257 §4.2 recommends starting at 1 (conservative)
            obs_end: 0,
            obs_acked: 0,
            obs_marked: 0,
            cwr_end: 0,
            loss_by_alpha: p.dctcp_g.is_some() && p.dctcp_loss == DctcpLoss::Alpha,
            halve_window: p.ssthresh_from == SsthreshFrom::Window,
            ss_segments: if p.slow_start == SlowStart::PerAck { 1 } else { 2 },
            usage: p.grow_when_limited.then(CwndUsage::default),
            cubic: p.cubic.then(|| Box::new(Cubic::new(p.cubic_growth))),
            hystart: (p.cubic && p.hystart).then(Box::default),
            prr_delivered: 0,
            recover_fs: 0,
            prr_nxt: 0,
            prr_retransmits: 0,
            dupthresh: p.dupack_threshold,
            eifel: None,
            rack: p.rack.then(Box::default),
            rack_at: 0,
            relost: 0,
            min_rtt: Time::MAX,
            rack_rtt: 0,
            probe_at: 0,
            tlp_high: 0,
            tlp_resent_at: 0,
            stats: SenderStats::default(),
        }
    }

    /// Payload bytes of segment `seg` (the last one may be short; an empty flow sends one
    /// zero-byte segment so that it still completes).
    /// Bytes of a full segment.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// Where the latest window reduction ends (`nxt` when it began): the packet trace reads
    /// its moves to set CWR (`metrics/trace.rs`).
    pub fn cwr_end(&self) -> u32 {
        self.cwr_end
    }

    pub fn payload(&self, seg: u32) -> u32 {
        let start = seg as u64 * self.mss;
        self.bytes.saturating_sub(start).min(self.mss) as u32
    }

    fn bytes_between(&self, a: u32, b: u32) -> u64 {
        (b as u64 * self.mss).min(self.bytes) - (a as u64 * self.mss).min(self.bytes)
    }

    pub fn done(&self) -> bool {
        self.una >= self.total
    }

    pub fn outstanding(&self) -> bool {
        self.una < self.nxt
    }

    /// Segments in flight (RFC 6675 pipe, counted in segments).
    #[inline(always)]
    pub fn pipe(&self) -> u32 {
        let sacked = self.sacked.count_below(self.nxt);
        let lost_end = self.lost_limit.clamp(self.una, self.nxt);
        let lost = (lost_end - self.una) - self.sacked.count_below(lost_end);
        let rx_end = self.high_rxt.clamp(self.una, lost_end);
        let resent = (rx_end - self.una) - self.sacked.count_below(rx_end);
        let pipe = (self.nxt - self.una) - sacked - lost + resent;
        match self.rack.as_deref() {
            Some(r) if !(r.sent.is_empty() && r.lost.is_empty()) => self.rack_pipe(r, pipe, rx_end, lost_end),
            _ => pipe,
        }
    }

    /// RFC 6675's pipe counts a lost hole in flight once it is resent, below `rx_end`. RACK's
    /// log knows better: a hole an earlier recovery resent (or a timeout left, sent too
    /// recently to be lost) is in flight above `rx_end` too, and a retransmission found lost
    /// again is not, wherever it lies.
    #[cold]
    #[inline(never)]
    fn rack_pipe(&self, r: &RackLog, pipe: u32, rx_end: u32, lost_end: u32) -> u32 {
        let ahead = r.sent.iter().filter(|x| (rx_end..lost_end).contains(&x.seg) && !self.sacked.contains(x.seg)).count();
        let gone = r.lost.iter().filter(|&&s| !(lost_end > s && s >= rx_end)).count();
        pipe + ahead as u32 - gone as u32
    }

    /// Current retransmission timeout (RFC 6298 §2, with exponential backoff, §5.5); under
    /// Linux's estimator, SRTT + RTTVAR, whose RTTVAR is at least `rto_min` already.
    pub fn rto(&self, p: &TcpParams) -> Time {
        let base = match (self.srtt, &self.linux_rtt) {
            (Some(srtt), Some(_)) => srtt + self.rttvar,
            (Some(srtt), None) => (srtt + 4 * self.rttvar).max(p.rto_min),
            (None, _) => p.rto_min,
        };
        base.saturating_mul(1 << self.backoff.min(16)).min(p.rto_max)
    }

    /// A round-trip sample `r` from an ACK of everything below `cum`.
    fn rtt_sample(&mut self, r: Time, cum: u32, rto_min: Time) {
        if self.linux_rtt.is_some() {
            return self.linux_rtt_sample(r, cum.max(self.una), rto_min);
        }
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// Linux's `tcp_rtt_estimator`: SRTT as RFC 6298; the mean deviation kept x4 (`mdev`),
    /// with a gain of 1/32 instead of 1/4 for samples below SRTT (so that a falling round trip
    /// does not shrink the RTO fast); RTTVAR follows the largest deviation of each round trip
    /// (`mdev_max`, reset to `rto_min` once per round trip, so RTTVAR is never below it) and
    /// decays toward it by a quarter per round trip.
    #[cold]
    #[inline(never)]
    fn linux_rtt_sample(&mut self, m: Time, una: u32, rto_min: Time) {
        let nxt = self.nxt;
        let l = self.linux_rtt.as_deref_mut().expect("Linux's estimator");
        let Some(srtt) = self.srtt else {
            self.srtt = Some(m.max(1));
            l.mdev = 2 * m;
            self.rttvar = l.mdev.max(rto_min);
            l.mdev_max = self.rttvar;
            l.rtt_seq = nxt;
            return;
        };
        let err = m as i128 - srtt as i128;
        self.srtt = Some(((srtt as i128 + err / 8) as Time).max(1));
        let mut d = err.abs() - (l.mdev / 4) as i128;
        if err < 0 && d > 0 {
            d /= 8;
        }
        l.mdev = (l.mdev as i128 + d) as Time;
        if l.mdev > l.mdev_max {
            l.mdev_max = l.mdev;
            self.rttvar = self.rttvar.max(l.mdev_max);
        }
        if una > l.rtt_seq {
            if l.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - l.mdev_max) / 4;
            }
            l.rtt_seq = nxt;
            l.mdev_max = rto_min;
        }
    }

    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }

    /// Linux's pacing rate, bytes per second (`tcp_update_pacing_rate`): the window (or the
    /// flight, if larger) per smoothed round trip, times 2 while the window is under half of
    /// ssthresh (`tcp_pacing_ss_ratio`, 200%) and 1.2 after (`tcp_pacing_ca_ratio`); `None`
    /// before any round-trip sample (the kernel's is then unlimited).
    pub fn pacing_rate(&self) -> Option<f64> {
        let srtt = self.srtt.filter(|&t| t > 0)?;
        let ratio = if self.cwnd < self.ssthresh / 2 { 2.0 } else { 1.2 };
        let window = self.cwnd.max((self.nxt - self.una) as u64 * self.mss);
        Some(ratio * window as f64 / (srtt as f64 / PS_PER_S as f64))
    }

    /// The handshake's round trip `rtt` (`transport.handshake_rtt`): the connection's first
    /// sample, taken before any data, as Linux takes it from the SYN-ACK
    /// (`tcp_synack_rtt_meas`), so that its RTO and loss probe follow it from the start.
    pub fn handshake(&mut self, rtt: Time, p: &TcpParams) {
        self.rtt_sample(rtt, self.una, p.rto_min);
        self.min_rtt = self.min_rtt.min(rtt);
    }

    /// This flow is the next message on a persistent connection whose last message `prev` ended
    /// `idle` ago: it keeps the connection's round-trip estimate, ssthresh, window, DCTCP's
    /// alpha and CUBIC's state. After an idle longer than the RTO the window restarts as Linux's
    /// does (`tcp_slow_start_after_idle`, `tcp_cwnd_restart`): ssthresh becomes at least 3/4 of
    /// the window, and the window halves once for each RTO of idle, whole or begun, beyond the
    /// first, but not below the initial window (or what it was, if less); CUBIC begins a new
    /// epoch.
    pub fn resume(&mut self, prev: &Sender, idle: Time, p: &TcpParams) {
        self.srtt = prev.srtt;
        self.rttvar = prev.rttvar;
        self.linux_rtt.clone_from(&prev.linux_rtt);
        self.min_rtt = prev.min_rtt;
        self.alpha = prev.alpha;
        self.cubic.clone_from(&prev.cubic);
        self.hystart.clone_from(&prev.hystart);
        self.ssthresh = prev.ssthresh;
        self.cwnd = prev.cwnd;
        let rto = prev.rto(p);
        if idle <= rto {
            return;
        }
        self.ssthresh = self.ssthresh.max(prev.cwnd / 2 + prev.cwnd / 4);
        let restart = (p.initial_window as u64 * self.mss).min(prev.cwnd);
        let (mut cwnd, mut left) = (prev.cwnd, idle);
        while left > rto && cwnd > restart {
            left -= rto;
            cwnd /= 2;
        }
        self.cwnd = cwnd.max(restart);
        if let Some(c) = self.cubic.as_deref_mut() {
            c.restart();
        }
    }

    /// Process an ACK. Returns true if it acknowledged new data (the caller restarts the timer).
    pub fn on_ack(&mut self, now: Time, cum: u32, sack: &SackBlocks, ece: bool, echo: Time, p: &TcpParams) -> bool {
        let cum = cum.min(self.nxt);
        let rtt = now.saturating_sub(echo);
        self.rtt_sample(rtt, cum, p.rto_min);
        if p.rack {
            self.min_rtt = self.min_rtt.min(rtt);
            self.rack_rtt = rtt;
        }
        // An ACK overtaken by a later one (sprayed ACKs reorder) still carries SACK news, but
        // only above `una`: blocks below it would be counted in pipe against acknowledged data.
        let floor = cum.max(self.una);
        // Without SACK (`transport.sack = false`) the blocks are not there to read.
        let sack: &[(u32, u32)] = if p.sack { sack } else { &[] };
        // RFC 6937's DeliveredData, in segments: newly SACKed plus newly acknowledged, less the
        // SACKed segments the cumulative ACK passes (counted when they were SACKed).
        let mut delivered = 0;
        for &(a, b) in sack {
            let (a, b) = (a.max(floor), b.min(self.nxt));
            if a < b {
                delivered += self.sacked.insert(a, b);
            }
        }
        let advanced = cum > self.una;
        let mut undone = None;
        if let (Some(e), Some(cap)) = (self.eifel, p.adaptive_dupthresh) {
            if cum > e.hole && !e.undone {
                self.eifel = None;
                if echo < e.start && self.recovery == Recovery::Fast {
                    // The original filled the hole: the retransmission was spurious. Undo the
                    // cut, as Linux's `tcp_try_undo_partial`, but stay in recovery: a hole
                    // further up may be really lost, and is repaired now rather than after a
                    // timeout. The window is the flight plus a burst of 3 (`tcp_moderate_cwnd`)
                    // until recovery ends, which decides whether the cut stands.
                    self.stats.spurious += 1;
                    self.dupthresh = self.dupthresh.max(e.sacked_above + 1).min(cap.max(self.dupthresh));
                    undone = Some(e.cwnd);
                    self.eifel = Some(Eifel { undone: true, ..e });
                }
            }
        }
        if advanced {
            let acked = self.bytes_between(self.una, cum);
            delivered += cum - self.una;
            self.una = cum;
            delivered -= self.sacked.remove_below(cum);
            if let Some(r) = self.rack.as_deref_mut() {
                r.acked(cum);
            }
            if self.relost > 0 {
                self.forget_delivered_relost();
            }
            self.dupacks = 0;
            self.backoff = 0;
            self.high_rxt = self.high_rxt.max(cum);
            self.lost_limit = self.lost_limit.max(cum);
            if self.hystart.is_some() {
                self.hystart_ack(now, rtt);
            }
            if p.dctcp_g.is_some() {
                self.obs_acked += acked;
                if ece {
                    self.obs_marked += acked;
                }
            }
            match self.recovery {
                Recovery::Fast if cum >= self.recover => {
                    // RACK's log outlives the recovery: what it resent may still be on its
                    // way, and a recovery that follows must not send it again.
                    self.recovery = Recovery::None;
                    match self.eifel.take() {
                        // Linux's `tcp_try_undo_recovery`: the ACK that ends recovery was sent
                        // for an original, so no retransmission repaired anything: no cut.
                        Some(e) if e.undone && echo < e.start => (self.cwnd, self.ssthresh) = (e.cwnd, e.ssthresh),
                        _ => self.cwnd = self.ssthresh,
                    }
                }
                // Partial ACK: keep recovering (RFC 6675 §5). Without SACK the next hole is the
                // next unacknowledged segment, resent at once (NewReno, RFC 6582 §3.2 step 3).
                Recovery::Fast if !p.sack => {
                    self.lost_limit = self.lost_limit.max(cum + 1);
                    self.high_rxt = cum;
                    self.resend_first = true;
                }
                Recovery::Fast => {}
                Recovery::Timeout => {
                    self.grow(acked, now);
                    if cum >= self.recover {
                        self.recovery = Recovery::None;
                    }
                }
                Recovery::None => self.grow(acked, now),
            }
            if self.tlp_high != 0 && cum >= self.tlp_high {
                self.end_probe(echo);
            }
        } else if cum == self.una && self.outstanding() {
            // RFC 5681 §2: a duplicate ACK repeats the highest cumulative ACK; an older one
            // is reordering on the reverse path, not a sign of loss.
            self.dupacks += 1;
            if !p.sack {
                // Without SACK a duplicate ACK stands for one segment delivered (RFC 6937 §3).
                delivered += 1;
            }
        }
        if let (Some(w), Recovery::Fast) = (undone, self.recovery) {
            self.cwnd = w.min((self.pipe() as u64 + 3) * self.mss).max(self.cwnd);
        }
        if let Some(g) = p.dctcp_g {
            self.dctcp_update(ece, g);
        }
        if self.recovery == Recovery::None && self.outstanding() && self.una >= self.recover {
            let sacked = self.sacked.count_below(self.nxt);
            if self.dupacks >= self.dupthresh || sacked >= self.dupthresh {
                self.start_recovery(now, sacked, p);
            }
        }
        if p.rack {
            self.arm_rack(now, p);
        }
        if self.recovery != Recovery::None {
            // What was lost before this ACK's marking, for Linux's PRR (`prr_ack`).
            let marked = (self.lost_limit, self.relost);
            // RFC 8985's RACK in fast recovery, with the reordering window Linux gives it there
            // while the flow has seen no reordering (`tcp_rack_reo_wnd`: 0): a hole sent
            // before a segment now delivered is lost, so every hole below the highest SACKed
            // segment, however few segments lie above it. RFC 6675 waits for `dupthresh` of them.
            // After a timeout every hole is lost already, and RACK still finds the
            // retransmissions lost again (Linux runs it in the Loss state too).
            let rack = p.rack && self.stats.spurious == 0;
            if let Some(x) = self.sacked.nth_highest(if rack { 1 } else { self.dupthresh }) {
                self.lost_limit = self.lost_limit.max(x);
            }
            if self.rack.is_some() {
                self.rack_lost_retransmissions(now, rack);
            }
            if p.prr && self.recovery == Recovery::Fast && !self.eifel.is_some_and(|e| e.undone) {
                let newly_lost = self.relost > marked.1 || self.sacked.next_gap(marked.0.max(self.una)) < self.lost_limit.min(self.nxt);
                self.prr_ack(delivered, advanced && !newly_lost, p);
            }
        }
        advanced
    }

    /// RFC 6937 §3, on every ACK in fast recovery: while the flight is above ssthresh, send in
    /// proportion to what was delivered (ssthresh / RecoverFS of it); below, grow back toward
    /// ssthresh no faster than slow start (PRR-SSRB: one more than was delivered). The window
    /// is the flight plus what may be sent now. Linux's bound (`transport.prr_bound = "linux"`,
    /// `tcp_cwnd_reduction`) sends no more than was delivered below ssthresh, one more only on an
    /// ACK that advanced SND.UNA and found nothing newly lost (`grow`), takes the window at the
    /// recovery's start for RecoverFS, leaves the window as it was on an ACK that delivered
    /// nothing, and sends at least the first retransmission.
    fn prr_ack(&mut self, delivered: u32, grow: bool, p: &TcpParams) {
        let linux = p.prr_bound == PrrBound::Linux;
        if linux && delivered == 0 {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = self.pipe() as u64;
        let ssthresh = self.ssthresh / self.mss;
        let out = (self.nxt - self.prr_nxt) as u64 + (self.stats.retransmits - self.prr_retransmits);
        let done = self.prr_delivered as u64;
        let mut sndcnt = if pipe > ssthresh {
            (done * ssthresh).div_ceil(self.recover_fs.max(1) as u64).saturating_sub(out)
        } else {
            let more = if linux { grow as u64 } else { 1 };
            (ssthresh - pipe).min(done.saturating_sub(out).max(delivered as u64) + more)
        };
        if linux && out == 0 {
            sndcnt = sndcnt.max(1);
        }
        self.cwnd = (pipe + sndcnt) * self.mss;
    }

    /// HyStart on an ACK that advanced SND.UNA in slow start: where it finds the path full,
    /// slow start ends at the current window.
    #[cold]
    #[inline(never)]
    fn hystart_ack(&mut self, now: Time, rtt: Time) {
        let rate = self.pacing_rate();
        let (una, nxt, cwnd) = (self.una, self.nxt, self.cwnd / self.mss);
        let slow_start = self.cwnd < self.ssthresh;
        if let Some(h) = self.hystart.as_deref_mut() {
            if slow_start && h.on_ack(now, rtt, una, nxt, cwnd, rate) {
                self.ssthresh = self.cwnd;
            }
        }
    }

    /// After a round of sends (`World::pump`), as Linux's `tcp_cwnd_validate` after
    /// `tcp_write_xmit`: the window limited the sender if what is in flight fills it; a round
    /// that sent nothing and was not stopped by the window tells nothing.
    #[inline]
    pub fn cwnd_validate(&mut self, sent: bool) {
        let Some(u) = self.usage else { return };
        let limited = self.pipe() as u64 * self.mss >= self.cwnd;
        let out = self.nxt - self.una;
        if (sent || limited) && (self.una >= u.until || limited || (!u.limited && out > u.max_out)) {
            self.usage = Some(CwndUsage { limited, max_out: out, until: self.nxt });
        }
    }

    /// Whether an ACK may grow the window (Linux's `tcp_is_cwnd_limited`): the window limited
    /// the sender in this window of data, or, in slow start, it is below twice the most
    /// segments outstanding there.
    fn may_grow(&self) -> bool {
        match self.usage {
            None => true,
            Some(u) => u.limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * u.max_out as u64 * self.mss),
        }
    }

    fn grow(&mut self, acked: u64, now: Time) {
        if !self.may_grow() {
            return;
        }
        if self.cwnd < self.ssthresh {
            // Slow start with appropriate byte counting, L = 2 (RFC 3465), or Linux 2.6's one
            // segment per ACK (an ACK of new data acknowledges at least a segment, but for a
            // flow's short last one, after which the window no longer matters).
            self.cwnd += acked.min(self.ss_segments as u64 * self.mss);
        } else if let Some(c) = self.cubic.as_deref_mut() {
            let mss = self.mss as f64;
            let w = c.on_ack(now, self.srtt.unwrap_or(0), self.cwnd as f64 / mss, acked as f64 / mss);
            self.cwnd = (w * mss) as u64;
        } else {
            self.ca_credit += acked;
            if self.ca_credit >= self.cwnd {
                self.ca_credit -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }

    /// RFC 8257 §3.3: once per window of data, fold the marked fraction into alpha; on ECE,
    /// cut the window by alpha/2 at most once per window.
    fn dctcp_update(&mut self, ece: bool, g: f64) {
        if self.una >= self.obs_end && self.obs_acked > 0 {
            let f = self.obs_marked as f64 / self.obs_acked as f64;
            self.alpha = (1.0 - g) * self.alpha + g * f;
            self.obs_acked = 0;
            self.obs_marked = 0;
            self.obs_end = self.nxt;
        }
        if ece && self.una >= self.cwr_end && self.recovery == Recovery::None {
            self.cwnd = ((self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64).max(self.mss);
            self.ssthresh = self.cwnd;
            self.ca_credit = 0;
            self.cwr_end = self.nxt;
        }
    }

    /// The slow-start threshold after a loss: RFC 5681 eq. (4), half the FlightSize (outstanding
    /// data, not pipe), or half the window as Linux (`halve_window`); with `loss_by_alpha`, the
    /// window less alpha/2 of it, as ns-3's DCTCP; under CUBIC, beta x the window (RFC 9438 §4.6).
    fn loss_ssthresh(&mut self) -> u64 {
        let reduced = if let Some(c) = self.cubic.as_deref_mut() {
            (c.on_congestion(self.cwnd as f64 / self.mss as f64) * self.mss as f64) as u64
        } else if self.loss_by_alpha {
            (self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64
        } else if self.halve_window {
            self.cwnd / 2
        } else {
            (self.nxt - self.una) as u64 * self.mss / 2
        };
        reduced.max(2 * self.mss)
    }

    /// RACK on the retransmissions in recovery: one is lost when a segment sent after it has
    /// been delivered, a later retransmission or a segment first sent after it, and so is every
    /// original sent before a retransmission now delivered (the reordering window is zero here,
    /// as for the holes; `mark` false once the flow has seen reordering). A lost retransmission
    /// goes back to be sent again; one found lost that arrives after all is forgotten. As
    /// Linux's `tcp_rack_advance`, a retransmission delivered sooner than the least round trip
    /// after it was sent proves nothing: its original may be what arrived.
    #[cold]
    #[inline(never)]
    fn rack_lost_retransmissions(&mut self, now: Time, mark: bool) {
        self.forget_delivered_relost();
        if !mark {
            return;
        }
        let highest_sacked = self.sacked.nth_highest(1);
        let Some(r) = self.rack.as_deref_mut() else { return };
        let mut later_delivered = false;
        let mut originals_lost = 0;
        for i in (0..r.sent.len()).rev() {
            let x = r.sent[i];
            let delivered = x.seg < self.una || self.sacked.contains(x.seg);
            if delivered {
                r.sent.remove(i);
                if now.saturating_sub(x.at) >= self.min_rtt {
                    later_delivered = true;
                    originals_lost = originals_lost.max(x.nxt);
                }
            } else if later_delivered || highest_sacked.is_some_and(|h| h >= x.nxt) {
                r.sent.remove(i);
                let at = r.lost.partition_point(|&s| s < x.seg);
                r.lost.insert(at, x.seg);
                self.relost += 1;
            }
        }
        self.lost_limit = self.lost_limit.max(originals_lost.min(self.nxt));
    }

    /// RFC 8985 §6.2 outside recovery: a hole below SACKed data is lost once RACK.rtt (the
    /// round trip of the segment just delivered) and the reordering window have passed since the
    /// hole was sent. The window is a quarter of the least round trip (Linux's
    /// `tcp_rack_reo_wnd`). So a hole sent a window or more before the segment just delivered is
    /// lost at once, and recovery starts on this ACK (Linux's `tcp_rack_detect_loss`, then
    /// `tcp_time_to_recover`): the hole of a flight lost whole, once the tail loss probe sent
    /// after it is SACKed. A hole sent about when the delivered segment was (reordering among
    /// segments of one burst) waits for the timer: the window from this ACK, and Linux's timer
    /// floor (`TIMEOUT_MIN`). Fewer than `dupthresh` SACKed segments never start recovery
    /// otherwise, and a hole near a flow's end would wait for the retransmission timer.
    #[cold]
    #[inline(never)]
    fn arm_rack(&mut self, now: Time, p: &TcpParams) {
        let waiting = self.recovery == Recovery::None && self.outstanding() && self.una >= self.recover && !self.sacked.is_empty();
        if !waiting {
            self.rack_at = 0;
            return;
        }
        let reo_wnd = if self.min_rtt == Time::MAX { 0 } else { self.min_rtt / 4 };
        let delivered_sent = now.saturating_sub(self.rack_rtt);
        if self.hole_sent_at().is_some_and(|sent| sent + reo_wnd <= delivered_sent) {
            self.rack_at = 0;
            let sacked = self.sacked.count_below(self.nxt);
            self.start_recovery(now, sacked, p);
        } else if self.rack_at == 0 {
            self.rack_at = p.timer_at(now, reo_wnd + TIMEOUT_MIN);
        }
    }

    /// When the oldest unacknowledged segment was last sent, from RACK's log: its outstanding
    /// retransmission, else its first transmission.
    fn hole_sent_at(&self) -> Option<Time> {
        let r = self.rack.as_deref()?;
        if let Some(x) = r.sent.iter().rev().find(|x| x.seg == self.una) {
            return Some(x.at);
        }
        r.originals.get(self.una.checked_sub(r.first)? as usize).copied()
    }

    /// RACK's reordering timer fired at `now`: the hole is lost, recovery starts, and every hole
    /// below the highest SACKed segment is resent. Whether it acted.
    pub fn on_rack_timer(&mut self, now: Time, p: &TcpParams) -> bool {
        if self.rack_at == 0 || self.rack_at > now {
            return false;
        }
        self.rack_at = 0;
        if self.recovery != Recovery::None || !self.outstanding() || self.sacked.is_empty() {
            return false;
        }
        let sacked = self.sacked.count_below(self.nxt);
        self.start_recovery(now, sacked, p);
        if let Some(x) = self.sacked.nth_highest(1) {
            self.lost_limit = self.lost_limit.max(x);
        }
        // PRR as on an ACK that delivered one segment and marked losses (Linux's
        // `tcp_rack_reo_timeout`): the recovery starts with one retransmission, not a burst.
        if p.prr {
            self.prr_ack(1, false, p);
        }
        true
    }

    /// Arm the tail loss probe at `now` (RFC 8985 §7.2, Linux's `tcp_schedule_loss_probe`): two
    /// smoothed round trips and `TIMEOUT_MIN` on, or `rto_min` on with one segment out (its ACK
    /// may be delayed), and no later than the RTO at `rto_at`. Only a flow out of recovery, with
    /// a round-trip sample and no probe of its own outstanding, probes. Returns `probe_at` (0:
    /// not armed).
    pub fn arm_probe(&mut self, now: Time, rto_at: Time, p: &TcpParams) -> Time {
        let open = self.recovery == Recovery::None && self.outstanding() && self.tlp_high == 0;
        self.probe_at = match (open, self.srtt) {
            (true, Some(srtt)) => {
                let extra = if self.nxt - self.una == 1 { p.rto_min } else { TIMEOUT_MIN };
                p.timer_at(now, 2 * srtt + extra).min(rto_at)
            }
            _ => 0,
        };
        self.probe_at
    }

    /// The probe is due at `now`: what to send, `(segment, is_retransmission)`. One new segment
    /// if the receiver's window takes it, whatever the congestion window says, else the highest
    /// segment not SACKed again (`tcp_send_loss_probe`). None if the flow no longer probes.
    #[cold]
    #[inline(never)]
    pub fn probe(&mut self, now: Time) -> Option<(u32, bool)> {
        self.probe_at = 0;
        if self.recovery != Recovery::None || !self.outstanding() || self.tlp_high != 0 {
            return None;
        }
        let sent = if self.nxt < self.total && ((self.nxt - self.una) as u64 + 1) * self.mss <= self.rwnd {
            (self.send_new(now), false)
        } else {
            let mut seg = self.nxt - 1;
            while seg > self.una && self.sacked.contains(seg) {
                seg -= 1;
            }
            self.stats.retransmits += 1;
            self.tlp_resent_at = now;
            (seg, true)
        };
        self.tlp_high = self.nxt;
        self.stats.probes += 1;
        Some(sent)
    }

    /// The probe's episode ends once everything sent up to it is acknowledged. A resent probe
    /// whose own copy drew that ACK (its send time echoed) repaired a loss: the window is halved
    /// once (Linux's `tcp_process_tlp_ack`, which reads a DSACK where clos reads the echo).
    #[cold]
    #[inline(never)]
    fn end_probe(&mut self, echo: Time) {
        if self.tlp_resent_at != 0 && echo >= self.tlp_resent_at && self.recovery == Recovery::None {
            // Linux's CWR state, as for `local_congestion`: half the window.
            self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
            self.cwnd = self.ssthresh;
            self.ca_credit = 0;
            self.cwr_end = self.nxt;
        }
        self.tlp_high = 0;
        self.tlp_resent_at = 0;
    }

    /// The lowest retransmission RACK found lost again goes out once more.
    #[cold]
    #[inline(never)]
    fn resend_relost(&mut self, now: Time) -> u32 {
        let r = self.rack.as_deref_mut().expect("relost counts RackLog::lost");
        let seg = r.lost.remove(0);
        r.sent.push(Resent { seg, nxt: self.nxt, at: now });
        self.relost -= 1;
        self.stats.retransmits += 1;
        seg
    }

    #[cold]
    #[inline(never)]
    fn log_retransmission(&mut self, hole: u32, now: Time) {
        if let Some(r) = self.rack.as_deref_mut() {
            r.sent.push(Resent { seg: hole, nxt: self.nxt, at: now });
        }
    }

    #[cold]
    #[inline(never)]
    fn start_recovery(&mut self, now: Time, sacked: u32, p: &TcpParams) {
        // Eifel judges the retransmission this recovery makes of its first hole; a hole resent
        // by an earlier one and still on its way is not resent now, and its ACK proves nothing.
        if p.adaptive_dupthresh.is_some() && !self.resent_earlier(self.una) {
            let (cwnd, ssthresh) = (self.cwnd, self.ssthresh);
            self.eifel = Some(Eifel { start: now, hole: self.una, sacked_above: sacked, cwnd, ssthresh, undone: false });
        }
        self.enter_fast_recovery(p);
    }

    /// Retransmissions found lost that arrived after all leave RACK's list (and pipe's count),
    /// whether or not the flow is still recovering.
    #[cold]
    #[inline(never)]
    fn forget_delivered_relost(&mut self) {
        let Some(r) = self.rack.as_deref_mut() else { return };
        let (una, sacked) = (self.una, &self.sacked);
        r.lost.retain(|&s| s >= una && !sacked.contains(s));
        self.relost = r.lost.len() as u32;
    }

    /// The first hole from `hole` on that no earlier recovery resent and is still on its way.
    #[cold]
    #[inline(never)]
    fn past_resent(&self, mut hole: u32) -> u32 {
        while hole < self.lost_limit.min(self.nxt) && self.resent_earlier(hole) {
            hole = self.sacked.next_gap(hole + 1);
        }
        hole
    }

    /// Whether RACK's log holds a retransmission of `seg` still on its way (`transport.rack`):
    /// Linux's scoreboard marks a segment retransmitted until it is delivered or found lost,
    /// and a later recovery does not send it again.
    fn resent_earlier(&self, seg: u32) -> bool {
        self.rack.as_deref().is_some_and(|r| r.sent.iter().any(|x| x.seg == seg))
    }

    fn enter_fast_recovery(&mut self, p: &TcpParams) {
        self.stats.fast_recoveries += 1;
        self.probe_at = 0;
        self.tlp_high = 0;
        let cwnd = self.cwnd;
        self.ssthresh = self.loss_ssthresh();
        self.cwnd = self.ssthresh;
        self.ca_credit = 0;
        self.recovery = Recovery::Fast;
        self.prr_delivered = 0;
        self.recover_fs = match p.prr_bound {
            PrrBound::Ssrb => self.nxt - self.una,
            PrrBound::Linux => (cwnd / self.mss) as u32,
        };
        self.prr_nxt = self.nxt;
        self.prr_retransmits = self.stats.retransmits;
        self.recover = self.nxt;
        self.cwr_end = self.nxt;
        self.high_rxt = self.una;
        self.lost_limit = self.lost_limit.max(self.una + 1);
        self.resend_first = true;
    }

    /// The host's queue refused a packet (`host/tsq.rs`): halve the window once per window of
    /// data, as Linux's `tcp_enter_cwr` does, without marking anything lost.
    pub fn local_congestion(&mut self) {
        if self.recovery == Recovery::None && self.una >= self.cwr_end {
            self.stats.local_congestion += 1;
            self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
            self.cwnd = self.ssthresh;
            self.ca_credit = 0;
            self.cwr_end = self.nxt;
        }
    }

    /// The retransmission timer expired at `now`: every hole is lost and resent from the first,
    /// in slow start from one segment. With RACK, as Linux's `tcp_timeout_mark_lost`, a hole
    /// sent (or resent) within the latest ACK's round trip is not lost yet, the first excepted:
    /// it stays in flight until RACK finds it lost. With `halve_window`, as Linux's
    /// `tcp_enter_loss`: ssthresh is cut only if no recovery or earlier timeout cut it in this
    /// window of data, and the window is what is left in flight plus one segment.
    pub fn on_timeout(&mut self, now: Time) {
        if self.done() || !self.outstanding() {
            return;
        }
        self.stats.timeouts += 1;
        let cut_already = match self.recovery {
            Recovery::None => false,
            Recovery::Fast => self.una < self.recover,
            Recovery::Timeout => self.una < self.recover && self.backoff > 0,
        };
        if !(self.halve_window && cut_already) {
            self.ssthresh = self.loss_ssthresh();
        }
        if let Some(c) = self.cubic.as_deref_mut() {
            c.on_timeout();
        }
        self.cwnd = self.mss;
        self.ca_credit = 0;
        self.dupacks = 0;
        self.recovery = Recovery::Timeout;
        self.eifel = None;
        self.relost = 0;
        self.rack_at = 0;
        self.probe_at = 0;
        self.tlp_high = 0;
        self.tlp_resent_at = 0;
        self.recover = self.nxt;
        self.cwr_end = self.nxt;
        self.high_rxt = self.una;
        self.lost_limit = self.nxt;
        self.backoff += 1;
        // RFC 6298 (5.4): the first hole goes out at once, whatever else is still in flight.
        self.resend_first = true;
        if let Some(h) = self.hystart.as_deref_mut() {
            h.on_timeout(now, self.nxt);
        }
        if let Some(r) = self.rack.as_deref_mut() {
            let recent = now.saturating_sub(self.rack_rtt);
            let una = self.una;
            r.sent.retain(|x| x.at > recent && x.seg != una);
            r.lost.clear();
            let old = r.originals.partition_point(|&t| t <= recent) as u32;
            self.lost_limit = (r.first + old).clamp(una + 1, self.nxt);
        }
        if self.halve_window {
            self.cwnd = (self.pipe() as u64 + 1) * self.mss;
        }
    }

    /// The next segment the window allows at `now`: `(segment, is_retransmission)`. Call until
    /// `None`.
    #[inline]
    pub fn next_segment(&mut self, now: Time) -> Option<(u32, bool)> {
        let forced = std::mem::take(&mut self.resend_first);
        if !forced && self.pipe() as u64 * self.mss >= self.cwnd {
            return None;
        }
        if self.recovery != Recovery::None {
            if self.relost > 0 {
                return Some((self.resend_relost(now), true));
            }
            let mut hole = self.sacked.next_gap(self.high_rxt.max(self.una));
            if self.rack.is_some() {
                hole = self.past_resent(hole);
            }
            if hole < self.lost_limit.min(self.nxt) {
                self.high_rxt = hole + 1;
                self.stats.retransmits += 1;
                if self.rack.is_some() {
                    self.log_retransmission(hole, now);
                }
                return Some((hole, true));
            }
        }
        // New data only within the receiver's advertised window, counted from the oldest
        // unacknowledged segment (RFC 9293 3.8.6: SND.UNA + SND.WND).
        if self.nxt < self.total && ((self.nxt - self.una) as u64 + 1) * self.mss <= self.rwnd {
            return Some((self.send_new(now), false));
        }
        None
    }

    /// The next new segment goes out at `now`.
    #[inline]
    fn send_new(&mut self, now: Time) -> u32 {
        if let Some(r) = self.rack.as_deref_mut() {
            r.originals.push_back(now);
        }
        self.nxt += 1;
        self.nxt - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TcpParams {
        TcpParams::for_tests()
    }

    #[test]
    fn per_flow_mss_is_uniform_over_its_range_and_fixed_by_seed_and_flow() {
        let p = TcpParams { mss: 1460, mss_min: Some(64), mss_salt: 7, ..params() };
        let draws: Vec<u32> = (0..10_000).map(|f| p.flow_mss(f)).collect();
        assert!(draws.iter().all(|m| (64..=1460).contains(m)));
        assert!(draws.contains(&64) || draws.iter().min() < Some(&70), "reaches the bottom");
        assert!(draws.iter().max() > Some(&1450), "reaches the top");
        // Uniform on [64, 1460]: mean 762, s.d. 403; the mean of 10,000 draws is within 6 s.d.
        // of the mean (4.0 each) at 24.
        let mean = draws.iter().map(|&m| m as f64).sum::<f64>() / draws.len() as f64;
        assert!((mean - 762.0).abs() < 24.0, "mean {mean}");
        assert_eq!(p.flow_mss(123), TcpParams { mss: 1460, mss_min: Some(64), mss_salt: 7, ..params() }.flow_mss(123));
        assert_eq!(params().flow_mss(5), params().mss, "no range: every flow uses mss");
    }

    /// By hand, Linux's `tcp_cwnd_restart` with a 1,000 B MSS and IW4: the previous message
    /// ended with a window of 40 segments, ssthresh 8 and SRTT 300 us (RTTVAR 150 us, so the
    /// RTO is 300 + 4 x 150 = 900 us, above the 1 us floor). Idle up to one RTO the window and
    /// ssthresh stay; at 1.5 RTO ssthresh becomes 3/4 x 40 = 30 and the window halves once (20),
    /// at 2.5 RTO twice (10), and at 5.5 RTO it stops at the initial window (4).
    #[test]
    fn a_persistent_connection_restarts_its_window_after_idle_as_linux() {
        let p = params();
        let mut prev = Sender::new(100_000, p.mss, &p);
        prev.cwnd = 40_000;
        prev.ssthresh = 8_000;
        prev.rtt_sample(300_000, 0, p.rto_min);
        let rto = prev.rto(&p);
        assert_eq!(rto, 900_000);
        let next = |idle: Time| {
            let mut s = Sender::new(10_000, p.mss, &p);
            s.resume(&prev, idle, &p);
            (s.cwnd / 1000, s.ssthresh / 1000, s.rto(&p))
        };
        assert_eq!(next(rto), (40, 8, rto));
        assert_eq!(next(rto * 3 / 2), (20, 30, rto));
        assert_eq!(next(rto * 5 / 2), (10, 30, rto));
        assert_eq!(next(rto * 11 / 2), (4, 30, rto));
        let fresh = Sender::new(10_000, p.mss, &p);
        assert_eq!((fresh.cwnd / 1000, fresh.rto(&p)), (4, p.rto_min), "a fresh connection has neither");
    }

    fn drain(s: &mut Sender) -> Vec<(u32, bool)> {
        drain_at(s, 0)
    }

    /// What the window lets out at `now`.
    fn drain_at(s: &mut Sender, now: Time) -> Vec<(u32, bool)> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    /// The retransmissions `drain` sends.
    fn resent(s: &mut Sender) -> Vec<u32> {
        drain(s).into_iter().filter(|x| x.1).map(|x| x.0).collect()
    }

    /// Segments 0..10 sent under a window of 10, with or without RACK.
    fn ten_out(rack: bool) -> (TcpParams, Sender) {
        let p = TcpParams { rack, ..params() };
        let s = window_out(&p, 10_000, 10);
        (p, s)
    }

    /// A flow of `bytes` with its first `window` segments out at 0.
    fn window_out(p: &TcpParams, bytes: u64, window: u32) -> Sender {
        let mut s = Sender::new(bytes, p.mss, p);
        s.cwnd = window as u64 * p.mss as u64;
        assert_eq!(drain(&mut s).len(), window as usize);
        s
    }

    const NO_SACK: SackBlocks = [(0, 0); 3];

    #[test]
    fn initial_window_then_slow_start() {
        let p = params();
        let mut s = Sender::new(100_000, p.mss, &p);
        assert_eq!(drain(&mut s).len(), 4);
        s.on_ack(10, 2, &NO_SACK, false, 0, &p);
        // 2 segments acked: cwnd 4 -> 6 segments, 2 in flight: 4 more.
        assert_eq!(drain(&mut s), vec![(4, false), (5, false), (6, false), (7, false)]);
    }

    #[test]
    fn three_dupacks_retransmit_the_hole_once_and_halve_the_window() {
        let p = params();
        let mut s = window_out(&p, 100_000, 8);
        // Segment 0 lost; 1, 2, 3 arrive and are SACKed.
        for k in 1..=3u32 {
            s.on_ack(10, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
        }
        assert_eq!(s.cwnd, 4_000, "halved from the flight of 8");
        let sent = drain(&mut s);
        assert_eq!(sent[0], (0, true));
        assert_eq!(sent.iter().filter(|x| x.1).count(), 1, "only the hole is resent: {sent:?}");
        // The retransmission arrives: everything up to 8 acked, recovery ends.
        s.on_ack(20, 8, &NO_SACK, false, 0, &p);
        assert_eq!(s.stats.retransmits, 1);
        assert_eq!(s.stats.fast_recoveries, 1);
    }

    /// NewReno without SACK (RFC 6582), by hand: of 8 segments, 0 and 4 are lost. Three
    /// duplicate ACKs of 0 (for 1, 2, 3) resend 0; the partial ACK for 4 that follows resends 4
    /// at once, without waiting for three more duplicates; the blocks the receiver sends are
    /// not read.
    #[test]
    fn without_sack_a_partial_ack_resends_the_next_hole() {
        let p = TcpParams { sack: false, ..params() };
        let mut s = window_out(&p, 100_000, 8);
        for k in 1..=3u32 {
            s.on_ack(10, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
        }
        assert_eq!(drain(&mut s)[0], (0, true), "fast retransmit of the first hole");
        s.on_ack(20, 4, &[(5, 8), (0, 0), (0, 0)], false, 0, &p);
        assert_eq!(drain(&mut s)[0], (4, true), "the partial ACK's hole, resent at once");
        assert_eq!(s.stats.fast_recoveries, 1, "one recovery for both holes");
    }

    #[test]
    fn timeout_resends_from_the_first_hole_with_one_segment() {
        let p = params();
        let mut s = Sender::new(10_000, p.mss, &p);
        drain(&mut s);
        s.on_timeout(0);
        assert_eq!(s.cwnd, 1_000);
        assert_eq!(drain(&mut s), vec![(0, true)]);
        assert_eq!(s.rto(&p), 2_000, "backed off once");
    }

    #[test]
    fn dctcp_cuts_by_alpha_over_two_once_per_window() {
        let mut p = params();
        p.dctcp_g = Some(1.0 / 16.0);
        let mut s = Sender::new(1_000_000, p.mss, &p);
        s.cwnd = 10_000;
        s.ssthresh = 10_000;
        drain(&mut s);
        // First window fully marked: alpha stays 1, cut by half once.
        s.on_ack(10, 5, &NO_SACK, true, 0, &p);
        assert_eq!(s.cwnd, 5_000);
        s.on_ack(11, 6, &NO_SACK, true, 0, &p);
        assert_eq!(s.cwnd, 5_000, "no second cut within the same window");
    }

    /// DCTCP's answer to a loss, by hand: 8 segments out with cwnd 8,000 and alpha 0.25; three
    /// duplicate ACKs enter recovery. Halving (RFC 8257 §3.5) sets ssthresh to half the flight
    /// of 8: 4,000. ns-3's reading cuts the window by alpha/2: 8,000 x 0.875 = 7,000. A timeout
    /// takes the same ssthresh.
    #[test]
    fn dctcp_loss_halves_or_cuts_by_alpha_over_two() {
        for (loss, expect) in [(DctcpLoss::Halve, 4_000), (DctcpLoss::Alpha, 7_000)] {
            let p = TcpParams { dctcp_g: Some(1.0 / 16.0), dctcp_loss: loss, ..params() };
            let mut s = Sender::new(100_000, p.mss, &p);
            s.cwnd = 8_000;
            s.alpha = 0.25;
            drain(&mut s);
            for k in 1..=3u32 {
                s.on_ack(10, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
            }
            assert_eq!((s.ssthresh, s.cwnd), (expect, expect), "{loss:?}");
            let mut t = Sender::new(100_000, p.mss, &p);
            t.cwnd = 8_000;
            t.alpha = 0.25;
            drain(&mut t);
            t.on_timeout(0);
            assert_eq!((t.ssthresh, t.cwnd), (expect, 1_000), "{loss:?} timeout");
        }
    }

    /// Proportional rate reduction (RFC 6937) against RFC 6675, by hand: 20 segments out
    /// (cwnd 20,000, MSS 1,000), segment 0 lost, segments 1, 2, ... SACKed one per ACK. The first
    /// two SACKs each let one new segment out (the flight falls below cwnd). The third starts
    /// recovery with 22 out: ssthresh 11 segments, RecoverFS 22, and both resend segment 0.
    /// PRR then sends ceil(delivered x 11 / 22) - sent: one segment per two delivered, on the
    /// 5th, 7th, ..., 15th SACK, while the flight exceeds ssthresh; from the 17th the flight is
    /// at ssthresh and PRR-SSRB keeps it there (one per SACK from the 18th). RFC 6675 drops the
    /// window to 11 at once and sends nothing until the flight (22 - k after the k-th SACK)
    /// falls below it at the 12th, then one per SACK. Both end with 11 segments in flight.
    #[test]
    fn prr_spreads_recovery_sends_over_the_acks() {
        let prr = [1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1];
        let rfc6675 = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
        for (on, expect) in [(true, prr), (false, rfc6675)] {
            let p = TcpParams { prr: on, ..params() };
            let mut s = window_out(&p, 1_000_000, 20);
            let mut sent_after = Vec::new();
            for k in 1..20u32 {
                s.on_ack(10 + k as u64, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
                sent_after.push(drain(&mut s).len());
            }
            assert_eq!(s.stats.fast_recoveries, 1);
            assert_eq!(sent_after, expect, "prr {on}");
            assert_eq!(s.pipe(), 11, "prr {on}: the flight ends at ssthresh");
        }
    }

    /// CUBIC's decrease by hand: 10 segments out at a window of 10,000 B; three duplicate ACKs
    /// leave ssthresh at 0.7 x 10,000 = 7,000 (RFC 9438 §4.6) where Reno halves the flight to
    /// 5,000; a timeout takes the same ssthresh.
    #[test]
    fn cubic_cuts_the_window_to_beta() {
        for (cubic, expect) in [(true, 7_000), (false, 5_000)] {
            let p = TcpParams { cubic, ..params() };
            let mut s = window_out(&p, 100_000, 10);
            for k in 1..=3u32 {
                s.on_ack(10, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
            }
            assert_eq!(s.ssthresh, expect, "cubic {cubic}");
            let mut t = Sender::new(100_000, p.mss, &p);
            t.cwnd = 10_000;
            drain(&mut t);
            t.on_timeout(0);
            assert_eq!((t.ssthresh, t.cwnd), (expect, 1_000), "cubic {cubic} timeout");
        }
    }

    /// The PLTS agent: a hole filled by the late original (echo before the retransmission)
    /// undoes the window cut and raises the threshold to the reordering seen (3 SACKed above
    /// the hole when recovery started -> 4); without the agent the threshold stays at 3.
    #[test]
    fn plts_agent_raises_dupthresh_after_a_spurious_fast_retransmit() {
        for agent in [false, true] {
            let mut p = params();
            p.adaptive_dupthresh = agent.then_some(64);
            let mut s = Sender::new(100_000, p.mss, &p);
            s.cwnd = 8_000;
            drain(&mut s);
            // Segment 0 is late; 1..=3 arrive first (sent at t=0), SACKed; recovery at t=100.
            for k in 1..=3u32 {
                s.on_ack(100, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
            }
            assert_eq!(s.cwnd, 4_000);
            assert_eq!(drain(&mut s).first(), Some(&(0, true)));
            // The original segment 0 (sent at t=0) fills the hole before the retransmission.
            s.on_ack(150, 4, &NO_SACK, false, 0, &p);
            if agent {
                assert_eq!(s.stats.spurious, 1);
                assert_eq!(s.dupthresh, 4, "raised to the reordering extent + 1");
                // Recovery goes on to segment 8 with the window at the flight (4..8) + 3.
                assert_eq!(s.cwnd, 7_000);
                // The rest arrives, triggered by originals: the cut is undone whole.
                s.on_ack(160, 8, &NO_SACK, false, 0, &p);
                assert_eq!(s.cwnd, 8_000, "window cut undone");
            } else {
                assert_eq!(s.dupthresh, 3);
                assert_eq!(s.stats.spurious, 0);
            }
        }
    }

    /// By hand, a spurious fast retransmission and a real loss in the same window (Linux 2.6's
    /// `tcp_try_undo_partial`): 0..10 sent at t=0; 0 is late and 5 is lost. SACKs of 1..=3
    /// start recovery (cut to 5,000); the late 0 and 1..5 arrive (undo: the window is the flight,
    /// 5..10, plus 3), and SACKs of 6..10 mark 5 lost, which is resent in recovery, with no timeout.
    /// Its ACK echoes the retransmission, so recovery ends with the cut standing (ssthresh).
    #[test]
    fn a_real_loss_after_an_undone_retransmission_is_repaired_in_recovery() {
        let mut p = params();
        p.adaptive_dupthresh = Some(64);
        let mut s = window_out(&p, 100_000, 10);
        for k in 1..=3u32 {
            s.on_ack(100, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
        }
        assert_eq!((s.ssthresh, s.cwnd), (5_000, 5_000));
        assert_eq!(drain(&mut s).first(), Some(&(0, true)));
        s.on_ack(150, 5, &NO_SACK, false, 0, &p); // the original 0 (sent at 0), then 1..5
        assert_eq!((s.stats.spurious, s.dupthresh), (1, 4));
        // The window is the flight (5..10) plus 3 while recovery goes on.
        assert_eq!(s.cwnd, 8_000);
        for k in 6..=10u32 {
            s.on_ack(160, 5, &[(6, k), (0, 0), (0, 0)], false, 0, &p);
        }
        let sent = drain(&mut s);
        assert_eq!(sent.first(), Some(&(5, true)), "5 resent in recovery: {sent:?}");
        assert_eq!(s.stats.timeouts, 0);
        s.on_ack(200, 10 + sent.len() as u32 - 1, &NO_SACK, false, 170, &p); // echoes the resend
        assert_eq!(s.cwnd, 5_000, "a real loss: the cut stands");
    }

    /// By hand, the tail of an incast round (docs/validation.md, "Beside the Linux kernel"):
    /// segments 0..10 out, 6 and 8 lost, 7, 9 and 10 SACKed. Three SACKed above 6 start
    /// recovery and resend 6; above 8 lie only two, so RFC 6675 never deems it lost and it waits
    /// for the timer. With RACK, 8 was sent before 9 and 10, which arrived: it is resent too.
    #[test]
    fn rack_marks_a_tail_hole_lost_that_dupthresh_cannot() {
        for rack in [false, true] {
            let (p, mut s) = ten_out(rack);
            s.on_ack(10, 6, &NO_SACK, false, 0, &p);
            s.on_ack(11, 6, &[(7, 8), (0, 0), (0, 0)], false, 0, &p);
            s.on_ack(12, 6, &[(9, 10), (7, 8), (0, 0)], false, 0, &p);
            s.on_ack(13, 6, &[(9, 11), (7, 8), (0, 0)], false, 0, &p);
            let resent = resent(&mut s);
            assert_eq!(resent, if rack { vec![6, 8] } else { vec![6] }, "rack {rack}");
        }
    }

    /// By hand, a retransmission lost again: 0..10 out, 2 and 5 lost, 3, 4 and 6..10 SACKed.
    /// Recovery resends 2, then 5; 2's retransmission is lost, 5's arrives (SACKed). With RACK
    /// the retransmission of 5, sent after 2's, was delivered: 2's is lost, and 2 goes out a
    /// third time. Without, nothing marks it, and it waits for the timeout.
    #[test]
    fn rack_resends_a_retransmission_lost_again() {
        for rack in [false, true] {
            let (p, mut s) = ten_out(rack);
            s.on_ack(10, 2, &NO_SACK, false, 0, &p);
            for top in 4..=5 {
                s.on_ack(11, 2, &[(3, top), (0, 0), (0, 0)], false, 0, &p);
            }
            for top in 7..=10 {
                s.on_ack(12, 2, &[(6, top), (3, 5), (0, 0)], false, 0, &p);
            }
            let first = resent(&mut s);
            assert_eq!(first, vec![2, 5], "rack {rack}");
            // 5's retransmission arrives; 2's does not.
            s.on_ack(20, 2, &[(3, 10), (0, 0), (0, 0)], false, 15, &p);
            let again = resent(&mut s);
            assert_eq!(again, if rack { vec![2] } else { vec![] }, "rack {rack}");
            assert_eq!(s.pipe(), 1, "2 in flight: resent again, or still as far as RFC 6675 knows");
        }
    }

    /// By hand, RACK's reordering timer (RFC 8985 §6.2): 0..10 out at 0, 8 lost. The ACK for
    /// 0..8 at 100 samples a round trip of 100; 9 SACKed at 110 is one segment above the hole,
    /// never `dupthresh`, so without RACK 8 waits for the timeout. With RACK it is lost a
    /// quarter of the least round trip and Linux's 2 ms floor later, at 135 + 2 ms, and resent.
    #[test]
    fn rack_resends_a_lone_tail_hole_after_a_quarter_round_trip() {
        for rack in [false, true] {
            let (p, mut s) = ten_out(rack);
            s.on_ack(100, 8, &NO_SACK, false, 0, &p);
            s.on_ack(110, 8, &[(9, 10), (0, 0), (0, 0)], false, 0, &p);
            let due = 135 + TIMEOUT_MIN;
            assert_eq!(s.rack_at, if rack { due } else { 0 });
            assert!(!s.on_rack_timer(due - 1, &p));
            assert_eq!(s.on_rack_timer(due, &p), rack);
            let resent = resent(&mut s);
            assert_eq!(resent, if rack { vec![8] } else { vec![] }, "rack {rack}");
        }
    }

    /// By hand, a flight lost whole (RFC 8985 §6.2 and §7): 0..10 out at 0 and lost; the tail
    /// loss probe sends the new 10 at 500, and its SACK arrives at 600 (RACK.rtt 100, the least
    /// round trip, so a reordering window of 25). 0 was sent 500 before the segment just
    /// delivered, far more than the window: it is lost at once, recovery starts on this ACK and
    /// resends it. A stack that waits out the window from the ACK instead resends nothing
    /// until its timer. Without RACK neither happens: one SACKed segment is below `dupthresh`.
    #[test]
    fn rack_deems_a_flight_lost_at_once_when_the_probe_after_it_is_sacked() {
        for rack in [false, true] {
            let p = TcpParams { rack, ..params() };
            let mut s = window_out(&p, 100_000, 10);
            assert_eq!(s.probe(500), Some((10, false)));
            s.on_ack(600, 0, &[(10, 11), (0, 0), (0, 0)], false, 500, &p);
            assert_eq!(s.recovery == Recovery::Fast, rack, "rack {rack}");
            assert_eq!(s.rack_at, 0);
            assert_eq!(drain_at(&mut s, 600).first(), if rack { Some(&(0, true)) } else { None });
        }
    }

    /// By hand, a recovery that starts as the one before it ends (Linux's scoreboard, which
    /// `RackLog` follows). 0..20 out under a window of 20; 2 is lost. At 100 the SACKs of 3..20
    /// start recovery 1 (recovery point 20): 2 is resent and PRR sends 20..28 (ssthresh 9). The
    /// resent 2 and the new 20 are lost; at 200 the SACKs of 21..28, sent after 2's copy, show
    /// both lost, and both are resent, 2 first. At 300 the second copy of 2 arrives: the ACK
    /// reaches 20, ending recovery 1, and 21..28 SACKed above 20 start recovery 2 at once, with
    /// 20 as its hole. 20's copy of 200 is still on its way and arrives next (its ACK echoes
    /// 200, before recovery 2 began): it is not resent, nor taken for proof of a spurious
    /// retransmission (a stack that forgot it did both, and turned RACK off for the flow).
    #[test]
    fn a_recovery_does_not_resend_what_the_last_one_resent_and_is_on_its_way() {
        let p = TcpParams { rack: true, prr: true, adaptive_dupthresh: Some(64), initial_window: 20, ..params() };
        let mut s = Sender::new(100_000, p.mss, &p);
        assert_eq!(drain(&mut s).len(), 20);
        s.on_ack(100, 2, &[(3, 20), (0, 0), (0, 0)], false, 0, &p);
        let first = drain(&mut s);
        assert_eq!(first[0], (2, true));
        assert_eq!(first[1..], (20..28).map(|x| (x, false)).collect::<Vec<_>>());
        s.on_ack(200, 2, &[(3, 20), (21, 28), (0, 0)], false, 100, &p);
        assert_eq!(resent(&mut s), vec![2, 20]);
        s.on_ack(300, 20, &[(21, 28), (0, 0), (0, 0)], false, 200, &p);
        assert_eq!(s.recovery, Recovery::Fast, "recovery 2");
        assert_eq!(resent(&mut s), Vec::<u32>::new(), "20 is on its way");
        s.on_ack(301, 28, &NO_SACK, false, 200, &p);
        assert_eq!((s.stats.spurious, s.stats.timeouts), (0, 0));
    }

    /// By hand, a tail loss probe (RFC 8985 §7; Linux's `tcp_schedule_loss_probe`): 0..10 out
    /// at 0, a round trip of 100 sampled at 100 by the ACK of 0..8; 8 and 9 out. The probe is due
    /// two round trips and 2 ms on, before the RTO; with one segment out, `rto_min` on instead,
    /// capped at the RTO. With nothing new to send it resends the highest segment, 9; the ACK of
    /// all, echoing the probe, shows it repaired a loss: the window is halved. Had 9 arrived
    /// (an echo from before the probe), nothing is cut.
    #[test]
    fn a_tail_loss_probe_resends_the_last_segment_two_round_trips_on() {
        for lost in [true, false] {
            let p = TcpParams { tlp: true, rto_min: 3 * TIMEOUT_MIN, rto_max: 10 * TIMEOUT_MIN, ..params() };
            let mut s = window_out(&p, 10_000, 10);
            s.on_ack(100, 8, &NO_SACK, false, 0, &p);
            let rto_at = 100 + s.rto(&p);
            assert_eq!(s.arm_probe(100, rto_at, &p), 100 + 2 * 100 + TIMEOUT_MIN);
            let at = s.probe_at;
            assert_eq!(s.probe(at), Some((9, true)));
            assert_eq!((s.stats.probes, s.probe_at), (1, 0));
            assert_eq!(s.arm_probe(at, rto_at, &p), 0, "one probe at a time");
            // 12,000 after the first ACK's slow start, 14,000 after this one's, then halved.
            assert_eq!(s.cwnd, 12_000);
            s.on_ack(at + 100, 10, &NO_SACK, false, if lost { at } else { 50 }, &p);
            assert_eq!(s.cwnd, if lost { 7_000 } else { 14_000 }, "lost {lost}");
        }
        let p = TcpParams { tlp: true, rto_min: 3 * TIMEOUT_MIN, rto_max: 10 * TIMEOUT_MIN, ..params() };
        let mut s = Sender::new(10_000, p.mss, &p);
        s.cwnd = 10_000;
        drain(&mut s);
        s.on_ack(100, 9, &NO_SACK, false, 0, &p);
        assert_eq!(s.arm_probe(100, u64::MAX, &p), 100 + 2 * 100 + p.rto_min, "one out: its ACK may be delayed");
        assert_eq!(s.arm_probe(100, 500, &p), 500, "never after the RTO");
    }

    /// By hand, the RTO after round trips of 100, 900 and 3,000 with `rto_min` 1,000. RFC 6298:
    /// SRTT 100, 200, 550 and RTTVAR 50, 237, 877, so max(SRTT + 4 RTTVAR, 1,000) = 1,000, 1,148,
    /// 4,058. Linux: SRTT the same; the deviation x4 is 200, then 200 + (800 - 50) = 950, then
    /// 950 + (2,800 - 237) = 3,513, and RTTVAR the largest of them but at least 1,000: 1,000,
    /// 1,000, 3,513, so SRTT + RTTVAR = 1,100, 1,200, 4,063. Linux's RTO is never below SRTT +
    /// `rto_min`, where RFC 6298's is never below `rto_min`.
    #[test]
    fn linux_rto_is_srtt_plus_a_deviation_never_below_rto_min() {
        for (estimator, want) in [(RtoEstimator::Rfc6298, [1_000, 1_148, 4_058]), (RtoEstimator::Linux, [1_100, 1_200, 4_063])] {
            let p = TcpParams { rto_estimator: estimator, ..params() };
            let mut s = Sender::new(100_000, p.mss, &p);
            drain(&mut s);
            let mut got = vec![];
            for (k, (now, echo)) in [(100, 0), (1_000, 100), (4_000, 1_000)].into_iter().enumerate() {
                s.on_ack(now, k as u32 + 1, &NO_SACK, false, echo, &p);
                got.push(s.rto(&p));
            }
            assert_eq!(got, want, "{estimator:?}");
        }
    }

    /// A probe sends new data when there is some, whatever the congestion window says.
    #[test]
    fn a_tail_loss_probe_sends_new_data_first() {
        let p = TcpParams { tlp: true, ..params() };
        let mut s = Sender::new(100_000, p.mss, &p);
        assert_eq!(drain(&mut s).len(), 4);
        s.on_ack(100, 1, &NO_SACK, false, 0, &p);
        drain(&mut s);
        let nxt = s.nxt;
        let at = s.arm_probe(100, u64::MAX, &p);
        assert_eq!(s.probe(at), Some((nxt, false)));
        assert_eq!(s.nxt, nxt + 1);
    }

    /// ACKs overtake each other when the fabric sprays them. An ACK older than `una` must not
    /// count as a duplicate (RFC 5681 §2: a duplicate acknowledges the highest sequence seen),
    /// and its SACK blocks below `una` must not enter the scoreboard: "pipe" would count them
    /// against data already acknowledged, and a pipe that wraps around stops the flow for good
    /// (timeouts that never resend).
    #[test]
    fn a_stale_ack_does_not_count_as_duplicate_or_sack_below_una() {
        let p = params();
        let mut s = Sender::new(10_000, p.mss, &p);
        s.cwnd = 10_000;
        drain(&mut s);
        s.on_ack(10, 6, &NO_SACK, false, 0, &p); // una = 6, segments 6..10 outstanding
                                                 // A late ACK from before: cum 2, SACKing 3..5 (all below una now).
        for _ in 0..4 {
            s.on_ack(11, 2, &[(3, 5), (0, 0), (0, 0)], false, 0, &p);
        }
        assert_eq!(s.stats.fast_recoveries, 0, "stale ACKs are not duplicates");
        assert_eq!(s.pipe(), 4, "segments 6..10 in flight");
        // The tail is lost: the timer resends it.
        s.on_timeout(0);
        assert_eq!(drain(&mut s), vec![(6, true)]);
    }

    /// By hand, RACK by send time (RFC 8985 §6.2, Linux's `tcp_rack_detect_loss`): a flow of
    /// 10 segments, all out at 0; 2, 8 and 9 are lost. SACKs of 3..5 (a round trip of 100 each)
    /// start recovery at 102, which resends 2. At 300 the ACK of 0..8 reports 2's copy
    /// delivered: 8 and 9, first sent at 0, before that copy, are lost, and go out again. By
    /// number nothing above 8 was SACKed, and they would wait for a timer. An ACK at 150,
    /// 48 after the copy left, under the least round trip of 100, is the late original's (its
    /// echo says 0), as Linux's `tcp_rack_advance` assumes without reading the echo: it proves
    /// nothing.
    #[test]
    fn rack_deems_originals_sent_before_a_delivered_retransmission_lost() {
        for (at, echo, expect) in [(300, 102, vec![8, 9]), (150, 0, vec![])] {
            let (p, mut s) = ten_out(true);
            for top in 4..=8 {
                s.on_ack(98 + top as Time, 2, &[(3, top), (0, 0), (0, 0)], false, 0, &p);
                if top == 6 {
                    assert_eq!(drain_at(&mut s, 102), vec![(2, true)], "recovery at the third SACK");
                }
            }
            assert_eq!(resent(&mut s), Vec::<u32>::new());
            s.on_ack(at, 8, &NO_SACK, false, echo, &p);
            assert_eq!(drain_at(&mut s, at).into_iter().map(|x| x.0).collect::<Vec<_>>(), expect, "ACK at {at}");
        }
    }

    /// By hand, a timeout with RACK (Linux's `tcp_timeout_mark_lost`): 0..10 out at 0 under a
    /// window of 10; at 100 the ACK of 0..4 (a round trip of 100) grows it to 12 and sends
    /// 10..16. The RTO fires at 150: 4..10, sent at 0, are lost; 10..16, sent within the latest
    /// round trip, are not yet, and stay in flight beside the resent 4 (pipe 7). Without RACK
    /// all ten are lost, and only 4's copy is in flight.
    #[test]
    fn a_timeout_leaves_what_was_sent_within_a_round_trip_in_flight() {
        for (rack, pipe) in [(true, 7), (false, 1)] {
            let p = TcpParams { rack, ..params() };
            let mut s = window_out(&p, 100_000, 10);
            s.on_ack(100, 4, &NO_SACK, false, 0, &p);
            assert_eq!(drain_at(&mut s, 100).len(), 6);
            s.on_timeout(150);
            assert_eq!(drain_at(&mut s, 150), vec![(4, true)], "rack {rack}");
            assert_eq!(s.pipe(), pipe, "rack {rack}");
        }
    }

    /// By hand, slow start behind delayed ACKs (1,000 B segments, 10 out): an ACK of two
    /// segments grows the window by two under RFC 3465's byte counting (L = 2), by one under
    /// Linux 2.6's `tcp_slow_start` with `tcp_abc` 0 (`transport.slow_start = "per_ack"`); an
    /// ACK of one grows it by one under both. The ten segments, ACKed in six ACKs, grow the
    /// window to 20 segments (x2 a round trip) and to 16.
    #[test]
    fn linux_2_6_slow_start_grows_one_segment_per_ack() {
        for (slow_start, after_two, after_one, after_all) in [(SlowStart::Abc, 12_000, 13_000, 20_000), (SlowStart::PerAck, 11_000, 12_000, 16_000)] {
            let p = TcpParams { slow_start, ..params() };
            let mut s = window_out(&p, 100_000, 10);
            s.on_ack(100, 2, &NO_SACK, false, 0, &p);
            assert_eq!(s.cwnd, after_two, "{slow_start:?}");
            s.on_ack(101, 3, &NO_SACK, false, 0, &p);
            assert_eq!(s.cwnd, after_one, "{slow_start:?}");
            for cum in [4, 6, 8, 10] {
                s.on_ack(102, cum, &NO_SACK, false, 0, &p);
            }
            assert_eq!(s.cwnd, after_all, "{slow_start:?}");
        }
    }

    /// By hand, Linux's ssthresh (`transport.ssthresh_from = "window"`, `tcp_reno_ssthresh` and
    /// `tcp_enter_loss`): a window of 20 of which the host let out 12, segment 0 lost, 1-3
    /// SACKed. Recovery halves the window (ssthresh 10, where half the flight is 6). A timeout
    /// before the recovery ends keeps 10 and leaves the window at what is in flight plus one:
    /// 1 without RACK (every hole is lost), so one retransmission goes out. A second timeout
    /// on the same data keeps it too; once an ACK has advanced, the next timeout cuts again,
    /// from the window of 1 to 2 segments.
    #[test]
    fn linux_halves_the_window_and_cuts_once_per_window_of_data() {
        for (from, first, after) in [(SsthreshFrom::Window, 10_000, 10_000), (SsthreshFrom::Flight, 6_000, 6_000)] {
            let p = TcpParams { ssthresh_from: from, ..params() };
            let mut s = Sender::new(100_000, p.mss, &p);
            s.cwnd = 20_000;
            for _ in 0..12 {
                s.next_segment(0);
            }
            for k in 1..4 {
                s.on_ack(10, 0, &[(1, k + 1), (0, 0), (0, 0)], false, 0, &p);
            }
            assert_eq!((s.recovery, s.ssthresh), (Recovery::Fast, first), "{from:?}");
            s.on_timeout(20);
            assert_eq!(s.ssthresh, after, "{from:?}");
            if from == SsthreshFrom::Window {
                assert_eq!((s.cwnd, drain_at(&mut s, 20)), (1_000, vec![(0, true)]));
                s.on_timeout(30);
                assert_eq!(s.ssthresh, 10_000);
                s.on_ack(40, 4, &NO_SACK, false, 0, &p);
                s.on_timeout(50);
                assert_eq!(s.ssthresh, 2_000);
            }
        }
        // With RACK, what was sent within the latest round trip stays in flight after a timeout
        // (`a_timeout_leaves_what_was_sent_within_a_round_trip_in_flight`): 6 of them, so the
        // window is 7 and only the first hole goes out.
        let p = TcpParams { rack: true, ssthresh_from: SsthreshFrom::Window, ..params() };
        let mut s = window_out(&p, 100_000, 10);
        s.on_ack(100, 4, &NO_SACK, false, 0, &p);
        assert_eq!(drain_at(&mut s, 100).len(), 6);
        s.on_timeout(150);
        assert_eq!((s.cwnd, drain_at(&mut s, 150)), (7_000, vec![(4, true)]));
    }

    /// By hand, Linux's `tcp_is_cwnd_limited` (`transport.grow_when_limited`): IW4, an ACK per
    /// segment, and a host that lets out one segment per ACK (a sender held by its NIC, as
    /// `host.tsq` does). The first window filled the window, so its four ACKs grow it to 8; by
    /// then the most outstanding in a window of data is 4, and slow start grows the window
    /// only below twice that: it stays at 8 however many ACKs follow (24 without the rule).
    /// Once the host lets the window fill again, it grows again.
    #[test]
    fn the_window_grows_only_while_it_limits_the_sender() {
        for (on, end) in [(true, 8_000), (false, 24_000)] {
            let p = TcpParams { grow_when_limited: on, ..params() };
            let mut s = Sender::new(1_000_000, p.mss, &p);
            assert_eq!(drain(&mut s).len(), 4);
            s.cwnd_validate(true);
            for ack in 1..=20 {
                s.on_ack(10, ack, &NO_SACK, false, 0, &p);
                assert!(s.next_segment(0).is_some());
                s.cwnd_validate(true);
            }
            assert_eq!(s.cwnd, end, "grow_when_limited {on}");
            if on {
                assert_eq!(drain(&mut s).len(), 4);
                s.cwnd_validate(true);
                s.on_ack(10, 21, &NO_SACK, false, 0, &p);
                assert_eq!(s.cwnd, 9_000);
            }
        }
    }

    /// By hand, Linux's PRR (`transport.prr_bound = "linux"`, `tcp_cwnd_reduction`) on the
    /// case of `prr_spreads_recovery_sends_over_the_acks`: 20 out, 0 lost, one SACK per ACK,
    /// recovery at the third with 22 out and ssthresh 11. RecoverFS is the window then, 20, not
    /// the flight, so PRR lets out ceil(11 x delivered / 20) less what it sent: the resent 0 at
    /// the 3rd SACK, then one new segment at the 4th, 6th, 8th, 10th, 12th, 13th, 15th and 17th
    /// (the flight is above ssthresh until the 19th, where it reaches 11 and nothing advanced
    /// SND.UNA, so nothing more goes).
    #[test]
    fn linux_prr_takes_the_window_for_recoverfs() {
        let p = TcpParams { prr: true, prr_bound: PrrBound::Linux, ..params() };
        let mut s = window_out(&p, 1_000_000, 20);
        let mut sent_after = Vec::new();
        for k in 1..20u32 {
            s.on_ack(10 + k as u64, 0, &[(1, 1 + k), (0, 0), (0, 0)], false, 0, &p);
            sent_after.push(drain(&mut s).len());
        }
        assert_eq!(sent_after, [1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 0]);
        assert_eq!(s.pipe(), 11);
    }

    /// By hand, PRR below ssthresh: 20 out, 0..10 lost, 10, 11 and 12 SACKed one per ACK (the
    /// first two each let a new segment out); the third starts recovery with 22 out, ssthresh
    /// 11 and 0..10 lost (pipe 9). RFC 6937's slow start reduction bound lets out one more than
    /// was delivered, up to ssthresh: 2 at the third SACK, 1 at the fourth (pipe 10) and 1 when
    /// the copy of 0 arrives. Linux's bound (`tcp_cwnd_reduction`) lets out what was delivered,
    /// 1 and 1, and one more only on the ACK that advances SND.UNA and finds nothing newly lost:
    /// max(3 delivered - 2 sent, 1) + 1 = 2.
    #[test]
    fn linux_prr_adds_one_only_when_snd_una_advances_without_a_new_loss() {
        for (bound, expect) in [(PrrBound::Ssrb, [2, 1, 1]), (PrrBound::Linux, [1, 1, 2])] {
            let p = TcpParams { prr: true, prr_bound: bound, rack: true, ..params() };
            let mut s = window_out(&p, 100_000, 20);
            let mut sent = vec![];
            for (now, cum, top) in [(100, 0, 11), (101, 0, 12), (102, 0, 13), (103, 0, 14), (200, 1, 14)] {
                s.on_ack(now, cum, &[(10, top), (0, 0), (0, 0)], false, 0, &p);
                sent.push(drain_at(&mut s, now).len());
            }
            assert_eq!(sent[..2], [1, 1], "{bound:?}: one or two SACKed, no recovery yet");
            assert_eq!(sent[2..], expect, "{bound:?}");
        }
    }

    /// By hand, Linux's HyStart ACK-train test (`transport.hystart` with CUBIC): 16 segments out
    /// at 0; ACK k (k = 0, 1, ...) comes at 100 + 50k us for segment k, a round trip of 100 us
    /// each. The first starts the round (at 100 us); the window is 16 + k segments, so the pacing
    /// rate is 2 x (16 + k) x 1,000 B / 100 us and the cushion 4 x 65,536 B at that rate,
    /// 13,107 / (16 + k) us. The train ends slow start once it is longer than half of 100 us
    /// plus the cushion: at k = 6, 300 us against 348; at k = 7, 350 against 335, with the
    /// window at 23 segments, which becomes ssthresh. Without HyStart slow start goes on.
    #[test]
    fn hystart_ends_slow_start_at_an_ack_train_as_linux_cubic() {
        let us = crate::units::PS_PER_US;
        for hystart in [true, false] {
            let p = TcpParams { cubic: true, hystart, ..params() };
            let mut s = window_out(&p, 1_000_000, 16);
            let mut exit = None;
            for k in 0..10u64 {
                s.on_ack(100 * us + 50 * us * k, k as u32 + 1, &NO_SACK, false, 50 * us * k, &p);
                if exit.is_none() && s.ssthresh != p.initial_ssthresh {
                    exit = Some((k, s.ssthresh));
                }
            }
            assert_eq!(exit, hystart.then_some((7, 23_000)), "hystart {hystart}");
        }
    }
}
