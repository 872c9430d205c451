// The SSA graph: building, hashing, equality, pruning and the StableHLO printer.
#include "ir/graph.h"

#include <c10/util/Exception.h>
#include <c10/util/hash.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_map>

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
    case c10::kUInt16: return "ui16";
    case c10::kUInt32: return "ui32";
    case c10::kUInt64: return "ui64";
    case c10::kFloat8_e5m2: return "f8E5M2";
    case c10::kFloat8_e4m3fn: return "f8E4M3FN";
    case c10::kFloat8_e5m2fnuz: return "f8E5M2FNUZ";
    case c10::kFloat8_e4m3fnuz: return "f8E4M3FNUZ";
    case c10::kFloat8_e8m0fnu: return "f8E8M0FNU";
    case c10::kComplexFloat: return "complex<f32>";
    // XLA has no complex32: its values are computed, and held on the device,
    // as complex64 (see exec::held_dtype).
    case c10::kComplexHalf: return "complex<f32>";
    case c10::kComplexDouble: return "complex<f64>";
    // Bits types are opaque bytes to PyTorch (copies, cat, views only).
    case c10::kBits1x8:
    case c10::kBits2x4:
    case c10::kBits4x2:
    case c10::kBits8: return "ui8";
    case c10::kBits16: return "ui16";
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

namespace {

struct TypeKey {
  c10::ScalarType dtype;
  c10::ArrayRef<int64_t> shape;
  bool operator==(const TypeKey& o) const { return dtype == o.dtype && shape.equals(o.shape); }
};
struct TypeKeyHash {
  size_t operator()(const TypeKey& k) const {
    size_t h = static_cast<size_t>(k.dtype);
    for (int64_t d : k.shape) h = c10::hash_combine(h, static_cast<size_t>(d));
    return h;
  }
};

// Entries live in deques (stable addresses); the maps' keys view into them.
struct Interned {
  std::mutex mutex;
  std::deque<Symbol::Entry> symbols;
  std::unordered_map<std::string_view, const Symbol::Entry*> symbol_index;
  std::deque<Type> types;
  std::unordered_map<TypeKey, const Type*, TypeKeyHash> type_index;
};

Interned& interned() {
  static auto* table = new Interned();  // never destroyed: graphs may outlive static destruction
  return *table;
}

const Symbol::Entry* intern_text(std::string_view text) {
  Interned& t = interned();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.symbol_index.find(text);
  if (it != t.symbol_index.end()) return it->second;
  t.symbols.push_back({std::string(text), std::hash<std::string_view>()(text)});
  const Symbol::Entry* e = &t.symbols.back();
  t.symbol_index.emplace(std::string_view(e->text), e);
  return e;
}

// The attributes of a func.call node of `callee`.
std::string callee_attrs(const std::string& callee) { return "{callee = @" + callee + "}"; }

}  // namespace

Symbol::Symbol() {
  static const Entry* empty = intern_text({});
  entry_ = empty;
}

Symbol::Symbol(std::string_view text) : entry_(text.empty() ? Symbol().entry_ : intern_text(text)) {}

const Type* intern(const Type& type) {
  Interned& t = interned();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.type_index.find(TypeKey{type.dtype, type.shape});
  if (it != t.type_index.end()) return it->second;
  t.types.push_back(type);
  const Type* stored = &t.types.back();
  t.type_index.emplace(TypeKey{stored->dtype, stored->shape}, stored);
  return stored;
}

Value Graph::param(const Type& t) {
  Value v = static_cast<Value>(types_.size());
  params_.push_back(v);
  types_.push_back(intern(t));
  def_.push_back(-1);
  return v;
}

void Graph::set_param_type(Value param, const Type& t) {
  TORCH_INTERNAL_ASSERT(param >= 0 && param < (Value)types_.size() && def_[param] < 0, "not a parameter");
  types_[param] = intern(t);
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
  if (m.nodes < nodes_.size()) operands_.resize(nodes_[m.nodes].operand_begin);
  types_.resize(m.values);
  def_.resize(m.values);
  nodes_.resize(m.nodes);
  params_.resize(m.params);
  functions_.resize(m.functions);
}

