// Bad input, as one type for every layer: problems, each at a JSON pointer into the
// scenario with a message, so that a host (the CLI's error list, the GUI's field markers)
// reads where each one is without parsing text.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

struct InputProblem {
  std::string pointer;  // RFC 6901 into the scenario document; "" for the whole of it
  std::string message;
};

// The problem at a scenario key written with dots ("parallelism.bucket" ->
// "/parallelism/bucket"; keys hold no "/" or "~").
InputProblem problem_at(std::string_view dotted_key, std::string message);

// "<pointer>: <message>" per problem (the message alone at the document's root), joined
// by `separator`: a list for a host that names the source itself.
std::string describe_problems(const std::vector<InputProblem>& problems,
                              std::string_view separator);

class InputError : public std::runtime_error {
 public:
  // `source` names the input ("scenario.json"; "" when the thrower does not know it).
  InputError(std::string source, std::vector<InputProblem> problems);
  const std::string& source() const { return source_; }
  const std::vector<InputProblem>& problems() const { return problems_; }
  // "<source>: <pointer>: <message>" per problem, without the parts that are empty.
  std::vector<std::string> messages() const;

 private:
  std::string source_;
  std::vector<InputProblem> problems_;
};

}  // namespace dtsim
