#include "ir/graph.h"

#include <c10/util/Exception.h>
#include <c10/util/hash.h>

#include <algorithm>

namespace torch_tpu::ir {

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* mlir_element_type(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return "i1";
    case c10::kByte: return "ui8";
    case c10::kChar: return "i8";
    case c10::kShort: return "i16";
    case c10::kInt: return "i32";
    case c10::kLong: return "i64";
    case c10::kHalf: return "f16";
    case c10::kFloat: return "f32";
    case c10::kDouble: return "f64";
    case c10::kBFloat16: return "bf16";
    case c10::kUInt32: return "ui32";
    case c10::kUInt64: return "ui64";
    case c10::kComplexFloat: return "complex<f32>";
    case c10::kComplexDouble: return "complex<f64>";
    default:
      TORCH_CHECK_TYPE(false, "tpu: unsupported dtype ", t);
  }
}

std::string mlir_type(const Type& t) {
  std::string s = "tensor<";
  for (int64_t d : t.shape) {
    s += std::to_string(d);
    s += 'x';
  }
  s += mlir_element_type(t.dtype);
  s += '>';
  return s;
}

Value Graph::param(Type t) {
  Value v = static_cast<Value>(types_.size());
  params_.push_back(v);
  types_.push_back(std::move(t));
  def_.push_back(-1);
  return v;
}

void Graph::set_param_type(Value param, Type t) {
  TORCH_INTERNAL_ASSERT(param >= 0 && param < (Value)types_.size() && def_[param] < 0, "not a parameter");
  types_[param] = std::move(t);
}

void Graph::alias(size_t param_index, size_t output_index) {
  TORCH_INTERNAL_ASSERT(param_index < params_.size() && output_index < outputs_.size() &&
                            types_[params_[param_index]] == types_[outputs_[output_index]],
                        "an alias joins a parameter and an output of one type");
  aliases_.emplace_back(param_index, output_index);
}

void Graph::truncate(const Mark& m) {
  aliases_.clear();
  TORCH_INTERNAL_ASSERT(m.values <= types_.size() && m.nodes <= nodes_.size() && m.params <= params_.size());
  types_.resize(m.values);
  def_.resize(m.values);
  nodes_.resize(m.nodes);
  params_.resize(m.params);
}

Value Graph::add(std::string op, std::vector<Value> operands, Type result, std::string attrs,
                 std::string region) {
  return add_multi(std::move(op), std::move(operands), {std::move(result)}, std::move(attrs),
                   std::move(region))[0];
}

std::vector<Value> Graph::add_multi(std::string op, std::vector<Value> operands,
                                    std::vector<Type> results, std::string attrs,
                                    std::string region) {
  for (Value v : operands) TORCH_INTERNAL_ASSERT(v >= 0 && v < (Value)types_.size(), "bad operand");
  Node n;
  n.op = std::move(op);
  n.operands = std::move(operands);
  n.attrs = std::move(attrs);
  n.region = std::move(region);
  n.first_result = static_cast<Value>(types_.size());
  std::vector<Value> ids;
  for (auto& t : results) {
    ids.push_back(static_cast<Value>(types_.size()));
    types_.push_back(t);
    def_.push_back(static_cast<int>(nodes_.size()));
  }
  n.results = std::move(results);
  nodes_.push_back(std::move(n));
  return ids;
}

std::optional<Graph> Graph::pruned(const std::vector<Value>& outputs, std::vector<size_t>& kept_params) const {
  std::vector<char> live(types_.size(), 0);
  for (Value v : outputs) live[v] = 1;
  std::vector<char> node_live(nodes_.size(), 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node& n = nodes_[i];
    for (size_t r = 0; r < n.results.size() && !node_live[i]; ++r) node_live[i] = live[n.first_result + r];
    if (node_live[i])
      for (Value o : n.operands) live[o] = 1;
  }
  kept_params.clear();
  for (size_t i = 0; i < params_.size(); ++i)
    if (live[params_[i]]) kept_params.push_back(i);
  bool all_nodes = std::all_of(node_live.begin(), node_live.end(), [](char c) { return c != 0; });
  if (all_nodes && kept_params.size() == params_.size()) return std::nullopt;

  Graph g;
  std::vector<Value> remap(types_.size(), -1);
  size_t next_param = 0;
  // Parameters and nodes interleave in value order; keep that order.
  for (Value v = 0; v < static_cast<Value>(types_.size());) {
    if (def_[v] < 0) {
      if (next_param < kept_params.size() && params_[kept_params[next_param]] == v) {
        remap[v] = g.param(types_[v]);
        ++next_param;
      }
      ++v;
      continue;
    }
    size_t i = def_[v];
    const Node& n = nodes_[i];
    if (node_live[i]) {
      std::vector<Value> operands;
      for (Value o : n.operands) operands.push_back(remap[o]);
      std::vector<Value> ids = g.add_multi(n.op, std::move(operands), n.results, n.attrs, n.region);
      for (size_t r = 0; r < ids.size(); ++r) remap[n.first_result + r] = ids[r];
    }
    v = n.first_result + static_cast<Value>(n.results.size());
  }
  for (Value v : outputs) g.output(remap[v]);
  return g;
}

