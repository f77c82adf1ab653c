// The peer side of bench/peers/ring-allreduce.sh: one ring all-reduce over N hosts on a
// star (every host's own full-duplex link to one switch) in SimGrid's s4u, every round
// simulated as a message from each host to the next.
//
// Usage: simgrid_ring_allreduce HOSTS BYTES BANDWIDTH_Bps LATENCY_s [--cfg=...]
// Prints the simulated time and the wall time of building the platform and of the run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

// Each rank sends a 1/N chunk to the next and receives one from the previous, 2(N-1)
// times: reduce-scatter, then all-gather.
void rank(std::vector<sg4::Mailbox*>* boxes, int me, int steps, double chunk) {
  const int n = static_cast<int>(boxes->size());
  sg4::Mailbox* next = (*boxes)[(me + 1) % n];
  sg4::Mailbox* mine = (*boxes)[me];
  static int payload = 0;
  for (int s = 0; s < steps; ++s) {
    sg4::CommPtr send = next->put_async(&payload, static_cast<uint64_t>(chunk));
    int* got = nullptr;
    sg4::CommPtr recv = mine->get_async(&got);
    send->wait();
    recv->wait();
  }
}

}  // namespace

int main(int argc, char** argv) {
  sg4::Engine e(&argc, argv);  // consumes --cfg= and --log= arguments
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s HOSTS BYTES BANDWIDTH_Bps LATENCY_s [--cfg=...]\n", argv[0]);
    return 2;
  }
  const int hosts = std::atoi(argv[1]);
  const double bytes = std::atof(argv[2]);
  const double bandwidth = std::atof(argv[3]);
  const double latency = std::atof(argv[4]);
  if (hosts < 2 || bytes <= 0 || bandwidth <= 0 || latency < 0) {
    std::fprintf(stderr, "need HOSTS >= 2, BYTES > 0, BANDWIDTH_Bps > 0, LATENCY_s >= 0\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto* zone = sg4::create_star_zone("star");
  std::vector<sg4::Host*> all;
  for (int i = 0; i < hosts; ++i) {
    sg4::Host* h = zone->create_host("h" + std::to_string(i), 1e9)->seal();
    const sg4::Link* l = zone->create_split_duplex_link("l" + std::to_string(i), bandwidth)
                             ->set_latency(latency)
                             ->seal();
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                    {{l, sg4::LinkInRoute::Direction::UP}}, true);
    all.push_back(h);
  }
  zone->seal();
  std::vector<sg4::Mailbox*> boxes;
  for (int i = 0; i < hosts; ++i) boxes.push_back(sg4::Mailbox::by_name("m" + std::to_string(i)));
  const int steps = 2 * (hosts - 1);
  const double chunk = bytes / hosts;
  for (int i = 0; i < hosts; ++i)
    sg4::Actor::create("r" + std::to_string(i), all[i], rank, &boxes, i, steps, chunk);
  const auto t1 = Clock::now();
  e.run();
  const auto t2 = Clock::now();
  std::printf("simgrid hosts=%d bytes=%.0f simulated_s=%.9f platform_wall_s=%.3f run_wall_s=%.3f\n",
              hosts, bytes, sg4::Engine::get_clock(),
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
  return 0;
}
