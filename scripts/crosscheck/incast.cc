// ns-3's side of the incast cross-check (docs/validation.md, "Beside ns-3"): N senders and one
// receiver on one switch, every link at `rate` with 1 us of delay, the switch's port toward the
// receiver holding `buffer` packets. Under DCTCP it marks CE above `k` (RED as a step, as in
// dctcp_bottleneck.cc); under NewReno, whose packets are not ECN-capable, it is a drop-tail FIFO
// of `buffer` packets, as clos's port treats them (ns-3's RED would drop them at `k`).
//
// Every sender opens its connection at t = 0. At `start`, long after every handshake is done,
// sender i writes one response of `response` bytes at once (at `start` plus its entry of
// `offsets`, microseconds, if given), on a connection that has sent nothing yet: IW10, and the
// RTO its handshake left. clos has no handshake, so its flows begin at their start with the
// same window; times here are counted from `start`.
//
// Prints one JSON object: each response's completion time after `start` (its last byte
// delivered to the receiving socket, seconds), retransmission timeouts (each expiry of a
// sender's retransmission timer: ns-3 doubles the RTO on each, and nothing else doubles it),
// retransmitted segments, fast recoveries, the receiver's port's drops and CE marks, the first
// sender's RTO at `start`; and, to see why a sender timed out, its timeouts, the congestion
// state each timeout found it in, its window and bytes in flight then, the slow-start threshold
// each fast recovery set beside the flight size then, and the segments (indices from 0) the
// port dropped of it; the port's drops per 100 us; with `sample`, its queue over the round.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "clos_like.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

using namespace ns3;

static uint64_t g_timeouts = 0;
static uint64_t g_retransmits = 0;
static uint64_t g_recoveries = 0;
static std::vector<uint64_t> g_received;
static std::vector<double> g_done;
static uint32_t g_left = 0;
// `--sample=us`: the receiver's port's queue (packets) every that many microseconds.
static Ptr<QueueDisc> g_port;
static std::vector<uint32_t> g_queue;
static double g_sample = 0;
static uint32_t g_response = 0;
static double g_start = 0;
// Per socket, the highest sequence number sent so far: a data segment below it is a
// retransmission.
static std::map<const TcpSocketBase*, SequenceNumber32> g_high;

// Per sender: its RTO and congestion state as last traced, its timeouts, and the segments
// (indices from 0) the receiver's port dropped.
static std::vector<double> g_rto;
static std::vector<TcpSocketState::TcpCongState_t> g_state;
static std::vector<uint32_t> g_senderTimeouts;
static std::vector<std::vector<uint32_t>> g_dropped;
// Timeouts by the congestion state the sender was in when its timer expired.
static std::map<std::string, uint32_t> g_timeoutStates;
static std::map<uint32_t, uint32_t> g_senderOf;  // IPv4 address -> sender
// Per sender, its window and bytes in flight as last traced; at each timeout, both (bytes).
static std::vector<uint32_t> g_cwnd, g_inFlight;
static std::vector<std::pair<uint32_t, uint32_t>> g_timeoutWindows;
// Per sender, the highest sequence sent and acknowledged; at each entry into fast recovery, the
// slow-start threshold it set and the flight size (highest sent less highest acknowledged).
static std::vector<uint32_t> g_highTx, g_highAck;
static std::vector<bool> g_entering;
static std::vector<std::pair<uint32_t, uint32_t>> g_recoveryWindows;

static void
HighTx(uint32_t i, SequenceNumber32, SequenceNumber32 now)
{
    g_highTx[i] = now.GetValue();
}

static void
HighAck(uint32_t i, SequenceNumber32, SequenceNumber32 now)
{
    g_highAck[i] = now.GetValue();
}

static void
SsThresh(uint32_t i, uint32_t, uint32_t now)
{
    if (g_entering[i])
    {
        g_recoveryWindows.emplace_back(now, g_highTx[i] - g_highAck[i]);
        g_entering[i] = false;
    }
}