size_t Graph::hash() const {
  size_t h = 0;
  auto mix = [&](size_t v) { h = c10::hash_combine(h, v); };
  auto mix_type = [&](const Type& t) {
    mix(static_cast<size_t>(t.dtype));
    mix(t.shape.size());
    for (int64_t d : t.shape) mix(static_cast<size_t>(d));
  };
  std::hash<std::string> hs;
  for (Value p : params_) {
    mix(static_cast<size_t>(p));
    mix_type(types_[p]);
  }
  for (auto& n : nodes_) {
    mix(hs(n.op));
    for (Value v : n.operands) mix(static_cast<size_t>(v));
    for (auto& t : n.results) mix_type(t);
    if (!n.attrs.empty()) mix(hs(n.attrs));
    if (!n.region.empty()) mix(hs(n.region));
  }
  for (Value v : outputs_) mix(static_cast<size_t>(v));
  for (auto& [param, output] : aliases_) mix(param * 0x10001 + output);
  return h;
}

bool Graph::operator==(const Graph& o) const {
  if (params_ != o.params_ || outputs_ != o.outputs_ || aliases_ != o.aliases_ || nodes_.size() != o.nodes_.size())
    return false;
  for (Value p : params_)
    if (types_[p] != o.types_[p]) return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& a = nodes_[i];
    const Node& b = o.nodes_[i];
    if (a.op != b.op || a.operands != b.operands || a.results != b.results || a.attrs != b.attrs ||
        a.region != b.region)
      return false;
  }
  return true;
}

std::string Graph::nodes_text(const std::string& indent) const {
  std::string s;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    s += indent + node_name(i);
    if (n.results.size() > 1) s += ":" + std::to_string(n.results.size());
    s += " = \"" + n.op + "\"(";
    for (size_t j = 0; j < n.operands.size(); ++j) {
      if (j) s += ", ";
      s += name(n.operands[j]);
    }
    s += ")";
    if (!n.region.empty()) s += " " + n.region;
    if (!n.attrs.empty()) s += " " + n.attrs;
    s += " : (";
    for (size_t j = 0; j < n.operands.size(); ++j) {
      if (j) s += ", ";
      s += mlir_type(types_[n.operands[j]]);
    }
    s += ") -> ";
    if (n.results.size() == 1) {
      s += mlir_type(n.results[0]);
    } else {
      s += "(";
      for (size_t j = 0; j < n.results.size(); ++j) {
        if (j) s += ", ";
        s += mlir_type(n.results[j]);
      }
      s += ")";
    }
    s += "\n";
  }
  return s;
}

std::string Graph::return_text(const char* op) const {
  std::string s = std::string("    \"") + op + "\"(";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (i) s += ", ";
    s += name(outputs_[i]);
  }
  s += ") : (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (i) s += ", ";
    s += mlir_type(types_[outputs_[i]]);
  }
  return s + ") -> ()";
}

std::string Graph::to_region() const {
  std::string s = "{\n  ^bb0(";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) s += ", ";
    s += name(params_[i]) + ": " + mlir_type(types_[params_[i]]);
  }
  s += "):\n";
  s += nodes_text("    ");
  s += return_text("stablehlo.return") + "\n  }";
  return s;
}

std::string Graph::scope() const {
  // Depth 0 keeps the plain names; regions prefix theirs with their depth.
  return depth_ == 0 ? "%" : "%r" + std::to_string(depth_) + "_";
}

std::string Graph::node_name(size_t node) const { return scope() + "n" + std::to_string(node); }

std::string Graph::name(Value v) const {
  int d = def_[v];
  if (d < 0) return scope() + "arg" + std::to_string(v);
  const Node& n = nodes_[d];
  std::string base = node_name(d);
  if (n.results.size() == 1) return base;
  return base + "#" + std::to_string(v - n.first_result);
}

std::string Graph::to_mlir() const {
  std::string s = "module @torch_tpu {\n  func.func public @main(";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) s += ", ";
    s += "%arg" + std::to_string(params_[i]) + ": " + mlir_type(types_[params_[i]]);
    for (auto& [param, output] : aliases_)
      if (param == i) s += " {tf.aliasing_output = " + std::to_string(output) + " : i32}";
  }
  s += ") -> (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (i) s += ", ";
    s += mlir_type(types_[outputs_[i]]);
  }
  s += ") {\n";
  s += nodes_text("    ");
  s += return_text("func.return") + "\n  }\n}\n";
  return s;
}

}  // namespace torch_tpu::ir
