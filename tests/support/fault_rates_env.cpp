#include "support/fault_rates_env.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace avout::testing {

void rates_from_env(const char* variable, const std::map<std::string, double*>& fields) {
  const char* text = std::getenv(variable);
  if (text == nullptr) return;
  if (std::string(text) == "off") {
    for (const auto& [key, field] : fields) *field = 0;
    return;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto equals = item.find('=');
    const std::string key = item.substr(0, equals);
    const auto field = fields.find(key);
    if (equals == std::string::npos || field == fields.end()) {
      throw std::invalid_argument(std::string(variable) + ": unknown or malformed item \"" + item +
                                  "\"");
    }
    *field->second = std::stod(item.substr(equals + 1));
  }
}

}  // namespace avout::testing
