// The JSON form of an op signature: names for kinds, passes and dtypes; shapes as arrays.
#include "models/op_signature_json.h"

#include <stdexcept>

namespace dtsim::models {

namespace {

using nlohmann::json;

DType dtype_of(const json& o, const char* key, DType fallback) {
  if (!o.contains(key)) return fallback;
  const auto t =
      o.at(key).is_string() ? dtype_from_name(o.at(key).get<std::string>()) : std::nullopt;
  if (!t)
    throw std::invalid_argument(std::string("\"") + key +
                                "\": expected a dtype name (fp32, bf16, ...)");
  return *t;
}

// `n` integers under `key`, or all zero when absent.
std::vector<int64_t> ints(const json& o, const char* key, size_t n) {
  std::vector<int64_t> out(n, 0);
  if (!o.contains(key)) return out;
  const json& a = o.at(key);
  if (!a.is_array() || a.size() != n) {
    throw std::invalid_argument(std::string("\"") + key + "\": expected an array of " +
                                std::to_string(n) + " integers");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!a[i].is_number_integer()) {
      throw std::invalid_argument(std::string("\"") + key + "\"[" + std::to_string(i) +
                                  "]: expected an integer");
    }
    out[i] = a[i].get<int64_t>();
  }
  return out;
}

}  // namespace

json op_signature_to_json(const OpSignature& op) {
  json o = json::object();
  o["name"] = op.name;
  o["kind"] = kernel_kind_name(op.kind);
  if (op.pass != OpPass::kForward) o["pass"] = op_pass_name(op.pass);
  o["storage"] = dtype_name(op.storage);
  o["math"] = dtype_name(op.math);
  if (op.accumulate != DType::kFp32) o["accumulate"] = dtype_name(op.accumulate);
  const GemmDims& g = op.gemm;
  if (g != GemmDims{})
    o["gemm"] = {g.m, g.n, g.k, g.batch, g.transpose_a ? 1 : 0, g.transpose_b ? 1 : 0};
  const ConvDims& c = op.conv;
  if (c != ConvDims{}) o["conv"] = {c.n, c.c, c.h, c.w, c.k, c.r, c.s, c.stride, c.padding};
  const AttentionDims& a = op.attention;
  if (a != AttentionDims{}) {
    o["attention"] = {a.batch, a.heads, a.kv_heads, a.head_dim, a.q_len, a.kv_len, a.window};
  }
  if (op.rows != 0 || op.width != 0) o["rows_width"] = {op.rows, op.width};
  if (op.causal) o["causal"] = true;
  if (op.recomputed) o["recomputed"] = true;
  if (op.attention_core) o["attention_core"] = true;
  if (op.flops != 0) o["flops"] = op.flops;
  if (op.bytes != 0) o["bytes"] = op.bytes;
  return o;
}

