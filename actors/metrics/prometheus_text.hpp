#pragma once
// GET /metrics: a metrics_sample in the Prometheus text exposition format 0.0.4 (what
// `promtool check metrics` checks). Every family is always present, with zeros before the
// first event, so that a dashboard's queries never meet a missing series.
#include <string>

#include "actors/protocol/metrics_model.hpp"

namespace shellctl::actors {

std::string prometheus_text(const metrics_sample& s);

}  // namespace shellctl::actors
