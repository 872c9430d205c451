// A small SSA graph of StableHLO operations and its MLIR text printer.
//
// Invariants:
//  - Values are numbered densely in creation order: parameters and node results
//    share one numbering, and an operand always refers to an earlier value, so
//    the node list is already in topological order.
//  - Node attributes and regions are stored as already-rendered MLIR text in
//    the generic form; they take part in hashing and equality like everything
//    else, so two graphs are equal exactly when they print the same program.
//  - A graph may call functions defined outside it (JAX's lowered programs):
//    their definitions are MLIR text, one per symbol name, printed after @main.
//  - Nothing here touches devices or ATen: a Graph is pure data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

namespace torch_tpu::ir {

using Shape = std::vector<int64_t>;

struct Type {
  c10::ScalarType dtype = c10::kFloat;
  Shape shape;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * c10::elementSize(dtype); }
  bool operator==(const Type& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const Type& o) const { return !(*this == o); }
};

// "tensor<2x3xf32>"
std::string mlir_type(const Type& t);
// "f32", "i1", "bf16", ...
const char* mlir_element_type(c10::ScalarType t);

using Value = int;

// Op names, attribute texts and region texts, and value types, are interned:
// each distinct one is stored once for the life of the process (programs
// repeat the same few thousand), so a node is plain data, graphs copy and
// compare without allocating, and a type reference never dangles.
class Symbol {
 public:
  Symbol();  // the empty text
  explicit Symbol(std::string_view text);
  const std::string& str() const { return entry_->text; }
  bool empty() const { return entry_->text.empty(); }
  size_t hash() const { return entry_->hash; }
  bool operator==(Symbol o) const { return entry_ == o.entry_; }
  bool operator!=(Symbol o) const { return entry_ != o.entry_; }
  bool operator==(std::string_view text) const { return entry_->text == text; }

  struct Entry {
    std::string text;
    size_t hash;
  };

 private:
  const Entry* entry_;
};

// The interned copy of `t`: equal types give the same address.
const Type* intern(const Type& t);

// A node's operands are a range of its graph's operand list, and its results
// the values [first_result, first_result + num_results).
struct Node {
  Symbol op;  // e.g. "stablehlo.add"
  uint32_t operand_begin = 0, num_operands = 0;
  Value first_result = 0;
  uint32_t num_results = 0;
  Symbol attrs;   // "{dimensions = array<i64: 1>}" or empty
  Symbol region;  // "({ ^bb0(...): ... })" or empty
};

class Graph {
 public:
  Graph() = default;
  // An empty graph for the body of a region of an op of this graph (a loop
  // body): its parameters are the region's block arguments.
  Graph nested() const {
    Graph g;
    g.depth_ = depth_ + 1;
    return g;
  }
  // The graph as a region: "{ ^bb0(args): ops; stablehlo.return(outputs) }".
  // Names carry the nesting depth, so a region never redefines a name of an
  // enclosing one (sibling regions may share names).
  std::string to_region() const;

  Value param(const Type& t);
  Value add(std::string_view op, c10::ArrayRef<Value> operands, const Type& result, std::string_view attrs = {},
            std::string_view region = {});
  std::vector<Value> add_multi(std::string_view op, c10::ArrayRef<Value> operands, c10::ArrayRef<Type> results,
                               std::string_view attrs = {}, std::string_view region = {});
  // A call of the function `name` (a "func.call" node) whose definition, the
  // MLIR text of private func.func operations (`name` and those it calls),
  // the program gains once. A name stands for one definition: it must
  // identify the text (a hash of it in the name).
  std::vector<Value> call(std::string_view name, std::string_view definition, c10::ArrayRef<Value> args,
                          c10::ArrayRef<Type> results);
  void output(Value v) { outputs_.push_back(v); }
  void set_outputs(std::vector<Value> vs) {
    outputs_ = std::move(vs);
    aliases_.clear();
  }
  // Changes a parameter's type; for parameters whose size is only known once
  // the graph is complete (pools of host values). Nothing may depend on the
  // old type's shape beyond what the new one keeps.
  void set_param_type(Value param, const Type& t);
  // Lets output `output_index` reuse the buffer of parameter `param_index`
  // (same type): the caller donates that buffer to the run.
  void alias(size_t param_index, size_t output_index);
  const std::vector<std::pair<size_t, size_t>>& aliases() const { return aliases_; }

  // A point to roll back to: values, nodes and parameters created after it are
  // forgotten by truncate(). Outputs must not have been added since.
  struct Mark {
    size_t values = 0, nodes = 0, params = 0, functions = 0;
  };
  Mark mark() const { return {types_.size(), nodes_.size(), params_.size(), functions_.size()}; }
  void truncate(const Mark& m);

  // Interned: the reference stays valid as the graph grows.
  const Type& type(Value v) const { return *types_[v]; }
  // Parameters in order of creation; they may be created between nodes.
  const std::vector<Value>& params() const { return params_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  size_t num_nodes() const { return nodes_.size(); }
  const Node& node(size_t i) const { return nodes_[i]; }
  // The index of the node computing v, or -1 for a parameter.
  int producer(Value v) const { return def_[v]; }
  c10::ArrayRef<Value> operands(const Node& n) const { return {operands_.data() + n.operand_begin, n.num_operands}; }
  size_t num_values() const { return types_.size(); }

  // The part of this graph that `outputs` depend on, renumbered, with those
  // outputs; `kept_params` receives the indices (into params()) of the
  // parameters it still takes, in order. Returns nullopt when nothing would be
  // dropped (the graph can run as it is, with `outputs` set).
  std::optional<Graph> pruned(const std::vector<Value>& outputs, std::vector<size_t>& kept_params) const;

  size_t hash() const;
  // hash() without the sizes: ops, wiring, dtypes and ranks. Programs that
  // differ only in their dimensions (one per sequence length) share it.
  size_t shape_family_hash() const;
  bool operator==(const Graph& o) const;
  std::string to_mlir() const;

 private:
  size_t structure_hash(bool with_sizes) const;
  // Adds a node; returns its first result.
  Value append(std::string_view op, c10::ArrayRef<Value> operands, c10::ArrayRef<Type> results,
               std::string_view attrs, std::string_view region);
  std::string scope() const;
  std::string node_name(size_t node) const;
  std::string name(Value v) const;
  // The terminator returning the outputs: "op"(outputs) : (types) -> ().
  std::string return_text(const char* op) const;
  // Prints every node, one per line, each starting with `indent`.
  std::string nodes_text(const std::string& indent) const;

  int depth_ = 0;  // 0: the function body; n: n regions deep

  std::vector<Value> params_;
  std::vector<Node> nodes_;
  std::vector<Value> operands_;     // every node's operands, in node order
  std::vector<const Type*> types_;  // by value, interned
  std::vector<int> def_;     // by value: -1 for a parameter, else node index
  std::vector<Value> outputs_;
  std::vector<std::pair<size_t, size_t>> aliases_;  // (parameter index, output index)
  std::vector<std::pair<Symbol, Symbol>> functions_;  // (name, definition) of called functions
};

// The two builders every layer that adds nodes needs (lowering, and the
// execution layer's own rewrites).
// "array<i64: 1, 2>": an attribute's integer list.
std::string i64_array(const std::vector<int64_t>& v);
// `v` reshaped to `shape` (v itself when it has that shape already).
Value reshape(Graph& g, Value v, const Shape& shape);

}  // namespace torch_tpu::ir
