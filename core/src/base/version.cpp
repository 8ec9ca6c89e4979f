#include <avout/version.hpp>

namespace avout {

const char* version() noexcept { return AVOUT_VERSION_STRING; }

}  // namespace avout
