#pragma once
// The MIME type the original guessed for an upload: Go's mime.TypeByExtension (its built-in
// table, then the system's shared-mime-info globs2, or /etc/mime.types when there is no
// globs2), parameters removed, application/octet-stream when nothing is known.
#include <string>

namespace shellctl::dify_agent {

std::string guess_mime_type(const std::string& filename);

}  // namespace shellctl::dify_agent
