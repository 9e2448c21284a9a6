"""One ns-3 run of a counterexample's path, with ns-3's own TCP, in real units.

This module imports nothing of ccac and imports ns-3 only inside :func:`simulate`: it is the
simulation half of ``ccac replay --engine ns3`` (:mod:`ccac.testbed.ns3_replay` builds its
scenario from a trace and reads its samples back) and, verbatim, the body of the standalone
script ``ccac export --format ns3`` writes. A scenario is a plain dict:

* ``step_ns``: how long one step of the trace lasts; ``steps``: how many steps are sampled.
* ``segment``: the TCP payload of one segment (bytes).
* ``server``: the bottleneck's server, in segments. Either the trace's token bucket: ``rate``
  (tokens per step: the link's C), ``tokens`` (its token line at step 0, less what the trace
  served before it), per step ``lag`` (how many steps the trace's service trailed its token
  line) and ``margin`` (the tokens the trace kept above the bytes admitted), ``buffer`` (the
  model's buffer against the token line; None: the queue disc's fixed size only) and ``cap``
  (per step, what the trace admitted where it lost bytes, -1 elsewhere); or the trace's
  fixed delivery schedule: ``opportunities``, per step how many segments it delivers (the
  trace's service curve in whole segments).
* ``queue_packets``: the drop-tail buffer at the bottleneck in packets (None: unbounded);
  ``socket_buffer``: each socket's send and receive buffer (bytes).
* ``flows``: per flow ``tcp`` (an ns-3 TypeId name such as ``ns3::TcpNewReno``), ``rtt_ns``
  (its minimum RTT), and either ``initial_cwnd`` (segments) with, optionally,
  ``initial_ssthresh`` (the initial slow-start threshold in segments; ``initial_cwnd`` if not
  given: no slow start), or ``open_step`` (k >= 1: the connection opens at step k, with ns-3's
  own initial window and threshold, whatever an earlier run set); optionally ``hold`` (by
  service step, how many steps the flow's jitter box holds what the bottleneck served then),
  ``recovery`` (the loss recovery's TypeId name, ``TcpL4Protocol::RecoveryType``; ns-3's default
  ``ns3::TcpPrrRecovery`` if not given) and ``attributes`` (attributes of the flow's congestion
  control object, name to value as text, e.g. ``{"HyStart": "false"}`` for ``ns3::TcpCubic``; set
  on the flow's own object once its socket exists, before its handshake completes, so no other
  socket or run is affected).

The network: sender n --[access: 100 Gbit/s, no delay]-- left router --[bottleneck]-- right
router --[egress n: 100 Gbit/s but for the box, (rtt_ns - step_ns/100)/2 each way]-- receiver n. A segment
reaches the bottleneck when it is sent, and its ACK is back a hundredth of a step less than
rtt_ns after the bottleneck delivered it: the server's timing repeats every step, and the
segments an ACK releases must reach the bottleneck before the service R steps after the
one that served the acknowledged segment (the model's senders send before its bottleneck
serves), not a few nanoseconds after it.

Step t of the trace is the interval ((t-1) step, t step] after the start; the path starts
empty (the trace's service before step 0 is not replayed). When a data segment begins its
transmission (the device's PhyTxBegin), the link's DataRate is set so that the transmission
ends exactly when the server lets the segment go:

* **Token bucket.** Tokens arrive at C per step. By instant x (in steps) the bottleneck may
  have delivered what its token line held lag(x) steps earlier, the lag going straight from
  step t-1's to step t's; within step t the token line rises at C, up to the segments queued
  so far plus step t's margin, and at the step's end it closes there: the tokens beyond the
  queue and the margin are wasted (a sender that sends more than the trace's gets more
  tokens, up to the link's C). A segment ends at the earliest instant the bucket allows it,
  reckoned when it starts from the segments queued then: a segment arriving later in the
  step can raise the token line but does not hasten the one already on the wire.
* **Fixed schedule.** Step t's opportunities are spread evenly over the step (step 0 offers
  none); a segment ends at the next opportunity not yet passed, and an opportunity no
  segment waits for is lost, as with mm-link's delivery traces.

Segments without payload (handshake, ACKs) cross at 100 Gbit/s. The buffer is a
``FifoQueueDisc`` of queue_packets - 2 packets, plus the device's queue of 1 packet and the
segment on the wire waiting for its turn; with the token bucket's ``buffer`` (segments), the
model's buffer: a data segment of step t is admitted only while the segments admitted stay
within ``buffer`` beyond the most step t's tokens reach and within ``cap[t]`` where the trace
lost (the queue disc's limit is set as each packet reaches it). Every receiver ACKs every
segment (``DelAckCount`` 1); everything else is ns-3's default TCP (SACK, timestamps, a
minimum RTO of 1 s).

Each flow's connection opens before the trace starts; step 0 is a hundredth of a step after
the last handshake completes. A flow without ``open_step`` sends its initial window as its
handshake completes; a flow with one sends nothing until a hundredth of a step after step
k - 1 ends (its socket fed as ns-3's BulkSendApplication feeds the others). Flow n's box is on
its egress device (the router's side): a data segment served at instant x of step s leaves it
(its transmission ends) at x + hold[s] steps, or when the segment before it left if later, so
its ACK comes back that much later; a flow without ``hold`` has none. At each step boundary
(plus 1 microsecond, so a segment delivered at the boundary counts) :func:`simulate` samples per
flow: payload bytes that reached the bottleneck (``sent``, retransmissions included), that
its queue dropped (``lost``), that it delivered (``served``), that passed the flow's box
(``released``: ``served`` without a box), that the sender retransmitted
(``resent``), retransmission timeouts so far (``timeouts``: entries into CA_LOSS), the
congestion window (bytes), the pacing rate (bit/s, 0 when the TCP does not pace) and the
bytes in flight as the sender's scoreboard counts them (``inflight``: RFC 6675's pipe) and the
bytes of the segments it has ever marked lost (``marked``: each segment once, polled after every
segment it receives); and the server's token line at each step (segments; for the schedule, the segments it offered).
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from math import ceil
from typing import Any, Iterator

FAST = "100Gbps"          # access, egress and the ACK direction of the bottleneck: never a queue
SAMPLE_AFTER_NS = 1_000   # a sample is taken this long after its step boundary
NOISE = "[runStaticInitializersOnce]"  # cling's harmless start-up lines (ns-3 from PyPI)

# Counters and the bottleneck's server (schedule or token bucket), in C++ so that no Python runs per packet.
HELPERS = r"""
namespace tracepath {
using namespace ns3;

struct Flow {
  uint64_t sent = 0, lost = 0, served = 0, released = 0, resent = 0, timeouts = 0, pacing = 0, inflight = 0;
  uint64_t marked = 0;
  uint32_t cwnd = 0, ssthresh = 0;
  std::set<uint32_t> markedSegments;  // segments (by index) the sender has ever marked lost
  // The flow's box, after the bottleneck on its own path: its egress device, by service step
  // how many steps it holds a segment, and when each segment it has not yet let through left
  // the bottleneck (segments reach it in the order served).
  Ptr<PointToPointNetDevice> box;
  std::vector<int64_t> hold;
  std::deque<int64_t> servedAt;
};
std::vector<Flow> flows;
std::vector<Ptr<TcpSocketBase>> senders;  // by flow
std::map<uint32_t, size_t> flowOf;      // IPv4 source address -> flow
Ptr<PointToPointNetDevice> bottleneck;
DataRate fast("100Gbps");
double segment = 1;                     // payload bytes of one segment

// The fixed delivery schedule: its opportunities (ns, ascending), the next one not yet passed.
std::vector<int64_t> opportunities;
size_t nextOpportunity = 0;

// The run's clock: step 0 is at `start` ns, each step lasts `step` ns.
int64_t start = 0, step = 1;
void Clock(int64_t startNs, int64_t stepNs) { start = startNs; step = stepNs; }

// The trace's token bucket, in segments and in steps since step 0: tokens arrive at `rate`
// per step; the bottleneck may have delivered by instant x what its token line held lag(x) steps
// earlier; a step closes with its tokens wasted beyond the segments queued so far plus the
// trace's margin. `line`: the token line at each closed step.
bool bucket = false;
double rate = 0, queued = 0, begun = 0;  // segments admitted to the queue; segments put on the wire
std::vector<double> lag, margin, line;   // by step
// The model's buffer (segments; negative: none but the queue disc's fixed size), the bottleneck's
// queue disc and its interface on router 0 (BeforeEnqueue).
double buffer = -1;
std::vector<double> cap;  // by step: what the trace admitted where it lost (negative elsewhere)
Ptr<QueueDisc> disc;
int32_t discInterface = -1;

void Reset() {
  flows.clear(); senders.clear(); flowOf.clear(); bottleneck = nullptr; opportunities.clear(); nextOpportunity = 0;
  bucket = false; queued = begun = 0; lag.clear(); margin.clear(); line.clear();
  buffer = -1; cap.clear(); disc = nullptr; discInterface = -1;
}

// The token line step t closes with after `before` at step t-1: C more, none beyond the
// segments queued so far plus the trace's margin, never less than before.
double Close(double before, size_t t) { return std::min(before + rate, std::max(before, queued + margin[t])); }
void CloseStep(size_t t) { line.push_back(Close(line.back(), t)); }

void UseBucket(double tokensPerStep, double tokens0, std::vector<double> lags, std::vector<double> margins) {
  bucket = true; rate = tokensPerStep; lag = lags; margin = margins;
  line = {tokens0};
  for (size_t t = 1; t < lag.size(); ++t)
    Simulator::Schedule(NanoSeconds(start + int64_t(t) * step) - Simulator::Now(), &CloseStep, t);
}

// The token line at y steps as it stands in step t >= 1 (y <= t), `at` holding steps 0 .. t-1:
// rising at C before step 0, straight between closed steps, and in step t rising at C up to
// what the step would close with now.
double Line(const std::vector<double>& at, size_t t, double y) {
  if (y > t - 1.0) return std::min(at[t - 1] + rate * (y - (t - 1.0)), Close(at[t - 1], t));
  if (y <= 0) return at[0] + rate * y;
  size_t j = size_t(std::floor(y));
  return j + 1 == t ? at[j] : at[j] + (y - j) * (at[j + 1] - at[j]);
}

// What the bucket lets the bottleneck have delivered by instant x (steps) of step t = ceil(x):
// the token line lag(x) steps earlier, the lag going straight from step t-1's to step t's.
double Allowed(const std::vector<double>& at, size_t t, double x) {
  double lagged = lag[t - 1] + (x - (t - 1.0)) * (lag[t] - lag[t - 1]);
  return Line(at, t, x - lagged);
}

// The earliest instant (ns, from now) by which the bucket allows `need` segments delivered,
// with the segments queued now (later steps closing as if nothing more arrives); -1: none
// within the trace. Within a step the allowance moves one way, as its lag's line does.
int64_t BucketSlot(int64_t now, double need) {
  need -= 1e-9;  // rounding
  std::vector<double> at = line;
  auto steps = [](int64_t ns) { return double(ns - start) / double(step); };
  for (size_t t = now <= start ? 1 : size_t((now - start + step - 1) / step); t < lag.size(); ++t) {
    while (at.size() < t) at.push_back(Close(at.back(), at.size()));
    int64_t lo = std::max(now, start + int64_t(t - 1) * step), hi = start + int64_t(t) * step;
    if (Allowed(at, t, steps(lo)) >= need) return lo;
    if (lag[t] - lag[t - 1] > 1 || Allowed(at, t, steps(hi)) < need) continue;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (Allowed(at, t, steps(mid)) >= need ? hi : lo) = mid;
    }
    return hi;
  }
  return -1;
}

