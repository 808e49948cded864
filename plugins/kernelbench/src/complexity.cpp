#include "complexity.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

namespace kforge::kernelbench {
namespace {

struct OpInfo {
  double score;
  const char* category;
};

constexpr double kElementwise = 1.5, kIndexing = 1.75, kReduction = 2.5, kResampling = 3.0, kMatmul = 3.5,
                 kLoss = 4.0, kComplex = 4.5;
constexpr double kPerExtraOp = 0.25, kMaxExtra = 1.0, kMaxScore = 5.0;
// Light operators (elementwise, indexing) add to the score only beside a heavy one: a
// matmul with an epilogue is a fused kernel, a chain of elementwise ops is still one pass.
constexpr double kHeavy = kMatmul;

const std::map<std::string, OpInfo, std::less<>>& op_table() {
  static const std::map<std::string, OpInfo, std::less<>> table = [] {
    std::map<std::string, OpInfo, std::less<>> t;
    auto add = [&](OpInfo info, std::initializer_list<const char*> names) {
      for (const char* name : names) t.emplace(name, info);
    };
    add({kElementwise, "Activation"},
        {"relu", "relu6", "gelu", "sigmoid", "tanh", "silu", "elu", "selu", "celu", "leaky_relu", "softplus",
         "softsign", "hardtanh", "hardsigmoid", "hardswish", "mish", "logsigmoid", "tanhshrink", "softshrink",
         "hardshrink", "prelu", "glu", "ReLU", "ReLU6", "GELU", "Sigmoid", "Tanh", "SiLU", "ELU", "SELU", "CELU",
         "LeakyReLU", "Softplus", "Softsign", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "PReLU", "GLU"});
    add({kElementwise, "Math"},
        {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "abs", "clamp", "clip",
         "maximum", "minimum", "where", "add", "mul", "multiply", "sub", "subtract", "div", "divide", "pow",
         "power", "sin", "cos", "tan", "erf", "erfc", "sign", "neg", "negative", "reciprocal", "square", "lerp",
         "addcmul", "addcdiv", "fmod", "remainder", "hypot", "atan2", "floor", "ceil", "trunc"});
    add({kElementwise, "Quantization"}, {"round", "rint", "quantize_per_tensor", "quantize_per_channel",
                                         "dequantize", "fake_quantize_per_tensor_affine",
                                         "fake_quantize_per_channel_affine"});
    add({kElementwise, "Random"}, {"dropout", "Dropout", "rand", "randn", "rand_like", "randn_like", "bernoulli",
                                   "multinomial", "normal", "uniform"});
    add({kIndexing, "Index"}, {"gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
                               "take", "take_along_dim", "take_along_axis", "put_along_axis", "embedding",
                               "Embedding", "masked_fill", "masked_select", "masked_scatter", "tril", "triu",
                               "nonzero", "flip", "roll", "one_hot", "searchsorted", "bucketize"});
    add({kIndexing, "SpatialOps"}, {"pixel_shuffle", "pixel_unshuffle", "PixelShuffle", "PixelUnshuffle", "pad",
                                    "unfold", "fold", "Unfold", "Fold"});
    add({kResampling, "SpatialOps"}, {"interpolate", "upsample", "Upsample", "grid_sample", "affine_grid"});
    add({kReduction, "Reduce"},
        {"sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "var", "std", "var_mean",
         "std_mean", "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "topk", "sort", "argsort", "median",
         "mode", "all", "any", "count_nonzero", "nansum", "nanmean", "norm", "vector_norm"});
    add({kReduction, "Activation"}, {"softmax", "log_softmax", "softmin", "Softmax", "LogSoftmax", "Softmin"});
    add({kReduction, "Normalization"},
        {"layer_norm", "group_norm", "batch_norm", "instance_norm", "local_response_norm", "rms_norm",
         "normalize", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
         "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "LocalResponseNorm"});
    add({kReduction, "Pooling"},
        {"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
         "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
         "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
         "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
         "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"});
    add({kMatmul, "MatrixMultiply"}, {"matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "addmv", "linear",
                                      "Linear", "einsum", "tensordot", "dot", "vdot", "mv", "inner", "outer",
                                      "bilinear", "Bilinear", "matrix_power", "chain_matmul", "multi_dot", "@"});
    add({kLoss, "Loss"},
        {"cross_entropy", "nll_loss", "kl_div", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
         "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
         "margin_ranking_loss", "triplet_margin_loss", "hinge_embedding_loss", "soft_margin_loss",
         "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "ctc_loss", "cosine_similarity"});
    add({kComplex, "Convolution"}, {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                                    "conv_transpose3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                    "ConvTranspose2d", "ConvTranspose3d", "convolve", "correlate"});
    add({kComplex, "Fusion"}, {"scaled_dot_product_attention", "MultiheadAttention", "LSTM", "GRU", "RNN",
                               "Transformer", "TransformerEncoderLayer"});
    return t;
  }();
  return table;
}

// Class names ending in Loss (nn.CrossEntropyLoss, nn.HuberLoss, ...) are losses.
std::optional<OpInfo> lookup(const std::string& name) {
  const auto& table = op_table();
  if (auto it = table.find(name); it != table.end()) return it->second;
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Loss") == 0) return OpInfo{kLoss, "Loss"};
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_loss") == 0) return OpInfo{kLoss, "Loss"};
  return std::nullopt;
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The text of `class Model` (its header and indented body), or all of `source` when the
// file has no such class.
std::string_view model_class_text(std::string_view source) {
  size_t pos = 0;
  while (pos < source.size()) {
    const size_t end = std::min(source.find('\n', pos), source.size());
    const std::string_view line = source.substr(pos, end - pos);
    if (line.rfind("class Model", 0) == 0 && line.size() > 11 && (line[11] == '(' || line[11] == ':')) {
      size_t body_end = end;
      while (body_end < source.size()) {
        const size_t next = body_end + 1;
        if (next >= source.size()) {
          body_end = source.size();
          break;
        }
        const char first = source[next];
        if (first != ' ' && first != '\t' && first != '\n' && first != '\r' && first != '#') break;
        body_end = std::min(source.find('\n', next), source.size());
      }
      return source.substr(pos, body_end - pos);
    }
    pos = end + 1;
  }
  return source;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Skips a string literal starting at `i` (at its opening quote); returns the index after it.
size_t skip_string(std::string_view text, size_t i) {
  const char quote = text[i];
  const bool triple = text.substr(i, 3) == std::string(3, quote);
  size_t j = i + (triple ? 3 : 1);
  while (j < text.size()) {
    if (text[j] == '\\') {
      j += 2;
      continue;
    }
    if (triple ? text.substr(j, 3) == std::string(3, quote) : text[j] == quote) return j + (triple ? 3 : 1);
    if (!triple && text[j] == '\n') return j;
    ++j;
  }
  return j;
}

// The names of everything called (`name(`) and every `@`, outside comments and strings.
std::vector<std::string> called_names(std::string_view text) {
  std::vector<std::string> names;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '"' || c == '\'') {
      i = skip_string(text, i);
    } else if (c == '@') {
      // A decorator (`@` first on its line) is not a matmul.
      size_t k = i;
      while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
      if (k != 0 && text[k - 1] != '\n') names.emplace_back("@");
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text.size() && is_identifier_char(text[j])) ++j;
      const std::string word(text.substr(i, j - i));
      // String prefixes (r'', f"", b'') belong to the literal that follows.
      if (j < text.size() && (text[j] == '"' || text[j] == '\'') && word.size() <= 2) {
        i = skip_string(text, j);
        continue;
      }
      size_t k = j;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      if (k < text.size() && text[k] == '(') names.push_back(word);
      i = j;
    } else {
      ++i;
    }
  }
  return names;
}

// The class text split into its constructor and everything else: in __init__ only module
// constructions (nn.Conv2d(...), capitalised) are operators; torch.randn(...) there makes
// weights, not work.
std::vector<std::string> model_operator_names(std::string_view class_text) {
  std::string init, rest;
  bool in_init = false;
  size_t pos = 0;
  while (pos < class_text.size()) {
    const size_t end = std::min(class_text.find('\n', pos), class_text.size());
    const std::string_view line = class_text.substr(pos, end - pos);
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first, 4) == "def ") {
      in_init = line.substr(first, 12) == "def __init__";
    }
    (in_init ? init : rest).append(line).append("\n");
    pos = end + 1;
  }
  std::vector<std::string> names;
  for (const std::string& name : called_names(init)) {
    if (std::isupper(static_cast<unsigned char>(name[0]))) names.push_back(name);
  }
  for (const std::string& name : called_names(rest)) names.push_back(name);
  return names;
}

// KernelBench file names say what a task is ("100_HingeLoss", "23_Conv3d"); a NumPy
// reference spells a loss out in arithmetic, so the name is the only place that says so.
std::vector<std::pair<std::string, OpInfo>> name_hints(const std::string& name) {
  const std::string lower = lowercase(name);
  std::vector<std::pair<std::string, OpInfo>> hints;
  auto has = [&](const char* word) { return lower.find(word) != std::string::npos; };
  if (has("loss")) hints.push_back({"name:loss", {kLoss, "Loss"}});
  if (has("conv")) hints.push_back({"name:conv", {kComplex, "Convolution"}});
  if (has("attention")) hints.push_back({"name:attention", {kComplex, "Fusion"}});
  return hints;
}

}  // namespace

std::string complexity_class(double score) {
  if (score <= 2.0) return "C1";
  if (score < 3.0) return "C2";
  if (score < 4.0) return "C3";
  return "C4";
}

ComplexityEstimate estimate_complexity(std::string_view python_source, const std::string& task_name) {
  ComplexityEstimate estimate;
  std::vector<std::pair<std::string, OpInfo>> found;
  std::set<std::string> seen;  // case-insensitive: nn.Embedding and self.embedding(...) are one op
  for (const std::string& name : model_operator_names(model_class_text(python_source))) {
    const auto info = lookup(name);
    if (info && seen.insert(lowercase(name)).second) found.emplace_back(name, *info);
  }
  for (auto& hint : name_hints(task_name)) found.push_back(std::move(hint));

  double top = kElementwise;
  std::string top_category = "Math";
  std::set<std::string> categories;
  bool has_matmul = false, has_softmax = false;
  for (const auto& [name, info] : found) {
    estimate.ops.push_back(name);
    if (info.category != std::string("Math")) categories.insert(info.category);
    if (info.score > top || (info.score == top && top_category == "Math")) {
      top = info.score;
      top_category = info.category;
    }
    has_matmul = has_matmul || info.score == kMatmul;
    has_softmax = has_softmax || lowercase(name) == "softmax";
  }
  if (has_matmul && has_softmax && top < kComplex) {
    top = kComplex;  // attention: softmax(Q K^T) V
    top_category = "Fusion";
  }
  size_t extra_ops = 0;
  bool top_counted = false;
  for (const auto& [name, info] : found) {
    if (!top_counted && info.score == top) {
      top_counted = true;
      continue;
    }
    if (info.score >= kReduction || top >= kHeavy) ++extra_ops;
  }
  estimate.score = std::min(kMaxScore, top + std::min(kMaxExtra, kPerExtraOp * static_cast<double>(extra_ops)));
  estimate.complexity = complexity_class(estimate.score);
  const bool heavy = top_category == "MatrixMultiply" || top_category == "Convolution";
  estimate.category = heavy && categories.size() >= 2 ? "Fusion" : top_category;
  return estimate;
}

}  // namespace kforge::kernelbench
