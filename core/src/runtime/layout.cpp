#include "runtime/layout.hpp"

#include "base/hex.hpp"

namespace avout::detail {

Layout::Layout(std::string chroot, std::string root)
    : chroot_(std::move(chroot)),
      root_(std::move(root)),
      stm_clock_(root_ + "/stm/clock"),
      ref_heads_(root_ + "/stm/refs"),
      tags_(root_ + "/stm/tags"),
      markers_(root_ + "/stm/markers"),
      sessions_(root_ + "/stm/sessions") {}

std::string Layout::session(std::int64_t session) const {
  return sessions_ + "/" + session_hex(session);
}

std::string Layout::value_key(const std::string& kind, const std::string& name) const {
  // The deployment is one escaped segment: roots may nest, so root "/r" with ref "/ref/x/y"
  // and root "/r/ref/x" with ref "/y" must not compose to the same key.
  std::string deployment;
  for (const char c : chroot_ + root_) {
    if (c == '%')
      deployment += "%25";
    else if (c == '/')
      deployment += "%2F";
    else
      deployment += c;
  }
  return "/" + deployment + "/" + kind + name;
}

}  // namespace avout::detail