OpSignature op_signature_from_json(const json& o) {
  if (!o.is_object()) throw std::invalid_argument("expected an op signature object");
  OpSignature op;
  if (!o.contains("name") || !o.at("name").is_string()) {
    throw std::invalid_argument("\"name\": expected the op's name, a string");
  }
  op.name = o.at("name").get<std::string>();
  const auto kind = o.contains("kind") && o.at("kind").is_string()
                        ? kernel_kind_from_name(o.at("kind").get<std::string>())
                        : std::nullopt;
  if (!kind)
    throw std::invalid_argument("\"kind\": expected a kernel kind (gemm, flash_attention, ...)");
  op.kind = *kind;
  if (o.contains("pass")) {
    const auto pass = o.at("pass").is_string() ? op_pass_from_name(o.at("pass").get<std::string>())
                                               : std::nullopt;
    if (!pass)
      throw std::invalid_argument(
          "\"pass\": expected forward, backward_data, backward_weight, backward or step");
    op.pass = *pass;
  }
  op.storage = dtype_of(o, "storage", op.storage);
  op.math = dtype_of(o, "math", op.math);
  op.accumulate = dtype_of(o, "accumulate", op.accumulate);
  if (o.contains("gemm")) {
    const auto g = ints(o, "gemm", 6);
    op.gemm = GemmDims{g[0], g[1], g[2], g[3], g[4] != 0, g[5] != 0};
  }
  if (o.contains("conv")) {
    const auto c = ints(o, "conv", 9);
    op.conv = ConvDims{c[0],
                       c[1],
                       c[2],
                       c[3],
                       c[4],
                       c[5],
                       c[6],
                       static_cast<int32_t>(c[7]),
                       static_cast<int32_t>(c[8])};
  }
  if (o.contains("attention")) {
    const auto a = ints(o, "attention", 7);
    op.attention = AttentionDims{a[0], a[1], a[2], a[3], a[4], a[5], a[6]};
  }
  if (o.contains("rows_width")) {
    const auto rw = ints(o, "rows_width", 2);
    op.rows = rw[0];
    op.width = rw[1];
  }
  for (const auto& [key, field] :
       {std::pair{"causal", &op.causal}, std::pair{"recomputed", &op.recomputed},
        std::pair{"attention_core", &op.attention_core}}) {
    if (!o.contains(key)) continue;
    if (!o.at(key).is_boolean())
      throw std::invalid_argument(std::string("\"") + key + "\": expected true or false");
    *field = o.at(key).get<bool>();
  }
  for (const auto& [key, field] : {std::pair{"flops", &op.flops}, std::pair{"bytes", &op.bytes}}) {
    if (!o.contains(key)) continue;
    if (!o.at(key).is_number() || o.at(key).get<double>() < 0) {
      throw std::invalid_argument(std::string("\"") + key + "\": expected a number of at least 0");
    }
    *field = o.at(key).get<double>();
  }
  return op;
}

json op_operands_to_json(const OpOperands& operands) {
  json out = json::array();
  for (const OperandBinding& b : operands) {
    const int64_t layer = b.tensor.layer == kModelInput ? -1 : static_cast<int64_t>(b.tensor.layer);
    out.push_back({b.operand, tensor_role_name(b.tensor.role), layer, b.tensor.op, b.offset});
  }
  return out;
}

OpOperands op_operands_from_json(const json& value) {
  if (!value.is_array()) throw std::invalid_argument("expected an array of bound operands");
  OpOperands out;
  for (size_t i = 0; i < value.size(); ++i) {
    const json& e = value[i];
    const std::string where = "[" + std::to_string(i) + "]: ";
    const auto integer_at = [&](size_t k, int64_t low, int64_t high) {
      if (!e[k].is_number_integer() || e[k].get<int64_t>() < low || e[k].get<int64_t>() > high) {
        throw std::invalid_argument(where + "entry " + std::to_string(k) +
                                    ": expected an integer from " + std::to_string(low) + " to " +
                                    std::to_string(high));
      }
      return e[k].get<int64_t>();
    };
    if (!e.is_array() || e.size() != 5 || !e[0].is_string() || !e[1].is_string()) {
      throw std::invalid_argument(where + "expected [operand, role, layer, op, offset]");
    }
    const auto role = tensor_role_from_name(e[1].get<std::string>());
    if (!role) {
      throw std::invalid_argument(where + "\"" + e[1].get<std::string>() +
                                  "\" is not a tensor role (output, weight, grads, ...)");
    }
    const int64_t layer = integer_at(2, -1, INT32_MAX);
    OperandBinding b;
    b.operand = e[0].get<std::string>();
    b.tensor = {*role, layer < 0 ? kModelInput : static_cast<uint32_t>(layer),
                static_cast<uint32_t>(integer_at(3, 0, INT32_MAX))};
    b.offset = integer_at(4, 0, int64_t{1} << 40);  // elements: past any memory beyond
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace dtsim::models
