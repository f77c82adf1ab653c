// DTSIM_ASAN: defined in an AddressSanitizer build, which GCC and clang announce apart.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define DTSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTSIM_ASAN 1
#endif
#endif
