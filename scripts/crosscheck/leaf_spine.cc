// ns-3's side of the leaf-spine cross-check (docs/validation.md, "Beside ns-3"): a leaf-spine of
// `leaves` x `spines` with `hosts` per leaf, every link at `rate` with 1 us of delay, switch
// ports holding `buffer` packets and marking CE above `k` (RED as a step, as DCTCP wants), and
// long DCTCP flows between the host pairs `pairs` names ("0-5,1-7,...").
//
// Two routings. Without `paths`: global routing with RandomEcmpRouting picks a random equal-cost
// next hop for every packet at every switch: per-packet spraying, clos's `spray-random`. With
// `paths` ("0:2,3:1,...", one "data spine:ACK spine" per flow, in the order of `pairs`): per-flow
// paths fixed from outside. ns-3 3.44's global routing has no per-flow ECMP (only the per-packet
// RandomEcmpRouting), so each leaf gets a routing protocol of our own ahead of global routing,
// FlowRouting below, that forwards by source address, destination address and the flow's port
// (5000 + i, the receiver's: the data's destination port, the ACKs' source port; an address
// pair alone would not do, as a permutation may hold both a -> b and b -> a, whose data and ACKs
// share the pair): flow i's data goes up from its source's leaf to its data spine and its ACKs
// up from its destination's leaf to its ACK spine, the choices clos's ECMP hash made (run.py
// reads them from clos). A spine has one way down to each leaf, which global routing gives. The
// spines record what they forwarded, so the program reports the spine each flow's data and
// ACKs actually crossed.
//
// Hosts: by default each NIC has one FIFO of 10,000 packets for data and ACKs (clos's `[host]
// qdisc = "fifo"`, `tsq = "off"`). With `hostfq` it has fq_codel with CoDel switched off (a
// target of 1,000 s), ACKs served ahead of data as under clos's default `fq` host; unlike clos,
// which keeps a flow's excess window inside TCP, ns-3 keeps it in that qdisc, in the RTT. With
// `bytes` the switch ports count bytes, K and the buffer in 1,500-byte packets, as clos's do.
//
// Prints one JSON object: each flow's goodput between the warm-up and the end, in the order of
// `pairs`; each host's mean wait in its NIC's queue disc over the run (us); fast recoveries and
// timeouts over all senders; drops, CE marks and CE marks on data packets over all switch ports,
// and per port [packets sent, dropped, marked, data packets dropped, data packets marked]; with
// `paths`, the spines observed per flow (-1: none, -2: more than one).
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
#include <tuple>
#include <vector>

using namespace ns3;

// Fast recoveries and timeouts, over every sender's socket (the reordering question).
static uint64_t g_recoveries = 0;
static uint64_t g_timeouts = 0;

static void
CongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
{
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY)
    {
        g_recoveries++;
    }
    if (to == TcpSocketState::CA_LOSS && from != TcpSocketState::CA_LOSS)
    {
        g_timeouts++;
    }
}

// A TCP packet's flow as FlowRouting sees it: source and destination address, and the lower of
// its two ports (the receiver's 5000 + i; the sender's is an ephemeral port above 49152).
using FlowKey = std::tuple<uint32_t, uint32_t, uint16_t>;

static FlowKey
KeyOf(Ptr<const Packet> p, const Ipv4Header& header)
{
    TcpHeader tcp;
    p->PeekHeader(tcp);
    return {header.GetSource().Get(), header.GetDestination().Get(),
            std::min(tcp.GetSourcePort(), tcp.GetDestinationPort())};
}

