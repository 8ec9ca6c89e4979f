// Out-of-line anchor for the error hierarchy (keeps vtables in one object file).
#include <avout/errors.hpp>
