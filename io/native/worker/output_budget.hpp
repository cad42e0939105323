#pragma once
// The output budget as the job's output copiers see it
// (docs/native-scopes.md "The scoped job sandbox", S16, S20): the PTY sanitizer and the
// runner's stdio copier reserve n bytes in the worker's catalog before they write n bytes of
// output. They are static helpers without SQLite, so the reservations go through one co-process
// per copier, `shellctl native-budget --db DB` (io/native/worker/worker_budget.hpp on the other
// side), over a pipe pair: "reserve <n>\n" is answered "<granted>\n". When less is granted than
// asked, the copier writes what fits, creates the job's overflow marker (io/fs/job_dir.hpp:
// `.output-overflow`) and writes nothing more: the worker then fails the job
// (output_budget_exhausted) and kills its tree. A helper that cannot be reached grants nothing:
// without a budget there is no output.
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace shellctl::io::native {

class output_budget {
 public:
  output_budget() = default;
  ~output_budget();
  output_budget(const output_budget&) = delete;
  output_budget& operator=(const output_budget&) = delete;

  // Starts `<helper> native-budget --db <db>`. False with `err`.
  bool start(const std::string& helper, const std::string& db, std::string& err);
  bool started() const { return pid_ > 0; }
  // Reserves up to `n` bytes: what may be written (0 once the budget is spent, or when the
  // helper is gone).
  std::uint64_t reserve(std::uint64_t n);

 private:
  pid_t pid_ = -1;
  int to_ = -1;  // our end of the socket pair with the helper
};

// The copier's side of an overflow, in one place: what fits of `size` bytes at `data`
// is written to `fd` and true returned while the budget lasts; once it is spent (or when
// `budget` could not be started: nothing is granted then), `overflow_file` is created
// (once) and false returned. Sets `write_failed` on a write error.
bool write_within_budget(output_budget& budget, int fd, const char* data, std::size_t size,
                         const std::string& overflow_file, bool& overflowed, bool& write_failed);

}  // namespace shellctl::io::native