// Forwarding by FlowKey; a packet not in the table falls through to the next protocol of the
// node's Ipv4ListRouting (global routing).
class FlowRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ClosCrosscheckFlowRouting")
                                .SetParent<Ipv4RoutingProtocol>()
                                .AddConstructor<FlowRouting>();
        return tid;
    }

    void Add(Ipv4Address src, Ipv4Address dst, uint16_t port, uint32_t interface, Ipv4Address gateway)
    {
        m_table[{src.Get(), dst.Get(), port}] = {interface, gateway};
    }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header&, Ptr<NetDevice>, Socket::SocketErrno& err) override
    {
        err = Socket::ERROR_NOROUTETOHOST;
        return nullptr;
    }

    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice>,
                    const UnicastForwardCallback& ucb,
                    const MulticastForwardCallback&,
                    const LocalDeliverCallback&,
                    const ErrorCallback&) override
    {
        auto it = m_table.find(KeyOf(p, header));
        if (it == m_table.end())
        {
            return false;
        }
        Ptr<Ipv4Route> route = Create<Ipv4Route>();
        route->SetDestination(header.GetDestination());
        route->SetGateway(it->second.second);
        route->SetSource(m_ipv4->GetAddress(it->second.first, 0).GetLocal());
        route->SetOutputDevice(m_ipv4->GetNetDevice(it->second.first));
        ucb(route, p, header);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}

  private:
    Ptr<Ipv4> m_ipv4;
    std::map<FlowKey, std::pair<uint32_t, Ipv4Address>> m_table;
};

// Per switch port, the data packets (with payload) it dropped and CE-marked: ns-3's DCTCP sends
// its pure ACKs ECN-capable (TcpSocketBase::AddSocketTags, DctcpEcn mode), clos's are not, so
// ns-3's ports also mark ACKs.
static std::vector<uint64_t> g_dataDrops, g_dataMarks;

static bool
IsData(Ptr<const QueueDiscItem> item)
{
    return item->GetSize() > 100;
}

static void
PortDrop(size_t port, Ptr<const QueueDiscItem> item)
{
    g_dataDrops[port] += IsData(item);
}

static void
PortMark(size_t port, Ptr<const QueueDiscItem> item, const char*)
{
    g_dataMarks[port] += IsData(item);
}

// Per host, the time packets (data and ACKs) waited in its NIC's queue disc: sum and count.
static std::vector<double> g_hostWait;
static std::vector<uint64_t> g_hostPackets;

static void
HostSojourn(size_t host, Time wait)
{
    g_hostWait[host] += wait.GetSeconds();
    g_hostPackets[host]++;
}

// FlowKey -> the spine that forwarded its packets (-2 once two have).
static std::map<FlowKey, int> g_seen;

static void
SpineForward(int spine, const Ipv4Header& header, Ptr<const Packet> p, uint32_t)
{
    FlowKey key = KeyOf(p, header);
    auto it = g_seen.find(key);
    if (it == g_seen.end())
    {
        g_seen[key] = spine;
    }
    else if (it->second != spine)
    {
        it->second = -2;
    }
}

static std::vector<std::pair<uint32_t, uint32_t>>
ParsePairs(const std::string& text, char sep)
{
    std::vector<std::pair<uint32_t, uint32_t>> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        size_t at = item.find(sep);
        out.emplace_back(std::stoul(item.substr(0, at)), std::stoul(item.substr(at + 1)));
    }
    return out;
}