// When the data segment starting now on the bottleneck must end (-1: never within the trace).
int64_t Slot(int64_t now, double segments) {
  if (bucket) return BucketSlot(now, begun += segments);
  while (nextOpportunity < opportunities.size() && opportunities[nextOpportunity] < now) ++nextOpportunity;
  return nextOpportunity == opportunities.size() ? -1 : opportunities[nextOpportunity++];
}

// The TCP payload of a packet that starts with the given header layers removed.
uint32_t Payload(Ptr<Packet> p) { TcpHeader tcp; p->RemoveHeader(tcp); return p->GetSize(); }

int Classify(const Ipv4Header& ip) {
  auto f = flowOf.find(ip.GetSource().Get());
  return f == flowOf.end() ? -1 : int(f->second);
}

void OnTxBegin(Ptr<const Packet> packet) {
  Ptr<Packet> p = packet->Copy(); PppHeader ppp; p->RemoveHeader(ppp); Ipv4Header ip; p->RemoveHeader(ip);
  uint32_t payload = Payload(p);
  if (payload == 0) { bottleneck->SetDataRate(fast); return; }
  int64_t now = Simulator::Now().GetNanoSeconds(), end = Slot(now, payload / segment);
  if (end < 0) { bottleneck->SetDataRate(DataRate(1)); return; }
  double bps = std::ceil(packet->GetSize() * 8e9 / double(std::max<int64_t>(end - now, 1)));
  bottleneck->SetDataRate(DataRate(uint64_t(std::min(bps, 1e15))));
}

