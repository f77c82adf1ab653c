// LeakSanitizer settings built into the MPI programs (dtsim-rank, dtsim-comm-probe) of a
// sanitizer build: Open MPI leaves allocations of its own (and of the plugins it unloads
// in MPI_Finalize) at exit, which are not dtsim's to fix; every other leak still fails.
#include "sim/sanitizer.h"

#ifdef DTSIM_ASAN
// The full unwinder at each allocation: Open MPI's plugins are built without frame
// pointers, so the fast one stops in a plugin that is gone by the time leaks are reported
// ("<unknown module>"), before the Open MPI library frames the suppressions name.
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libhwloc.so\n"
         "leak:libevent\n"
         "leak:libpmix.so\n";
}
#endif