Value Graph::append(std::string_view op, c10::ArrayRef<Value> operands, c10::ArrayRef<Type> results,
                    std::string_view attrs, std::string_view region) {
  for (Value v : operands) TORCH_INTERNAL_ASSERT(v >= 0 && v < (Value)types_.size(), "bad operand");
  Node n;
  n.op = Symbol(op);
  n.attrs = Symbol(attrs);
  n.region = Symbol(region);
  n.operand_begin = static_cast<uint32_t>(operands_.size());
  n.num_operands = static_cast<uint32_t>(operands.size());
  std::vector<Value> copy;  // when the operands are a range of operands_ itself, which may move
  if (!operands.empty() && operands.data() >= operands_.data() && operands.data() < operands_.data() + operands_.size()) {
    copy.assign(operands.begin(), operands.end());
    operands = copy;
  }
  operands_.insert(operands_.end(), operands.begin(), operands.end());
  n.first_result = static_cast<Value>(types_.size());
  n.num_results = static_cast<uint32_t>(results.size());
  for (const Type& t : results) {
    types_.push_back(intern(t));
    def_.push_back(static_cast<int>(nodes_.size()));
  }
  nodes_.push_back(n);
  return n.first_result;
}

Value Graph::add(std::string_view op, c10::ArrayRef<Value> operands, const Type& result, std::string_view attrs,
                 std::string_view region) {
  return append(op, operands, c10::ArrayRef<Type>(result), attrs, region);
}

std::vector<Value> Graph::add_multi(std::string_view op, c10::ArrayRef<Value> operands,
                                    c10::ArrayRef<Type> results, std::string_view attrs, std::string_view region) {
  Value first = append(op, operands, results, attrs, region);
  std::vector<Value> ids(results.size());
  for (size_t r = 0; r < ids.size(); ++r) ids[r] = first + static_cast<Value>(r);
  return ids;
}

std::vector<Value> Graph::call(std::string_view name, std::string_view definition, c10::ArrayRef<Value> args,
                               c10::ArrayRef<Type> results) {
  // Regions print inside @main; a function is defined at the module's level.
  TORCH_INTERNAL_ASSERT(depth_ == 0, "a function call inside a region");
  Symbol callee(name);
  bool known = std::any_of(functions_.begin(), functions_.end(), [&](auto& f) { return f.first == callee; });
  if (!known) functions_.emplace_back(callee, Symbol(definition));
  return add_multi("func.call", args, results, callee_attrs(callee.str()));
}

std::optional<Graph> Graph::pruned(const std::vector<Value>& outputs, std::vector<size_t>& kept_params) const {
  std::vector<char> live(types_.size(), 0);
  for (Value v : outputs) live[v] = 1;
  std::vector<char> node_live(nodes_.size(), 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node& n = nodes_[i];
    for (size_t r = 0; r < n.num_results && !node_live[i]; ++r) node_live[i] = live[n.first_result + r];
    if (node_live[i])
      for (Value o : operands(n)) live[o] = 1;
  }
  kept_params.clear();
  for (size_t i = 0; i < params_.size(); ++i)
    if (live[params_[i]]) kept_params.push_back(i);
  bool all_nodes = std::all_of(node_live.begin(), node_live.end(), [](char c) { return c != 0; });
  if (all_nodes && kept_params.size() == params_.size()) return std::nullopt;

  Graph g;
  g.nodes_.reserve(nodes_.size());
  g.operands_.reserve(operands_.size());
  g.types_.reserve(types_.size());
  g.def_.reserve(types_.size());
  std::vector<Value> remap(types_.size(), -1);
  size_t next_param = 0;
  // Parameters and nodes interleave in value order; keep that order.
  for (Value v = 0; v < static_cast<Value>(types_.size());) {
    if (def_[v] < 0) {
      if (next_param < kept_params.size() && params_[kept_params[next_param]] == v) {
        remap[v] = g.param(*types_[v]);
        ++next_param;
      }
      ++v;
      continue;
    }
    size_t i = def_[v];
    const Node& n = nodes_[i];
    if (node_live[i]) {
      Node copy = n;
      copy.operand_begin = static_cast<uint32_t>(g.operands_.size());
      for (Value o : operands(n)) g.operands_.push_back(remap[o]);
      copy.first_result = static_cast<Value>(g.types_.size());
      for (uint32_t r = 0; r < n.num_results; ++r) {
        remap[n.first_result + r] = static_cast<Value>(g.types_.size());
        g.types_.push_back(types_[n.first_result + r]);
        g.def_.push_back(static_cast<int>(g.nodes_.size()));
      }
      g.nodes_.push_back(copy);
    }
    v = n.first_result + static_cast<Value>(n.num_results);
  }
  for (Value v : outputs) g.output(remap[v]);
  for (auto& f : functions_) {
    std::string attrs = callee_attrs(f.first.str());
    bool called = false;
    for (size_t i = 0; i < nodes_.size() && !called; ++i) called = node_live[i] && nodes_[i].attrs == attrs;
    if (called) g.functions_.push_back(f);
  }
  return g;
}