void OnTxEnd(Ptr<const Packet> packet) {
  Ptr<Packet> p = packet->Copy(); PppHeader ppp; p->RemoveHeader(ppp); Ipv4Header ip; p->RemoveHeader(ip);
  int n = Classify(ip);
  uint32_t payload = Payload(p);
  if (n < 0 || payload == 0) return;
  flows[n].served += payload;
  flows[n].servedAt.push_back(Simulator::Now().GetNanoSeconds());
}

// Flow n's box: a data segment leaves it `hold` steps (of the step it was served in) after the
// bottleneck served it, and never before a segment served earlier (its transmission on the
// flow's egress device ends then); everything else crosses at once.
void OnBoxBegin(size_t n, Ptr<const Packet> packet) {
  Flow& f = flows[n];
  Ptr<Packet> p = packet->Copy(); PppHeader ppp; p->RemoveHeader(ppp); Ipv4Header ip; p->RemoveHeader(ip);
  int64_t now = Simulator::Now().GetNanoSeconds(), until = now;
  if (Payload(p) > 0 && !f.servedAt.empty()) {
    int64_t at = f.servedAt.front();
    f.servedAt.pop_front();
    size_t s = at <= start ? 0 : size_t((at - start + step - 1) / step);
    if (s < f.hold.size()) until = at + f.hold[s] * step;
  }
  if (until <= now) { f.box->SetDataRate(fast); return; }
  f.box->SetDataRate(DataRate(uint64_t(std::ceil(packet->GetSize() * 8e9 / double(until - now)))));
}
void OnBoxEnd(size_t n, Ptr<const Packet> packet) {
  Ptr<Packet> p = packet->Copy(); PppHeader ppp; p->RemoveHeader(ppp); Ipv4Header ip; p->RemoveHeader(ip);
  flows[n].released += Payload(p);
}
void WatchBox(size_t n, Ptr<NetDevice> device, std::vector<int64_t> hold) {
  flows[n].box = DynamicCast<PointToPointNetDevice>(device);
  flows[n].hold = hold;
  device->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&OnBoxBegin, n));
  device->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&OnBoxEnd, n));
}