static void
Cwnd(uint32_t i, uint32_t, uint32_t now)
{
    g_cwnd[i] = now;
}

static void
InFlight(uint32_t i, uint32_t, uint32_t now)
{
    g_inFlight[i] = now;
}

static void
Rto(uint32_t i, Time before, Time after)
{
    g_rto[i] = after.GetSeconds();
    // ReTxTimeout doubles the RTO before it enters CA_LOSS, so g_state is the state it left.
    if (after == before + before || (after == Seconds(60) && before > Seconds(30)))
    {
        g_timeouts++;
        g_senderTimeouts[i]++;
        g_timeoutStates[TcpSocketState::TcpCongStateName[g_state[i]]]++;
        g_timeoutWindows.emplace_back(g_cwnd[i], g_inFlight[i]);
    }
}

static void
CongState(uint32_t i, TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
{
    g_state[i] = to;
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY)
    {
        g_recoveries++;
        g_entering[i] = true;  // EnterRecovery sets the threshold next
    }
}

// The port's drops per 100 us after the start.
static std::vector<uint32_t> g_dropsByTime;

static void
PortDrop(Ptr<const QueueDiscItem> item)
{
    auto bin = size_t(std::max(0.0, (Simulator::Now().GetSeconds() - g_start) * 1e4));
    if (g_dropsByTime.size() <= bin)
    {
        g_dropsByTime.resize(bin + 1, 0);
    }
    g_dropsByTime[bin]++;
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    TcpHeader tcp;
    if (ip && ip->GetPacket()->PeekHeader(tcp) && g_senderOf.count(ip->GetHeader().GetSource().Get()))
    {
        g_dropped[g_senderOf[ip->GetHeader().GetSource().Get()]].push_back((tcp.GetSequenceNumber().GetValue() - 1) / 1460);
    }
}

static void
Tx(Ptr<const Packet> p, const TcpHeader& header, Ptr<const TcpSocketBase> socket)
{
    if (p->GetSize() == 0)
    {
        return;
    }
    SequenceNumber32 end = header.GetSequenceNumber() + p->GetSize();
    auto it = g_high.find(PeekPointer(socket));
    if (it == g_high.end())
    {
        g_high[PeekPointer(socket)] = end;
    }
    else if (end <= it->second)
    {
        g_retransmits++;
    }
    else
    {
        it->second = end;
    }
}

// `--trace=i`: sender i's segments, ACKs and windows, one line each, on stderr.
static void
TraceTx(Ptr<const Packet> p, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() > 0)
    {
        std::cerr << Simulator::Now().GetMicroSeconds() - g_start * 1e6 << " us  tx seg "
                  << (header.GetSequenceNumber().GetValue() - 1) / 1460 << std::endl;
    }
}

static void
TraceRx(Ptr<const Packet>, const TcpHeader& header, Ptr<const TcpSocketBase> socket)
{
    std::cerr << Simulator::Now().GetMicroSeconds() - g_start * 1e6 << " us  ack "
              << (header.GetAckNumber().GetValue() - 1) / 1460.0 << ((header.GetFlags() & TcpHeader::ECE) ? " ECE" : "");
    if (header.HasOption(TcpOption::SACK))
    {
        auto sack = DynamicCast<const TcpOptionSack>(header.GetOption(TcpOption::SACK));
        for (const auto& [a, b] : sack->GetSackList())
        {
            std::cerr << " sack " << (a.GetValue() - 1) / 1460 << "-" << (b.GetValue() - 1) / 1460;
        }
    }
    std::cerr << std::endl;
}

static void
TraceValue(std::string name, uint32_t, uint32_t now)
{
    std::cerr << Simulator::Now().GetMicroSeconds() - g_start * 1e6 << " us  " << name << " " << now / 1460.0 << std::endl;
}

static void
TraceState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t to)
{
    std::cerr << Simulator::Now().GetMicroSeconds() - g_start * 1e6 << " us  state " << TcpSocketState::TcpCongStateName[to] << std::endl;
}

