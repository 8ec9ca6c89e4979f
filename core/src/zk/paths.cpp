#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

namespace avout {

std::string join_path(const std::string& parent, const std::string& child) {
  if (parent.empty() || parent == "/") return "/" + child;
  return parent + "/" + child;
}

void validate_path(const std::string& path) {
  auto reject = [&](const char* why) {
    throw InvalidName("invalid name \"" + path + "\": " + why);
  };
  if (path.empty()) reject("empty");
  if (path.front() != '/') reject("must start with '/'");
  if (path.size() > 1 && path.back() == '/') reject("must not end with '/'");
  if (path.size() > 1024) reject("longer than 1024 characters");
  std::size_t start = 1;
  while (start <= path.size() && path.size() > 1) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view segment(path.data() + start, end - start);
    if (segment.empty()) reject("empty segment ('//')");
    if (segment == "." || segment == "..") reject("'.' and '..' segments are not allowed");
    if (segment == "zookeeper" && start == 1) reject("'/zookeeper' is reserved");
    start = end + 1;
  }
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) reject("control characters are not allowed");
  }
}

}  // namespace avout
