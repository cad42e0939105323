#include "io/fs/home_views.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/fs/files.hpp"

namespace shellctl::io::fs {

namespace {

std::string views_root(const std::string& state_dir) {
  return join(state_dir, "runtime/home-views");
}

void remove_entry(const std::string& jobs_dir, const std::string& job_id) {
  const std::string dir = join(jobs_dir, job_id);
  ::unlink(join(dir, "output.log").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace

bool link_into_home_view(const std::string& view_dir, const std::string& job_id,
                         const std::string& output_log, std::string& err) {
  try {
    make_dirs(join(view_dir, "jobs/" + job_id), 0700);
  } catch (const std::exception& e) {
    err = e.what();
    return false;
  }
  const std::string link = join(view_dir, "jobs/" + job_id + "/output.log");
  if (::link(output_log.c_str(), link.c_str()) != 0 && errno != EEXIST) {
    err = "link " + link + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void unlink_from_home_views(const std::string& state_dir, const std::string& job_id) {
  std::error_code ec;
  for (const auto& view : std::filesystem::directory_iterator(views_root(state_dir), ec))
    remove_entry(join(view.path().string(), "jobs"), job_id);
}

void prune_home_views(const std::string& state_dir, const std::set<std::string>& known) {
  std::error_code ec;
  for (const auto& view : std::filesystem::directory_iterator(views_root(state_dir), ec)) {
    const std::string jobs = join(view.path().string(), "jobs");
    std::error_code ec2;
    for (const auto& entry : std::filesystem::directory_iterator(jobs, ec2)) {
      const std::string id = entry.path().filename().string();
      if (!known.count(id)) remove_entry(jobs, id);
    }
    ::rmdir(jobs.c_str());  // only when empty
    ::rmdir(view.path().c_str());
  }
}

}  // namespace shellctl::io::fs
