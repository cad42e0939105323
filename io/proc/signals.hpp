#pragma once
// Signal dispositions for the processes shellctl starts. A process started under nohup (or
// by any parent that ignores or blocks signals) passes SIG_IGN and its mask on across
// fork and exec; a job must never inherit them: a job that cannot be hung up or
// interrupted is one that terminate cannot end politely.
namespace shellctl::io::proc {

// Restores every signal disposition to SIG_DFL and empties the signal mask.
void reset_signals();

// Blocks every signal in the caller (for a process that takes them from a signalfd).
void block_all_signals();

}  // namespace shellctl::io::proc
