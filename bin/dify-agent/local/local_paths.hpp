#pragma once
// Local files as the original CLI named and wrote them: Go's path/filepath rules (Abs,
// Base, Join, Ext), os error texts ("open /x: no such file or directory"), a downloaded
// file that appears under its final name only when complete.
#include <string>

#include "io/text/go_quote.hpp"

namespace shellctl::dify_agent {

using io::text::go_errno_text;  // Go's lower-case syscall error text
std::string clean_path(const std::string& p);        // filepath.Clean
std::string current_dir();
std::string absolute_path(const std::string& p);     // filepath.Abs
std::string base_name(const std::string& p);         // filepath.Base
std::string dir_name(const std::string& p);          // filepath.Dir
std::string join_path(const std::string& a, const std::string& b);  // filepath.Join
std::string extension(const std::string& p);         // filepath.Ext
bool make_dirs(const std::string& p, unsigned mode); // os.MkdirAll

// Whole file (`-`: stdin); throws cli_error("read file: open <abs>: <reason>").
std::string read_input(const std::string& path_or_dash);
// os.WriteFile; throws cli_error("<context>: open <path>: <reason>").
void write_file(const std::string& path, const std::string& data, unsigned mode, const std::string& context);

bool decode_base64_url(const std::string& in, std::string& out);  // padded URL-safe alphabet

// A private directory under $TMPDIR (or /tmp), removed with everything in it when the
// object goes: scratch space for archives built before an upload.
struct temp_dir {
  explicit temp_dir(const std::string& tag);
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string path;
};

// A file written in `dir` under a hidden temporary name, then linked to the first free
// name of `<stem>.ext`, `<stem> (1).ext`, … (never replacing a file), mode 0644.
class staged_file {
 public:
  staged_file(const std::string& dir, const std::string& name);
  ~staged_file();
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;
  bool write(const char* p, std::size_t n);
  // Returns the path used; throws cli_error("write file: …").
  std::string commit_unique(const std::string& wanted);
  // Replaces `path` (an explicit target); throws cli_error("write file: …").
  void commit_replace(const std::string& path);

 private:
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace shellctl::dify_agent
