#pragma once
// The requests about one job, read off their typed interface (job_request_interface in
// interfaces.hpp, where each is written once with its answer): the registry makes its
// delegating handlers from it, the job actor its serving ones, the edge the answer type it
// waits for. So a new job request touches its message, its line in that interface, its
// decoder (actors/edge/requests), its handler (actors/jobs/job_actor) and its view
// (actors/edge/views), nothing else.
#include <tuple>
#include <type_traits>

#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

// One signature `replies_to<Request>::with<Reply>` taken apart.
template <class Signature>
struct job_request_parts;
template <class Request, class Reply>
struct job_request_parts<caf::typed_mpi<caf::detail::type_list<Request>, caf::output_tuple<Reply>>> {
  using request = Request;
  using reply = Reply;
};

// `make.template operator()<Request, Reply>()` for every job request, as a tuple of handlers
// (std::apply splices them into a behavior next to an actor's other handlers).
template <class Make, class... Signatures>
auto job_request_handlers(Make&& make, caf::detail::type_list<Signatures...>) {
  return std::make_tuple(make.template operator()<typename job_request_parts<Signatures>::request,
                                                  typename job_request_parts<Signatures>::reply>()...);
}
template <class Make>
auto job_request_handlers(Make&& make) {
  return job_request_handlers(std::forward<Make>(make), typename job_request_interface::signatures{});
}

// What the registry answers `Request` with (its interface says).
template <class Request>
using job_reply_t = std::tuple_element_t<
    0, typename caf::response_type<typename job_registry_actor::signatures, Request>::tuple_type>;

}  // namespace shellctl::actors
