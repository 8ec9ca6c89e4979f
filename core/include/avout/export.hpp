#pragma once
// What avout's shared libraries export. They are built with hidden visibility, so a program
// sees only the classes and functions of the public headers marked AVOUT_API; a marked class's
// typeinfo is one across the library boundary (an exception thrown inside the library is
// caught by its type in the program).

#if defined(__GNUC__)  // GCC and clang
/// Exports a class (its out-of-line members, vtable and typeinfo) or a function from avout.
#define AVOUT_API __attribute__((visibility("default")))
#else
#define AVOUT_API
#endif