// A flow whose connection opens within the run: its socket connects at once (the handshake
// done before the run, as the others'), and sends `size`-byte writes from instant `at` (ns) on,
// as much as its send buffer takes, topped up as ACKs free it.
uint32_t writeSize = 1;
void Fill(Ptr<Socket> s, uint32_t) {
  while (s->GetTxAvailable() >= writeSize && s->Send(Create<Packet>(writeSize)) > 0) {}
}
void Open(Ptr<Socket> s) { s->SetSendCallback(MakeCallback(&Fill)); Fill(s, 0); }
Ptr<Socket> Connect(Ptr<Node> node, Address to, uint32_t size, int64_t at) {
  Ptr<Socket> s = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
  s->Bind();
  s->Connect(to);
  writeSize = size;
  Simulator::Schedule(NanoSeconds(at) - Simulator::Now(), &Open, s);
  return s;
}

// Give sockets created from now on ns-3's own default of attribute `name` of TypeId `tid`
// (the value ns-3 ships with, whatever Config::SetDefault set before).
void OwnDefault(std::string tid, std::string name) {
  TypeId::AttributeInformation info;
  TypeId::LookupByName(tid).LookupAttributeByName(name, &info);
  Config::SetDefault(tid + "::" + name, *info.originalInitialValue);
}

