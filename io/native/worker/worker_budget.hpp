#pragma once
// A scope worker's budgets, in its catalog spool/shellctl.db next to the ordinary jobs table
// (docs/native-scopes.md "The scope worker", S19, S20): the scope's identity, and one row of
// limits and counters for input bytes, output bytes and admitted jobs. WAL with
// synchronous=FULL on every connection.
//
// Every charge is `UPDATE … SET x = x + n WHERE x + n <= limit`: zero rows changed is a
// refusal, so concurrent chargers (the worker, every job's sanitizer or copier, each with
// its own connection) can never together pass a limit. Nothing ever lowers a counter:
// deleting a job or reopening a stream refunds nothing.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "io/store/jobs_db.hpp"

namespace shellctl::io::native {

struct budget_limits {
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
  std::uint64_t jobs = 0;  // max_jobs, at most 64 (S19)
};

struct budget_usage {
  budget_limits limits;
  std::uint64_t input_used = 0;
  std::uint64_t output_used = 0;
  std::uint64_t jobs_admitted = 0;
};

struct scope_identity {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::string created_at;
};

// Admission's answer: the 409 codes it maps to are in the names.
enum class admission { admitted, job_capacity_exhausted, input_budget_exhausted, duplicate_job };

struct worker_budget_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class worker_budget {
 public:
  // Opens (creating) the file and the budget tables. The jobs table is the jobs store's
  // (io/store/jobs_db.hpp), which must have made it before admit() is used.
  explicit worker_budget(const std::string& path);
  ~worker_budget();
  worker_budget(const worker_budget&) = delete;
  worker_budget& operator=(const worker_budget&) = delete;

  bool synchronous_full();

  // The first call records the identity and the limits; a later one (a restarted worker)
  // must name the same scope and generation, and keeps the counters: worker_budget_error
  // otherwise (the spool belongs to another scope).
  void init(const scope_identity& id, const budget_limits& limits);
  std::optional<scope_identity> identity();

  // One transaction: a job slot (jobs_admitted < jobs), then `input_charge` bytes of input
  // (script + env JSON), then the row. A refusal leaves no row and charges nothing.
  admission admit(const store::job_row& row, std::uint64_t input_charge,
                  const std::optional<store::run_key>& key = {});
  // /input's text: charged before it is typed. False = refused (nothing charged).
  bool charge_input(std::uint64_t n);
  // Reserves up to `n` bytes of output before they are written: the answer is what may be
  // written (less than n when less remains, 0 once exhausted), and is charged.
  std::uint64_t reserve_output(std::uint64_t n);

  budget_usage usage();

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace shellctl::io::native