size_t Graph::hash() const { return structure_hash(true); }
size_t Graph::shape_family_hash() const { return structure_hash(false); }

size_t Graph::structure_hash(bool with_sizes) const {
  size_t h = 0;
  auto mix = [&](size_t v) { h = c10::hash_combine(h, v); };
  auto mix_type = [&](const Type* t) {
    if (with_sizes) return mix(reinterpret_cast<uintptr_t>(t));  // interned
    mix(static_cast<size_t>(t->dtype));
    mix(t->shape.size());
  };
  for (Value p : params_) {
    mix(static_cast<size_t>(p));
    mix_type(types_[p]);
  }
  for (const Node& n : nodes_) {
    mix(n.op.hash());
    for (Value v : operands(n)) mix(static_cast<size_t>(v));
    for (uint32_t r = 0; r < n.num_results; ++r) mix_type(types_[n.first_result + r]);
    if (!with_sizes) continue;  // attributes hold sizes (slice limits, constants' shapes)
    mix(n.attrs.hash());
    mix(n.region.hash());
  }
  for (Value v : outputs_) mix(static_cast<size_t>(v));
  for (auto& [param, output] : aliases_) mix(param * 0x10001 + output);
  for (auto& f : functions_) mix(f.first.hash());  // a name identifies its definition
  return h;
}

bool Graph::operator==(const Graph& o) const {
  // Values are numbered densely in node order, so equal params, nodes and
  // operands mean equal value numbering; interned types compare by address.
  if (params_ != o.params_ || outputs_ != o.outputs_ || aliases_ != o.aliases_ || nodes_.size() != o.nodes_.size() ||
      types_ != o.types_ || operands_ != o.operands_ || functions_ != o.functions_)
    return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& a = nodes_[i];
    const Node& b = o.nodes_[i];
    if (a.op != b.op || a.num_operands != b.num_operands || a.num_results != b.num_results || a.attrs != b.attrs ||
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
    if (n.num_results > 1) s += ":" + std::to_string(n.num_results);
    s += " = \"" + n.op.str() + "\"(";
    c10::ArrayRef<Value> args = operands(n);
    for (size_t j = 0; j < args.size(); ++j) {
      if (j) s += ", ";
      s += name(args[j]);
    }
    s += ")";
    if (!n.region.empty()) s += " " + n.region.str();
    if (!n.attrs.empty()) s += " " + n.attrs.str();
    s += " : (";
    for (size_t j = 0; j < args.size(); ++j) {
      if (j) s += ", ";
      s += mlir_type(*types_[args[j]]);
    }
    s += ") -> ";
    if (n.num_results == 1) {
      s += mlir_type(*types_[n.first_result]);
    } else {
      s += "(";
      for (uint32_t j = 0; j < n.num_results; ++j) {
        if (j) s += ", ";
        s += mlir_type(*types_[n.first_result + j]);
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
    s += mlir_type(*types_[outputs_[i]]);
  }
  return s + ") -> ()";
}

std::string Graph::to_region() const {
  std::string s = "{\n  ^bb0(";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) s += ", ";
    s += name(params_[i]) + ": " + mlir_type(*types_[params_[i]]);
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
  if (n.num_results == 1) return base;
  return base + "#" + std::to_string(v - n.first_result);
}

std::string Graph::to_mlir() const {
  std::string s = "module @torch_tpu {\n  func.func public @main(";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) s += ", ";
    s += "%arg" + std::to_string(params_[i]) + ": " + mlir_type(*types_[params_[i]]);
    for (auto& [param, output] : aliases_)
      if (param == i) s += " {tf.aliasing_output = " + std::to_string(output) + " : i32}";
  }
  s += ") -> (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (i) s += ", ";
    s += mlir_type(*types_[outputs_[i]]);
  }
  s += ") {\n";
  s += nodes_text("    ");
  s += return_text("func.return") + "\n  }\n";
  for (auto& f : functions_) s += f.second.str() + "\n";
  return s + "}\n";
}

std::string i64_array(const std::vector<int64_t>& v) {
  if (v.empty()) return "array<i64>";
  std::string s = "array<i64: ";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ">";
}

Value reshape(Graph& g, Value v, const Shape& shape) {
  const Type& t = g.type(v);
  if (t.shape == shape) return v;
  TORCH_INTERNAL_ASSERT((Type{t.dtype, shape}.numel() == t.numel()), "reshape changes numel");
  return g.add("stablehlo.reshape", {v}, Type{t.dtype, shape});
}

}  // namespace torch_tpu::ir