void Count(Ptr<const QueueDiscItem> item, bool dropped) {
  int n = Classify(DynamicCast<const Ipv4QueueDiscItem>(item)->GetHeader());
  if (n < 0) return;
  uint32_t bytes = Payload(item->GetPacket()->Copy());
  flows[n].sent += bytes;
  if (dropped) flows[n].lost += bytes;
  else queued += bytes / segment;
}
void OnEnqueue(Ptr<const QueueDiscItem> item) { Count(item, false); }

// The model's buffer against the token bucket (segments; negative: the queue disc's own fixed
// size), step by step as the trace's: the bottleneck admits a data segment of step t only while
// the segments admitted stay within the buffer beyond the most step t's tokens reach and, in a
// step the trace lost in, within what the trace admitted then (`cap`, negative elsewhere): how
// much a step loses depends on how its arrivals and tokens interleave, which the trace chose.
// Called as router 0 hands a packet to the bottleneck's interface, just before its queue disc
// takes it: the disc's limit is set so that it takes the packet or drops it as the rule says.
void BeforeEnqueue(Ptr<const Packet> packet, Ptr<Ipv4>, uint32_t interface) {
  if (!bucket || buffer < 0 || int32_t(interface) != discInterface) return;
  Ptr<Packet> p = packet->Copy(); Ipv4Header ip; p->RemoveHeader(ip);
  double size = Payload(p) / segment, x = double(Simulator::Now().GetNanoSeconds() - start) / double(step);
  size_t t = x > 0 ? std::min(size_t(std::ceil(x)), line.size()) : 0;
  double most = (t == 0 ? line.front() : line[t - 1] + rate) + buffer;
  if (t < cap.size() && cap[t] >= 0) most = std::min(most, cap[t]);
  bool fits = size == 0 || queued + size <= most + 1e-9;
  disc->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, disc->GetNPackets() + (fits ? 1 : 0)));
}
void UseBuffer(Ptr<Node> router, Ptr<NetDevice> device, double segments, std::vector<double> caps) {
  Ptr<Ipv4> ipv4 = router->GetObject<Ipv4>();
  buffer = segments;
  cap = caps;
  disc = router->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(device);
  discInterface = ipv4->GetInterfaceForDevice(device);
  ipv4->TraceConnectWithoutContext("Tx", MakeCallback(&BeforeEnqueue));
}
void OnDrop(Ptr<const QueueDiscItem> item) { Count(item, true); }

void OnCwnd(size_t n, uint32_t, uint32_t now) { flows[n].cwnd = now; }
void OnSsThresh(size_t n, uint32_t, uint32_t now) { flows[n].ssthresh = now; }
void OnPacing(size_t n, DataRate, DataRate now) { flows[n].pacing = now.GetBitRate(); }
void OnResend(size_t n, Ptr<const Packet> p, const TcpHeader&, const Address&, const Address&,
              Ptr<const TcpSocketBase>) { flows[n].resent += p->GetSize(); }
void OnState(size_t n, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now) {
  if (now == TcpSocketState::CA_LOSS) flows[n].timeouts++;
}

// The scoreboard's private flags, read through explicit instantiation (where access checks do
// not apply): the sent list, and each item's first sequence number and lost mark.
template <typename Tag, typename Tag::type member> struct Expose {
  friend typename Tag::type Get(Tag) { return member; }
};
struct SentList { typedef std::list<TcpTxItem*> TcpTxBuffer::*type; friend type Get(SentList); };
struct ItemStart { typedef SequenceNumber32 TcpTxItem::*type; friend type Get(ItemStart); };
struct ItemLost { typedef bool TcpTxItem::*type; friend type Get(ItemLost); };
template struct Expose<SentList, &TcpTxBuffer::m_sentList>;
template struct Expose<ItemStart, &TcpTxItem::m_startSeq>;
template struct Expose<ItemLost, &TcpTxItem::m_lost>;