static void
SampleQueue()
{
    g_queue.push_back(g_port->GetNPackets());
    if (g_left > 0)
    {
        Simulator::Schedule(NanoSeconds(int64_t(g_sample * 1000)), &SampleQueue);
    }
}

static void
Received(uint32_t i, Ptr<const Packet> p, const Address&)
{
    g_received[i] += p->GetSize();
    if (g_done[i] < 0 && g_received[i] >= g_response)
    {
        g_done[i] = Simulator::Now().GetSeconds() - g_start;
        if (--g_left == 0)
        {
            // Leave time for the last ACKs; nothing else is in flight.
            Simulator::Stop(MilliSeconds(1));
        }
    }
}

int
main(int argc, char* argv[])
{
    uint32_t senders = 8, response = 65536, k = 65, buffer = 200;
    double warmup = 0.001, end = 10;
    std::string cc = "dctcp", rate = "10Gbps", offsets = "";
    int trace = -1;
    CommandLine cmd;
    cmd.AddValue("trace", "print this sender's segments, ACKs and windows on stderr", trace);
    cmd.AddValue("sample", "sample the receiver's port's queue every this many us (0: off)", g_sample);
    cmd.AddValue("senders", "N", senders);
    cmd.AddValue("response", "bytes each sender sends", response);
    cmd.AddValue("offsets", "microseconds after the start, per sender, comma-separated", offsets);
    // `warmup` is the start of the responses here; `end` a limit (seconds after it).
    AddCommonOptions(cmd, cc, k, buffer, rate, warmup, end);
    cmd.Parse(argc, argv);

    ConfigureLikeClos(cc, k, buffer);
    g_response = response;
    g_start = warmup;
    g_received.assign(senders, 0);
    g_done.assign(senders, -1);
    g_left = senders;
    g_rto.assign(senders, -1);
    g_state.assign(senders, TcpSocketState::CA_OPEN);
    g_senderTimeouts.assign(senders, 0);
    g_dropped.assign(senders, {});
    g_cwnd.assign(senders, 0);
    g_highTx.assign(senders, 0);
    g_highAck.assign(senders, 0);
    g_entering.assign(senders, false);
    g_inFlight.assign(senders, 0);
    std::vector<double> offset(senders, 0);
    if (!offsets.empty())
    {
        std::stringstream ss(offsets);
        std::string item;
        for (uint32_t i = 0; i < senders && std::getline(ss, item, ','); i++)
        {
            offset[i] = std::stod(item);
        }
    }

    NodeContainer hosts;
    std::vector<Ipv4Address> hostAddress;
    TrafficControlHelper q;
    if (cc == "dctcp")
    {
        q.SetRootQueueDisc("ns3::RedQueueDisc");
    }
    else
    {
        q.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(buffer) + "p"));
    }
    Ptr<QueueDisc> port = BuildStar(senders, rate, q, hosts, hostAddress);
    port->TraceConnectWithoutContext("Drop", MakeCallback(&PortDrop));
    for (uint32_t i = 0; i < senders; i++)
    {
        g_senderOf[hostAddress[i].Get()] = i;
    }

    Ptr<Node> receiver = hosts.Get(senders);
    std::vector<Ptr<Socket>> sockets;
    for (uint32_t i = 0; i < senders; i++)
    {
        uint16_t p = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), p));
        ApplicationContainer a = sink.Install(receiver);
        a.Start(Seconds(0));
        a.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&Received, i));
        Ptr<Socket> s = Socket::CreateSocket(hosts.Get(i), TcpSocketFactory::GetTypeId());
        s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&Rto, i));
        s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongState, i));
        s->TraceConnectWithoutContext("Tx", MakeCallback(&Tx));
        s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&Cwnd, i));
        s->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&InFlight, i));
        s->TraceConnectWithoutContext("HighestSequence", MakeBoundCallback(&HighTx, i));
        s->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&HighAck, i));
        s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&SsThresh, i));
        sockets.push_back(s);
        if (int(i) == trace)
        {
            s->TraceConnectWithoutContext("Tx", MakeCallback(&TraceTx));
            s->TraceConnectWithoutContext("Rx", MakeCallback(&TraceRx));
            s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&TraceValue, std::string("cwnd")));
            s->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&TraceValue, std::string("in flight")));
            s->TraceConnectWithoutContext("CongState", MakeCallback(&TraceState));
        }
        Simulator::Schedule(NanoSeconds(1), [s, p, &hostAddress, senders]() {
            s->Bind();
            s->Connect(InetSocketAddress(hostAddress[senders], p));
        });
        Simulator::Schedule(Seconds(warmup) + NanoSeconds(int64_t(offset[i] * 1000)), [s, response]() {
            NS_ABORT_MSG_UNLESS(s->Send(Create<Packet>(response)) == int(response), "the response did not fit the send buffer");
        });
    }
    double rtoAtStart = 0;
    Simulator::Schedule(Seconds(warmup), [&]() {
        // Expiries before the start (none: the handshakes are long done) are not counted.
        g_timeouts = 0;
        g_senderTimeouts.assign(senders, 0);
        g_timeoutStates.clear();
        g_timeoutWindows.clear();
        rtoAtStart = g_rto[0];
        if (g_sample > 0)
        {
            g_port = port;
            SampleQueue();
        }
    });
    Simulator::Stop(Seconds(warmup + end));
    Simulator::Run();

    const QueueDisc::Stats& st = port->GetStats();
    std::cout << "{\"done\": [";
    for (uint32_t i = 0; i < senders; i++)
    {
        std::cout << (i ? ", " : "") << g_done[i];
    }
    std::cout << "], \"timeouts\": " << g_timeouts << ", \"retransmits\": " << g_retransmits
              << ", \"fast_recoveries\": " << g_recoveries << ", \"drops\": " << st.nTotalDroppedPackets
              << ", \"marks\": "
              << st.GetNMarkedPackets(RedQueueDisc::UNFORCED_MARK) + st.GetNMarkedPackets(RedQueueDisc::FORCED_MARK)
              << ", \"rto_at_start\": " << rtoAtStart << ", \"sender_timeouts\": [";
    for (uint32_t i = 0; i < senders; i++)
    {
        std::cout << (i ? ", " : "") << g_senderTimeouts[i];
    }
    std::cout << "], \"timeout_states\": {";
    bool first = true;
    for (const auto& [state, n] : g_timeoutStates)
    {
        std::cout << (first ? "" : ", ") << "\"" << state << "\": " << n;
        first = false;
    }
    std::cout << "}, \"timeout_windows\": [";
    for (uint32_t j = 0; j < g_timeoutWindows.size(); j++)
    {
        std::cout << (j ? ", [" : "[") << g_timeoutWindows[j].first << ", " << g_timeoutWindows[j].second << "]";
    }
    std::cout << "], \"recovery_windows\": [";
    for (uint32_t j = 0; j < g_recoveryWindows.size(); j++)
    {
        std::cout << (j ? ", [" : "[") << g_recoveryWindows[j].first << ", " << g_recoveryWindows[j].second << "]";
    }
    std::cout << "], \"dropped_segments\": [";
    for (uint32_t i = 0; i < senders; i++)
    {
        std::cout << (i ? ", [" : "[");
        for (uint32_t j = 0; j < g_dropped[i].size(); j++)
        {
            std::cout << (j ? ", " : "") << g_dropped[i][j];
        }
        std::cout << "]";
    }
    std::cout << "], \"drops_per_100us\": [";
    for (uint32_t j = 0; j < g_dropsByTime.size(); j++)
    {
        std::cout << (j ? ", " : "") << g_dropsByTime[j];
    }
    std::cout << "], \"queue\": [";
    for (uint32_t j = 0; j < g_queue.size(); j++)
    {
        std::cout << (j ? ", " : "") << g_queue[j];
    }
    std::cout << "]}" << std::endl;
    Simulator::Destroy();
    return 0;
}
