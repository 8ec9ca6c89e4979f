#pragma once
// The ZooKeeper C client accepts a chroot at the end of its connect string
// ("host:port,host:port/app"). avout keeps the chroot in one field only: store keys name the
// deployment by it, so a chroot left in the host string would make two deployments share keys.

#include <string>

namespace avout::detail {

/// Moves a chroot written at the end of `hosts` into `chroot` (InvalidName when `chroot`
/// already names another one), makes the chroot "/" none, and validates what is left.
void normalize_chroot(std::string& hosts, std::string& chroot);

}  // namespace avout::detail
