#include "actors/protocol/metrics_model.hpp"

#include <algorithm>

namespace shellctl::actors {

void histogram::observe(double v) {
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
  ++counts[static_cast<std::size_t>(at)];
  sum += v;
  ++count;
}

std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> snapshot_bounds() { return {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}; }

}  // namespace shellctl::actors
