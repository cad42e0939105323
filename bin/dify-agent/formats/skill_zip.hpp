#pragma once
// Config skills travel as zip archives (docs/dify-agent.md): a skill directory is
// zipped for a push, and a pulled archive is extracted into its directory. libarchive does
// both. Extraction is confined: an entry naming a path outside the target (absolute, `..`,
// or through a symlink the archive made) is refused, links and devices are not created.
#include <string>

namespace shellctl::dify_agent {

// Zips the tree under `dir` (names relative to it; files, directories, symlinks) into
// `zip_path`. Returns "" or the error.
std::string zip_directory(const std::string& dir, const std::string& zip_path);

// Extracts `zip_path` into the existing directory `target`. Returns "" or the error.
std::string extract_zip(const std::string& zip_path, const std::string& target);

}  // namespace shellctl::dify_agent
