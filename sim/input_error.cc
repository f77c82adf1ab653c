// Formatting of input problems.
#include "sim/input_error.h"

namespace dtsim {

namespace {

std::string line_of(const std::string& source, const InputProblem& p) {
  std::string out = source;
  for (const std::string* part : {&p.pointer, &p.message}) {
    if (part->empty()) continue;
    out += (out.empty() ? "" : ": ") + *part;
  }
  return out;
}

std::string joined(const std::string& source, const std::vector<InputProblem>& problems) {
  std::string out;
  for (const InputProblem& p : problems) out += (out.empty() ? "" : "\n") + line_of(source, p);
  return out;
}

}  // namespace

InputProblem problem_at(std::string_view dotted_key, std::string message) {
  std::string pointer;
  size_t start = 0;
  while (start <= dotted_key.size()) {
    const size_t dot = dotted_key.find('.', start);
    pointer += "/";
    pointer += dotted_key.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return InputProblem{std::move(pointer), std::move(message)};
}

std::string describe_problems(const std::vector<InputProblem>& problems,
                              std::string_view separator) {
  std::string out;
  for (const InputProblem& p : problems) {
    if (!out.empty()) out += separator;
    out += line_of("", p);
  }
  return out;
}

InputError::InputError(std::string source, std::vector<InputProblem> problems)
    : std::runtime_error(joined(source, problems)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

std::vector<std::string> InputError::messages() const {
  std::vector<std::string> out;
  for (const InputProblem& p : problems_) out.push_back(line_of(source_, p));
  return out;
}

}  // namespace dtsim
