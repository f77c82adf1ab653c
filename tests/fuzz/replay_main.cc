// The fuzz targets' main in builds without libFuzzer (GCC, the release build): runs the
// target once on each file named on the command line, as libFuzzer does with files, so
// that every build replays the crash inputs kept in tests/fuzz/regressions.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s INPUT...\n(runs the fuzz target once on each input)\n",
                 argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read the file\n", argv[i]);
      return 2;
    }
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::printf("%s: ran (%zu bytes)\n", argv[i], bytes.size());
  }
  return 0;
}
