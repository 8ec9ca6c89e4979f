#pragma once
// The one reader of the fault-rate environment variables (AVOUT_ZK_FAULTS,
// AVOUT_STORE_FAULTS): "key=value,key=value" or "off".

#include <map>
#include <string>

namespace avout::testing {

/// Reads `variable` into the rates `fields` names: each "key=value" sets the field of that
/// key (unknown keys are refused with std::invalid_argument naming them), "off" sets every
/// field to zero, an unset variable changes nothing.
void rates_from_env(const char* variable, const std::map<std::string, double*>& fields);

}  // namespace avout::testing
