#include "zk/chroot.hpp"

#include <avout/errors.hpp>
#include <avout/zookeeper_session.hpp>

namespace avout::detail {

void normalize_chroot(std::string& hosts, std::string& chroot) {
  if (const auto slash = hosts.find('/'); slash != std::string::npos) {
    std::string in_hosts = hosts.substr(slash);
    if (!chroot.empty() && chroot != in_hosts) {
      throw InvalidName("zookeeper: two chroots, \"" + in_hosts + "\" in the hosts \"" + hosts +
                        "\" and \"" + chroot + "\" in the options");
    }
    hosts.erase(slash);
    chroot = std::move(in_hosts);
  }
  if (chroot == "/") chroot.clear();  // the whole tree: no chroot
  if (!chroot.empty()) validate_path(chroot);
}

}  // namespace avout::detail