// Add the segments flow n's scoreboard marks lost now to those it ever marked. Marks are set
// while an ACK is processed (or a timeout fires) and stay until a later ACK covers the segment.
void Mark(size_t n) {
  Ptr<TcpTxBuffer> b = senders[n]->GetTxBuffer();
  for (TcpTxItem* item : PeekPointer(b)->*Get(SentList())) {
    if (!(item->*Get(ItemLost()))) continue;
    uint32_t first = uint32_t(((item->*Get(ItemStart())).GetValue() - 1) / segment);  // data starts at 1
    for (uint32_t k = 0; k * segment < item->GetSeqSize(); ++k) flows[n].markedSegments.insert(first + k);
  }
  flows[n].marked = uint64_t(flows[n].markedSegments.size() * segment);
}
// After each segment the sender receives has been processed (the trace fires before).
void OnReceive(size_t n, Ptr<const Packet>, const TcpHeader&, Ptr<const TcpSocketBase>) {
  Simulator::ScheduleNow(&Mark, n);
}

void WatchSender(size_t n, Ptr<Socket> s) {
  senders.push_back(DynamicCast<TcpSocketBase>(s));
  s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, n));
  s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnSsThresh, n));
  UintegerValue initial;  // the threshold until a change is traced
  s->GetAttribute("InitialSlowStartThreshold", initial);
  flows[n].ssthresh = uint32_t(initial.Get());
  s->TraceConnectWithoutContext("PacingRate", MakeBoundCallback(&OnPacing, n));
  s->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&OnResend, n));
  s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnState, n));
  s->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnReceive, n));
}

// Each sender's bytes in flight as its scoreboard counts them now (RFC 6675's pipe: sent, less
// what is ACKed or SACKed and what it marked lost, plus its retransmissions).
void Sample() {
  for (size_t n = 0; n < senders.size(); ++n) {
    flows[n].inflight = senders[n]->GetTxBuffer()->BytesInFlight();
    Mark(n);
  }
}

// Set an attribute of the congestion control object of socket s (before its handshake completes).
void Configure(Ptr<Socket> s, std::string name, std::string value) {
  PointerValue cc;
  s->GetAttribute("CongestionOps", cc);
  cc.Get<TcpCongestionOps>()->SetAttribute(name, StringValue(value));
}

void WatchBottleneck(Ptr<NetDevice> device, Ptr<QueueDisc> disc, double segmentBytes) {
  segment = segmentBytes;
  bottleneck = DynamicCast<PointToPointNetDevice>(device);
  bottleneck->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&OnTxBegin));
  bottleneck->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnTxEnd));
  disc->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue));
  disc->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));
}
}
"""


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """Run a block with the process's stderr (file descriptor 2, where cling writes) caught;
    afterwards pass on every line but cling's start-up noise."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            for line in caught.read().decode(errors="replace").splitlines(keepends=True):
                if NOISE not in line:
                    sys.stderr.write(line)


def load_ns3() -> Any:
    """The ns-3 bindings with this module's C++ helpers compiled in (once per process)."""
    from ns import ns

    if not hasattr(ns.cppyy.gbl, "tracepath"):
        ns.cppyy.cppdef(HELPERS)
    return ns


def opportunity_times(per_step: list[int], step_ns: int, start_ns: int) -> list[int]:
    """When each delivery opportunity falls: step t's evenly over ((t-1), t] steps after
    ``start_ns`` (step 0's, the service before the run, are dropped)."""
    times = []
    for t, count in enumerate(per_step[1:], start=1):
        times += [start_ns + (t - 1) * step_ns + ceil((k + 1) * step_ns / count) for k in range(count)]
    return times


def offered(per_step: list[int]) -> list[float]:
    """The schedule's token line: by step, the segments it offered since step 0."""
    line = [0.0]
    for count in per_step[1:]:
        line.append(line[-1] + count)
    return line


Samples = list[dict[str, list[int]]]  # per flow, each sampled quantity by step


def simulate(scenario: dict[str, Any]) -> tuple[Samples, list[float]]:
    """Run ``scenario`` (module doc) in ns-3: per flow, each sampled quantity by step, and the
    bottleneck's token line by step (segments)."""
    with quiet_stderr():
        ns = load_ns3()
        return _run(ns, scenario)


