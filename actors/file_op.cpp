#include "actors/file_op.hpp"

#include <algorithm>
#include <cstring>

#include "io/fs/file_ops.hpp"

namespace shellctl::actors {
namespace {

using io::fs::file_errc;

// A download's bytes handed to the connection and not yet written: enough to keep loopback
// busy, little enough that a reader who stops costs the server at most this much.
constexpr std::uint64_t max_in_flight = 4u << 20;
constexpr std::size_t chunk_bytes = 256u << 10;

job_errc errc_of(file_errc c) {
  switch (c) {
    case file_errc::invalid_path: return job_errc::invalid_path;
    case file_errc::denied: return job_errc::path_denied;
    case file_errc::not_found: return job_errc::file_not_found;
    case file_errc::not_a_directory: return job_errc::not_a_directory;
    case file_errc::is_a_directory: return job_errc::is_a_directory;
    case file_errc::exists: return job_errc::file_exists;
    case file_errc::not_empty: return job_errc::directory_not_empty;
    case file_errc::io: break;
  }
  return job_errc::file_io_failed;
}

// The operation's answer: its value, or the domain error of what it threw.
template <class F>
auto answered(F run) -> caf::result<decltype(run())> {
  try {
    return run();
  } catch (const io::fs::file_failure& e) {
    return make_job_error(errc_of(e.code), e.what());
  } catch (caf::error& e) {
    return std::move(e);
  } catch (const std::exception& e) {
    return make_job_error(job_errc::file_io_failed, e.what());
  }
}

// Sends [offset, offset + length) of the open file through the stream the edge started.
// The end is clean only when every byte went: a file cut short meanwhile, a reader that
// went away or stalled, or a read error cut the connection (its Content-Length is then
// visibly unmet).
void send_range(caf::blocking_actor* self, const file_settings& cfg, io::fs::file_reader& file,
                const file_send& s) {
  const io::http::responder& out = s.out;
  std::uint64_t sent = 0;
  std::uint64_t offset = s.offset;
  std::uint64_t left = s.length;
  try {
    while (left > 0) {
      while (sent - out.stream_acked() > max_in_flight) {
        if (!out.connected()) return out.abort();
        bool stalled = false;
        self->receive([](stream_drained&) {}, caf::after(cfg.idle) >> [&] { stalled = true; });
        if (stalled) return out.abort();
      }
      // Wake-ups that came while nothing waited: one is taken per chunk, so none pile up.
      self->receive([](stream_drained&) {}, caf::after(std::chrono::seconds(0)) >> [] {});
      if (!out.connected()) return out.abort();  // gone, or a HEAD request (head only)
      std::string chunk(static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk_bytes)), '\0');
      const std::size_t n = file.read_at(offset, chunk.data(), chunk.size());
      if (n == 0) return out.abort();  // the file shrank under us
      chunk.resize(n);
      out.send_chunk(std::move(chunk));
      sent += n;
      offset += n;
      left -= n;
    }
  } catch (const std::exception&) {
    return out.abort();
  }
  out.end_stream({});
}

// The upload's body, piece by piece as it arrives, into the temporary file.
void receive_body(caf::blocking_actor* self, const file_settings& cfg, file_write_request& req,
                  io::fs::file_upload& up) {
  if (!req.streamed) {
    up.write(req.body);
    return;
  }
  caf::actor me = caf::actor_cast<caf::actor>(self);
  req.in.read_body([me](io::http::body_piece p) { caf::anon_send(me, body_arrived{std::move(p)}); });
  for (;;) {
    io::http::body_piece piece;
    bool idle = false;
    self->receive([&](body_arrived& m) { piece = std::move(m.piece); },
                  caf::after(cfg.idle) >> [&] { idle = true; });
    if (idle)
      throw caf::error(make_job_error(job_errc::invalid_request,
                                      "the upload's body stopped arriving; the old file is kept"));
    if (piece.failed)
      throw caf::error(make_job_error(job_errc::invalid_request,
                                      "the upload's body was cut (" + piece.error + "); the old file is kept"));
    // The next piece is asked for before this one is written: the connection reads it
    // while the disk writes (one piece held here, at most one window buffered there).
    if (!piece.end) req.in.more_body();
    if (!piece.data.empty()) up.write(piece.data);
    if (piece.end) return;
  }
}

}  // namespace

void file_op(caf::blocking_actor* self, file_settings cfg) {
  const io::fs::file_roots& roots = *cfg.roots;
  std::unique_ptr<io::fs::file_reader> reader;
  // One request, answered; a download then waits for the edge's go-ahead.
  self->receive(
      [&](file_stat_request& r) -> caf::result<file_stat> {
        return answered([&] { return io::fs::stat_path(roots, r.path); });
      },
      [&](file_list_request& r) -> caf::result<file_listing> {
        return answered([&] { return io::fs::list_dir(roots, r.path, r.limit); });
      },
      [&](file_mkdir_request& r) -> caf::result<file_done> {
        return answered([&] { return file_done{io::fs::make_directory(roots, r.path, r.parents, r.mode)}; });
      },
      [&](file_delete_request& r) -> caf::result<file_done> {
        return answered([&] { return file_done{io::fs::remove_path(roots, r.path, r.recursive), true}; });
      },
      [&](file_move_request& r) -> caf::result<file_done> {
        return answered([&] { return file_done{io::fs::move_path(roots, r.from, r.to, r.overwrite)}; });
      },
      [&](file_read_request& r) -> caf::result<file_opened> {
        return answered([&] {
          reader = std::make_unique<io::fs::file_reader>(roots, r.path);
          return file_opened{reader->path(), reader->meta()};
        });
      },
      [&](file_write_request& r) -> caf::result<file_written> {
        return answered([&] {
          io::fs::file_upload up(roots, r.path, r.mode, r.parents);
          receive_body(self, cfg, r, up);
          auto c = up.commit();
          return file_written{std::move(c.path), c.size, std::move(c.sha256_hex)};
        });
      });
  if (!reader) return;
  // The edge answers the head (or a refusal such as 416) and tells this op to go on; an
  // edge that never does (it went away) leaves the descriptor open for `idle` at most.
  self->receive(
      [&](file_send& s) {
        if (s.send) send_range(self, cfg, *reader, s);
      },
      caf::after(cfg.idle) >> [] {});
}

}  // namespace shellctl::actors
