#pragma once
// The job's side of the start gate (issue: the job fast path). The runner's parent waits
// for <job_dir>/start-gate; meanwhile its child already builds the job's sandbox
// (namespaces, file-system view, capabilities, Landlock, seccomp), so that work overlaps
// the server's attaching of the output pipe instead of following it. The child's last
// step before execve waits at this latch for the parent's word.
//
// Until then the child's diagnostics are held in a memory file and written to the real
// stderr only once the gate opened: a PTY job's pane may not be piped to output.log yet,
// and a setup failure must reach the job's output exactly as when it happened after the
// gate. A latch that closes without the word (the parent died, or the gate can never
// open) ends the child silently: the script never ran.
namespace shellctl::io::proc::gate_latch {

// In the child, first thing: `fd` is its end of the parent's socket pair; stderr is
// redirected to the hold buffer (left as is if no memory file is to be had).
void enter(int fd);
// Waits for the word, then gives stderr back (with what was held) and closes the latch.
// True: the gate opened (and at once when there is no latch: the runner's --exec role).
bool pass();
// A setup failure: waits for the gate (so its message lands where the job's output goes),
// then returns `code` to exit with. Once passed, returns `code` at once.
int fail(int code);
// The job's PID 1, right after it forked the job's process: the process goes on holding
// the latch and the buffer; PID 1 gets its stderr back and lets go of both.
void hand_over();

// The parent: the word that lets the child go (false if the child is gone).
bool open(int fd);

}  // namespace shellctl::io::proc::gate_latch