def _run(ns: Any, scenario: dict[str, Any]) -> tuple[Samples, list[float]]:
    tp = ns.cppyy.gbl.tracepath
    tp.Reset()
    step, flows, segment = scenario["step_ns"], scenario["flows"], scenario["segment"]
    for name, value in (("SegmentSize", segment), ("DelAckCount", 1),
                        ("SndBufSize", scenario["socket_buffer"]), ("RcvBufSize", scenario["socket_buffer"])):
        ns.Config.SetDefault(f"ns3::TcpSocket::{name}", ns.UintegerValue(value))
    routers, senders, receivers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    routers.Create(2)
    senders.Create(len(flows))
    receivers.Create(len(flows))
    stack = ns.InternetStackHelper()
    for nodes in (routers, senders, receivers):
        stack.Install(nodes)

    link = ns.PointToPointHelper()
    link.SetDeviceAttribute("DataRate", ns.StringValue(FAST))
    link.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(0)))
    link.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
    bottleneck = link.Install(routers.Get(0), routers.Get(1))
    queue = scenario["queue_packets"]
    disc = ns.TrafficControlHelper()  # installed before addresses are, or they install a default
    disc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                          ns.StringValue(f"{max(queue - 2, 1) if queue is not None else 10**7}p"))
    discs = disc.Install(bottleneck.Get(0))
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.0"))
    addresses.Assign(bottleneck)

    ends = []  # per flow: the receiver's address
    for n, flow in enumerate(flows):
        ends.append(_flow_path(ns, tp, n, flow, step, link, addresses, senders.Get(n), routers, receivers.Get(n)))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    start = max(f["rtt_ns"] for f in flows) + step // 100  # step 0: every initial window sent
    tp.Clock(start, step)
    server = scenario["server"]
    if "opportunities" in server:
        tp.opportunities = ns.cppyy.gbl.std.vector["int64_t"](opportunity_times(server["opportunities"], step, start))
    else:
        floats = ns.cppyy.gbl.std.vector["double"]
        tp.UseBucket(server["rate"], server["tokens"], floats(server["lag"]), floats(server["margin"]))
        if server.get("buffer") is not None:
            tp.UseBuffer(routers.Get(0), bottleneck.Get(0), server["buffer"],
                         floats(server.get("cap", [])))
    tp.WatchBottleneck(bottleneck.Get(0), discs.Get(0), segment)
    for n, flow in enumerate(flows):
        _start_flow(ns, tp, n, flow, senders.Get(n), ends[n], segment, start + (flow.get("open_step", 0) - 1) * step
                    + step // 100)

    names = ("sent", "lost", "served", "released", "resent", "timeouts", "cwnd", "ssthresh", "pacing", "inflight",
             "marked")
    samples: list[dict[str, list[int]]] = [{name: [] for name in names} for _ in flows]
    for t in range(scenario["steps"]):
        _run_until(ns, start + t * step + SAMPLE_AFTER_NS)
        tp.Sample()
        for n, counters in enumerate(tp.flows):
            for name in names:
                samples[n][name].append(int(getattr(counters, name)))
    line = list(tp.line) if "rate" in server else offered(server["opportunities"])
    ns.Simulator.Destroy()
    return samples, line


def _flow_path(ns: Any, tp: Any, n: int, flow: dict[str, Any], step: int, link: Any, addresses: Any, sender: Any,
               routers: Any, receiver: Any) -> Any:
    """Flow n's own links (access from its sender, egress to its receiver with its box on the
    egress device), its TCP and its receiver's sink; the receiver's address."""
    access = link.Install(sender, routers.Get(0))
    addresses.SetBase(ns.Ipv4Address(f"10.1.{n}.0"), ns.Ipv4Mask("255.255.255.0"))
    sender_ip = addresses.Assign(access).GetAddress(0)
    egress = ns.PointToPointHelper()
    egress.SetDeviceAttribute("DataRate", ns.StringValue(FAST))
    egress.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds((flow["rtt_ns"] - step // 100) // 2)))
    path = egress.Install(routers.Get(1), receiver)
    box = ns.TrafficControlHelper()  # the segments the box holds wait here (no AQM drops them)
    box.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.StringValue(f"{10**7}p"))
    box.Install(path.Get(0))
    addresses.SetBase(ns.Ipv4Address(f"10.2.{n}.0"), ns.Ipv4Mask("255.255.255.0"))
    receiver_ip = addresses.Assign(path).GetAddress(1)
    tp.flowOf[sender_ip.Get()] = n
    tp.flows.push_back(tp.Flow())
    tp.WatchBox(n, path.Get(0), ns.cppyy.gbl.std.vector["int64_t"](flow.get("hold", [])))
    tcp = sender.GetObject[ns.TcpL4Protocol]()
    tcp.SetAttribute("SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(flow["tcp"])))
    tcp.SetAttribute("RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName(flow.get("recovery",
                                                                                    "ns3::TcpPrrRecovery"))))
    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 5000).ConvertTo())
    sink.Install(receiver)
    return ns.InetSocketAddress(receiver_ip, 5000).ConvertTo()


