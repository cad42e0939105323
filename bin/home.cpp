// shellctl-home: the server's Home operations (snapshot save and restore, the file API),
// confined like a job of that HOME. See io/home/helper.hpp.
#include <string>
#include <vector>

#include "io/home/helper.hpp"

int main(int argc, char** argv) {
  return shellctl::io::home::helper_main(std::vector<std::string>(argv + 1, argv + argc));
}