int
main(int argc, char* argv[])
{
    uint32_t leaves = 4, spines = 4, hosts = 4, k = 65, buffer = 200;
    double warmup = 0.02, end = 0.1;
    bool sack = false, hostfq = false, bytes = false;
    std::string rate = "10Gbps", pairs = "0-4", cc = "dctcp", paths = "";
    CommandLine cmd;
    cmd.AddValue("leaves", "leaves", leaves);
    cmd.AddValue("spines", "spines", spines);
    cmd.AddValue("hosts", "hosts per leaf", hosts);
    cmd.AddValue("pairs", "src-dst,src-dst,...", pairs);
    cmd.AddValue("paths", "per flow, data spine:ACK spine,...; empty: per-packet spraying", paths);
    cmd.AddValue("sack", "SACK (off by default: see below)", sack);
    cmd.AddValue("hostfq", "fq_codel without CoDel at the hosts instead of a FIFO", hostfq);
    cmd.AddValue("bytes", "switch ports count bytes (K and buffer x 1,500 B), as clos's do", bytes);
    AddCommonOptions(cmd, cc, k, buffer, rate, warmup, end);
    cmd.Parse(argc, argv);

    ConfigureLikeClos(cc, k, buffer, bytes);
    Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(paths.empty()));
    // ns-3 3.44's TCP asserts when reordered packets bring several duplicate ACKs before it
    // leaves the open state with SACK on ("From OPEN->DISORDER but with 7 dup ACKs"), which
    // spraying does at once; both sides spray without SACK (clos: transport.sack = false).
    // Per-flow paths do not reorder, and run.py turns SACK on for them, as clos's default.
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));

    NodeContainer h(leaves * hosts), leaf(leaves), spine(spines);
    InternetStackHelper stack;
    stack.InstallAll();
    PointToPointHelper link = ClosLink(rate);
    Ipv4AddressHelper addresses;
    uint32_t subnet = 0;
    std::vector<Ipv4Address> hostAddress;
    // The leaf's interface toward each spine, and the spine's address on that link.
    std::vector<std::vector<uint32_t>> upInterface(leaves, std::vector<uint32_t>(spines));
    std::vector<std::vector<Ipv4Address>> upGateway(leaves, std::vector<Ipv4Address>(spines));
    // Every switch port's queue disc, by clos's link name ("tor0->spine1", "tor0->h3").
    std::vector<std::pair<std::string, Ptr<QueueDisc>>> switchPorts;
    TrafficControlHelper none, red, fifo, fq;
    red.SetRootQueueDisc("ns3::RedQueueDisc");
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("10000p"));
    fq.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue("10000p"), "Target", StringValue("1000s"),
                        "Interval", StringValue("10000s"));
    auto connect = [&](Ptr<Node> a, Ptr<Node> b, bool aIsHost, std::string aName, std::string bName) {
        NetDeviceContainer d = link.Install(a, b);
        std::string net = "10." + std::to_string(subnet / 250) + "." + std::to_string(subnet % 250) + ".0";
        subnet++;
        addresses.SetBase(net.c_str(), "255.255.255.0");
        Ipv4InterfaceContainer ifs = addresses.Assign(d);
        none.Uninstall(d);
        if (aIsHost)
        {
            size_t host = g_hostWait.size();
            g_hostWait.push_back(0);
            g_hostPackets.push_back(0);
            (hostfq ? fq : fifo).Install(d.Get(0)).Get(0)->TraceConnectWithoutContext(
                "SojournTime", MakeBoundCallback(&HostSojourn, host));
        }
        else
        {
            switchPorts.emplace_back(aName + "->" + bName, red.Install(d.Get(0)).Get(0));
        }
        switchPorts.emplace_back(bName + "->" + aName, red.Install(d.Get(1)).Get(0));
        return ifs;
    };
    for (uint32_t i = 0; i < leaves * hosts; i++)
    {
        hostAddress.push_back(
            connect(h.Get(i), leaf.Get(i / hosts), true, "h" + std::to_string(i), "tor" + std::to_string(i / hosts)).GetAddress(0));
    }
    for (uint32_t l = 0; l < leaves; l++)
    {
        for (uint32_t s = 0; s < spines; s++)
        {
            Ipv4InterfaceContainer ifs =
                connect(leaf.Get(l), spine.Get(s), false, "tor" + std::to_string(l), "spine" + std::to_string(s));
            upInterface[l][s] = ifs.Get(0).second;
            upGateway[l][s] = ifs.GetAddress(1);
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    g_dataDrops.assign(switchPorts.size(), 0);
    g_dataMarks.assign(switchPorts.size(), 0);
    for (size_t i = 0; i < switchPorts.size(); i++)
    {
        switchPorts[i].second->TraceConnectWithoutContext("Drop", MakeBoundCallback(&PortDrop, i));
        switchPorts[i].second->TraceConnectWithoutContext("Mark", MakeBoundCallback(&PortMark, i));
    }

    auto flows = ParsePairs(pairs, '-');
    if (!paths.empty())
    {
        auto chosen = ParsePairs(paths, ':');
        NS_ABORT_MSG_UNLESS(chosen.size() == flows.size(), "one data:ACK spine per flow");
        std::vector<Ptr<FlowRouting>> table(leaves);
        for (uint32_t l = 0; l < leaves; l++)
        {
            table[l] = CreateObject<FlowRouting>();
            Ptr<Ipv4> ipv4 = leaf.Get(l)->GetObject<Ipv4>();
            DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol())->AddRoutingProtocol(table[l], 10);
            table[l]->SetIpv4(ipv4);
        }
        for (uint32_t i = 0; i < flows.size(); i++)
        {
            uint32_t a = flows[i].first, b = flows[i].second, up = chosen[i].first, back = chosen[i].second;
            uint16_t port = 5000 + i;
            table[a / hosts]->Add(hostAddress[a], hostAddress[b], port, upInterface[a / hosts][up], upGateway[a / hosts][up]);
            table[b / hosts]->Add(hostAddress[b], hostAddress[a], port, upInterface[b / hosts][back], upGateway[b / hosts][back]);
        }
        for (uint32_t s = 0; s < spines; s++)
        {
            spine.Get(s)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext(
                "UnicastForward", MakeBoundCallback(&SpineForward, int(s)));
        }
    }

    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows.size(); i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer a = sink.Install(h.Get(flows[i].second));
        sinks.push_back(DynamicCast<PacketSink>(a.Get(0)));
        BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(hostAddress[flows[i].second], port));
        send.SetAttribute("MaxBytes", UintegerValue(0));
        send.Install(h.Get(flows[i].first));
    }
    std::vector<uint64_t> atWarmup(flows.size(), 0);
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (uint32_t i = 0; i < flows.size(); i++)
        {
            atWarmup[i] = sinks[i]->GetTotalRx();
        }
    });
    // The senders' sockets exist once the applications have started.
    Simulator::Schedule(MicroSeconds(1), []() {
        Config::ConnectWithoutContext("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState", MakeCallback(&CongState));
    });
    Simulator::Stop(Seconds(end));
    Simulator::Run();
    uint64_t drops = 0, marks = 0, dataMarks = 0;
    std::ostringstream ports;
    for (size_t i = 0; i < switchPorts.size(); i++)
    {
        const QueueDisc::Stats& st = switchPorts[i].second->GetStats();
        uint64_t m = st.GetNMarkedPackets(RedQueueDisc::UNFORCED_MARK) + st.GetNMarkedPackets(RedQueueDisc::FORCED_MARK);
        drops += st.nTotalDroppedPackets;
        marks += m;
        dataMarks += g_dataMarks[i];
        ports << (ports.tellp() ? ", " : "") << "\"" << switchPorts[i].first << "\": [" << st.nTotalSentPackets << ", "
              << st.nTotalDroppedPackets << ", " << m << ", " << g_dataDrops[i] << ", " << g_dataMarks[i] << "]";
    }
    std::cout << "{\"flows\": [";
    for (uint32_t i = 0; i < flows.size(); i++)
    {
        std::cout << (i ? ", " : "") << (sinks[i]->GetTotalRx() - atWarmup[i]) * 8.0 / (end - warmup);
    }
    std::cout << "], \"host_wait_us\": [";
    for (size_t i = 0; i < g_hostWait.size(); i++)
    {
        std::cout << (i ? ", " : "") << (g_hostPackets[i] ? g_hostWait[i] / g_hostPackets[i] * 1e6 : 0);
    }
    std::cout << "], \"fast_recoveries\": " << g_recoveries << ", \"timeouts\": " << g_timeouts
              << ", \"drops\": " << drops << ", \"marks\": " << marks << ", \"data_marks\": " << dataMarks
              << ", \"ports\": {" << ports.str() << "}";
    if (!paths.empty())
    {
        auto seen = [&](uint32_t src, uint32_t dst, uint16_t port) {
            auto it = g_seen.find({hostAddress[src].Get(), hostAddress[dst].Get(), port});
            return it == g_seen.end() ? -1 : it->second;
        };
        std::cout << ", \"data_spines\": [";
        for (uint32_t i = 0; i < flows.size(); i++)
        {
            std::cout << (i ? ", " : "") << seen(flows[i].first, flows[i].second, 5000 + i);
        }
        std::cout << "], \"ack_spines\": [";
        for (uint32_t i = 0; i < flows.size(); i++)
        {
            std::cout << (i ? ", " : "") << seen(flows[i].second, flows[i].first, 5000 + i);
        }
        std::cout << "]";
    }
    std::cout << "}" << std::endl;
    Simulator::Destroy();
    return 0;
}