def _start_flow(ns: Any, tp: Any, n: int, flow: dict[str, Any], sender: Any, receiver: Any, segment: int,
                opening_ns: int) -> None:
    """Open flow n's connection (n + 1 microseconds in: one after another, so that each socket
    takes its flow's defaults) with its initial window and slow-start threshold (ns-3's own
    without ``initial_cwnd``), set its congestion control's attributes and watch it. A flow with
    ``open_step`` sends from ``opening_ns`` on; the others from their handshake on."""
    window = flow.get("initial_cwnd")
    for name, value in (("InitialCwnd", window),  # segments
                        ("InitialSlowStartThreshold", None if window is None else
                         flow.get("initial_ssthresh", window) * segment)):  # bytes
        if value is None:
            tp.OwnDefault("ns3::TcpSocket", name)
        else:
            ns.Config.SetDefault(f"ns3::TcpSocket::{name}", ns.UintegerValue(value))
    if "open_step" in flow:
        _run_until(ns, (n + 1) * 1000)
        socket = tp.Connect(sender, receiver, segment, opening_ns)
    else:
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", receiver)
        bulk.SetAttribute("SendSize", ns.UintegerValue(segment))
        app = bulk.Install(sender)
        app.Start(ns.NanoSeconds((n + 1) * 1000 - ns.Simulator.Now().GetNanoSeconds()))
        _run_until(ns, (n + 1) * 1000 + 1)
        socket = ns.cppyy.gbl.ns3.DynamicCast[ns.BulkSendApplication](app.Get(0)).GetSocket()
    for name, value in flow.get("attributes", {}).items():
        tp.Configure(socket, name, value)
    tp.WatchSender(n, socket)


def _run_until(ns: Any, time_ns: int) -> None:
    ns.Simulator.Stop(ns.NanoSeconds(time_ns - ns.Simulator.Now().GetNanoSeconds()))
    ns.Simulator.Run()


def main(scenario: dict[str, Any]) -> None:
    """Run the scenario and print, per step, each flow's bytes sent to, lost at and served by
    the bottleneck in the step, and its window at the end of it (in segments)."""
    samples, _ = simulate(scenario)
    segment = scenario["segment"]
    head = "step" + "".join(f"  {'sent':>6}{'lost':>6}{'served':>7}{'cwnd':>8} " for _ in samples)
    print("per step, in segments of", segment, "bytes:", "  ".join(f"flow {n}: {f['tcp']}"
                                                                   for n, f in enumerate(scenario["flows"])))
    print(head)
    for t in range(scenario["steps"]):
        cells = []
        for flow in samples:
            moved = [(flow[k][t] - (flow[k][t - 1] if t else 0)) / segment for k in ("sent", "lost", "served")]
            cells.append(f"  {moved[0]:6.0f}{moved[1]:6.0f}{moved[2]:7.0f}{flow['cwnd'][t] / segment:8.2f} ")
        print(f"{t:4d}" + "".join(cells))
    for n, flow in enumerate(samples):
        print(f"flow {n}: {flow['served'][-1]} bytes served, {flow['lost'][-1]} lost, "
              f"{flow['timeouts'][-1]} timeouts")
