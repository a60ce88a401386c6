// The benchmark's workloads (models, synthetic batches, the three kinds of step), the two
// GradCache subclasses, and the measurement and formatting helpers.
#include "bench.h"

#include "retriever/batching.h"
#include "retriever/encoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <sys/resource.h>
#include <time.h>

namespace gcbench {

namespace rt = gradcache::retriever;

// ---- options --------------------------------------------------------------------------

namespace {

int64_t parse_int(const std::string& name, const std::string& v) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument(name + ": expected an integer, got '" + v + "'");
  return x;
}

double parse_double(const std::string& name, const std::string& v) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument(name + ": expected a number, got '" + v + "'");
  return x;
}

std::vector<std::string> split_commas(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

template <class T>
std::string join(const std::vector<T>& xs) {
  std::ostringstream out;
  for (size_t i = 0; i < xs.size(); ++i) out << (i ? "," : "") << xs[i];
  return out.str();
}

}  // namespace

void OptionTable::add_int(const std::string& name, int64_t* field, const std::string& help) {
  options_.push_back({name, "N", help, [=](const std::string& v) { *field = parse_int(name, v); },
                      [=] { return std::to_string(*field); }});
}

void OptionTable::add_double(const std::string& name, double* field, const std::string& help) {
  options_.push_back({name, "X", help, [=](const std::string& v) { *field = parse_double(name, v); },
                      [=] {
                        // The shortest text that reads back as the same double (0.1, not
                        // 0.10000000000000001): child processes get exactly this value.
                        char buf[32];
                        for (int precision = 6; precision <= 17; ++precision) {
                          std::snprintf(buf, sizeof buf, "%.*g", precision, *field);
                          if (std::strtod(buf, nullptr) == *field) break;
                        }
                        return std::string(buf);
                      }});
}

void OptionTable::add_string(const std::string& name, std::string* field, const std::string& help) {
  options_.push_back({name, "S", help, [=](const std::string& v) { *field = v; }, [=] { return *field; }});
}

void OptionTable::add_ints(const std::string& name, std::vector<int64_t>* field, const std::string& help) {
  options_.push_back({name, "N,N,..", help,
                      [=](const std::string& v) {
                        field->clear();
                        for (const auto& item : split_commas(v)) field->push_back(parse_int(name, item));
                      },
                      [=] { return join(*field); }});
}

void OptionTable::add_strings(const std::string& name, std::vector<std::string>* field, const std::string& help) {
  options_.push_back({name, "S,S,..", help, [=](const std::string& v) { *field = split_commas(v); },
                      [=] { return join(*field); }});
}

void OptionTable::add_switch(const std::string& name, bool* field, const std::string& help) {
  options_.push_back({name, "", help, [=](const std::string&) { *field = true; }, [=] { return std::string(); }});
}

void OptionTable::append(const OptionTable& other) {
  options_.insert(options_.end(), other.options_.begin(), other.options_.end());
}

void OptionTable::parse(const std::vector<std::string>& args) const {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool inline_value = false;
    if (const auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    bool known = false, takes_value = false;
    for (const auto& o : options_) {
      if (o.name == name) {
        known = true;
        takes_value = !o.value_name.empty();
      }
    }
    if (!known) throw std::invalid_argument("unknown option '" + name + "' (see --help)");
    if (takes_value && !inline_value) {
      if (i + 1 >= args.size()) throw std::invalid_argument(name + " needs a value");
      value = args[++i];
    }
    for (const auto& o : options_) {
      if (o.name == name) o.set(value);
    }
  }
}

std::vector<std::string> OptionTable::to_args() const {
  std::vector<std::string> out;
  for (const auto& o : options_) {
    if (o.value_name.empty()) continue;  // switches are not passed on
    out.push_back(o.name);
    out.push_back(o.get());
  }
  return out;
}

std::string OptionTable::help() const {
  std::ostringstream out;
  std::vector<std::string> seen;
  for (const auto& o : options_) {
    if (std::find(seen.begin(), seen.end(), o.name) != seen.end()) continue;
    seen.push_back(o.name);
    std::string left = "  " + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (left.size() < 26) left.resize(26, ' ');
    const std::string value = o.get();
    out << left << " " << o.help << (o.value_name.empty() || value.empty() ? "" : " [" + value + "]") << "\n";
  }
  return out.str();
}

void ModelSettings::add_options(OptionTable& t, bool with_kind) {
  if (with_kind) t.add_string("--model", &kind, "transformer (tied text encoder) or mlp (two MLPs)");
  t.add_int("--dim", &dim, "representation size (Transformer width)");
  t.add_int("--layers", &layers, "Transformer layers");
  t.add_int("--heads", &heads, "attention heads");
  t.add_int("--ffn", &ffn, "Transformer feed-forward size");
  t.add_int("--vocab", &vocab, "vocabulary of the synthetic texts");
  t.add_int("--query-len", &query_len, "query texts have 4..N tokens");
  t.add_int("--passage-len", &passage_len, "passage texts have 8..N tokens");
  t.add_double("--dropout", &dropout, "dropout of the models");
  t.add_int("--mlp-in", &mlp_in, "MLP input size");
  t.add_int("--mlp-hidden", &mlp_hidden, "MLP hidden size");
  t.add_double("--temperature", &temperature, "InfoNCE temperature");
  t.add_string("--loss", &loss, "dense (the N x M score matrix) or streaming (tiles, gradcache::StreamingContrastiveLoss)");
  t.add_int("--tile", &tile, "tile size of the streaming loss");
  t.add_int("--seed", &seed, "seed of the weights and data");
}

Json ModelSettings::to_json() const {
  Json j{{"kind", kind}, {"dim", dim}};
  if (kind == "transformer") {
    j.update({{"layers", layers}, {"heads", heads}, {"ffn", ffn}, {"vocab", vocab}, {"query_len", query_len},
              {"passage_len", passage_len}});
  } else {
    j.update({{"in", mlp_in}, {"hidden", mlp_hidden}});
  }
  j.update({{"dropout", dropout}, {"temperature", temperature}, {"loss", loss}, {"seed", seed}});
  if (loss == "streaming") j["tile"] = tile;
  return j;
}

// ---- models ---------------------------------------------------------------------------

namespace {

/// in -> hidden -> hidden -> dim with GELU and dropout, L2-normalised like the text encoder.
class MlpEncoderImpl : public torch::nn::Module {
 public:
  MlpEncoderImpl(int64_t in, int64_t hidden, int64_t out, double dropout)
      : fc1_(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        fc3_(register_module("fc3", torch::nn::Linear(hidden, out))),
        drop_(register_module("drop", torch::nn::Dropout(dropout))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = drop_(torch::gelu(fc1_(x)));
    h = drop_(torch::gelu(fc2_(h)));
    auto y = fc3_(h);
    return y / y.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
  }

 private:
  torch::nn::Linear fc1_, fc2_, fc3_;
  torch::nn::Dropout drop_;
};
TORCH_MODULE(MlpEncoder);

// Random token lists with lengths uniform in [lo, hi]; ids 1..vocab-1 (0 is padding).
std::vector<std::vector<int64_t>> random_texts(std::mt19937_64& rng, int64_t n, int64_t lo, int64_t hi,
                                               int64_t vocab) {
  std::uniform_int_distribution<int64_t> length(lo, std::max(lo, hi)), token(1, vocab - 1);
  std::vector<std::vector<int64_t>> texts(static_cast<size_t>(n));
  for (auto& t : texts) {
    t.resize(static_cast<size_t>(length(rng)));
    for (auto& id : t) id = token(rng);
  }
  return texts;
}

torch::Tensor random_normal(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> normal;
  auto t = torch::empty({rows, cols});
  auto* p = t.data_ptr<float>();
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = normal(rng);
  return t;
}

}  // namespace

Workload::Workload(const ModelSettings& s) : settings_(s) {
  torch::manual_seed(static_cast<uint64_t>(s.seed));
  if (s.kind == "transformer") {
    rt::TransformerEncoder encoder(rt::EncoderOptions(s.vocab)
                                       .dim(s.dim)
                                       .layers(s.layers)
                                       .heads(s.heads)
                                       .ffn_dim(s.ffn)
                                       .max_len(std::max(s.query_len, s.passage_len))
                                       .dropout(s.dropout));
    modules_.push_back(encoder.ptr());
    query_model_ = encoder;  // tied: one encoder for queries and passages, as the retriever's default
    passage_model_ = encoder;
  } else if (s.kind == "mlp") {
    MlpEncoder q(s.mlp_in, s.mlp_hidden, s.dim, s.dropout), p(s.mlp_in, s.mlp_hidden, s.dim, s.dropout);
    modules_ = {q.ptr(), p.ptr()};
    query_model_ = q;
    passage_model_ = p;
  } else {
    throw std::invalid_argument("--model: expected transformer or mlp, got '" + s.kind + "'");
  }
  if (s.loss == "dense") {
    loss_ = gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(s.temperature));
  } else if (s.loss == "streaming") {
    loss_ = gradcache::StreamingContrastiveLoss(gradcache::StreamingLossOptions().temperature(s.temperature).tile_size(s.tile));
  } else {
    throw std::invalid_argument("--loss: expected dense or streaming, got '" + s.loss + "'");
  }
  train(true);
}

Batch Workload::batch(int64_t pairs, uint64_t seed) const {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(settings_.seed));
  Batch b;
  b.pairs = pairs;
  if (settings_.kind == "transformer") {
    std::vector<int64_t> rows(static_cast<size_t>(pairs));
    for (int64_t i = 0; i < pairs; ++i) rows[static_cast<size_t>(i)] = i;
    b.queries = rt::pad_batch(random_texts(rng, pairs, 4, settings_.query_len, settings_.vocab), rows);
    b.passages = rt::pad_batch(random_texts(rng, pairs, 8, settings_.passage_len, settings_.vocab), rows);
  } else {
    auto x = random_normal(rng, pairs, settings_.mlp_in);
    b.queries = x;
    b.passages = x + 0.5 * random_normal(rng, pairs, settings_.mlp_in);  // a noisy copy: a learnable positive
  }
  return b;
}

std::vector<gradcache::ModelInput> Workload::split(const gradcache::ModelInput& input, int64_t chunk) const {
  return settings_.kind == "transformer" ? rt::split_and_trim(input, chunk) : gradcache::split_input(input, chunk);
}

gradcache::GradCacheOptions Workload::cache_options() const {
  gradcache::GradCacheOptions options;
  if (settings_.kind == "transformer") options.split_input_fn(rt::split_and_trim);
  return options;
}

std::vector<torch::Tensor> Workload::parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& m : modules_) {
    for (const auto& p : m->parameters()) out.push_back(p);
  }
  return out;
}

int64_t Workload::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Workload::train(bool on) {
  for (const auto& m : modules_) m->train(on);
}

void Workload::allocate_grads() {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
}

void Workload::zero_grads() {
  for (auto& p : parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

std::vector<torch::Tensor> Workload::grads() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

std::string Workload::describe() const {
  const auto& s = settings_;
  std::ostringstream out;
  if (s.kind == "transformer") {
    out << "Transformer encoder (tied), dim " << s.dim << ", " << s.layers << " layers, " << s.heads << " heads, ffn "
        << s.ffn << ", queries 4-" << s.query_len << " / passages 8-" << s.passage_len << " tokens";
  } else {
    out << "2 MLPs " << s.mlp_in << "-" << s.mlp_hidden << "-" << s.mlp_hidden << "-" << s.dim;
  }
  out << ", dropout " << s.dropout << ", " << parameter_count() << " parameters, " << s.loss
      << " loss, temperature " << s.temperature;
  return out.str();
}

double Workload::step_full(const Batch& batch) const {
  auto q = query_model_(batch.queries).toTensor();
  auto p = passage_model_(batch.passages).toTensor();
  auto loss = loss_({q, p});
  loss.backward();
  return loss.item<double>();
}

double Workload::step_accumulate(const Batch& batch, int64_t chunk) const {
  const auto q_chunks = split(batch.queries, chunk);
  const auto p_chunks = split(batch.passages, chunk);  // M = N: the same rows as the queries
  double total = 0;
  for (size_t c = 0; c < q_chunks.size(); ++c) {
    auto q = query_model_(q_chunks[c]).toTensor();
    auto p = passage_model_(p_chunks[c]).toTensor();
    auto loss = loss_({q, p}) * (static_cast<double>(q.size(0)) / static_cast<double>(batch.pairs));
    loss.backward();
    total += loss.item<double>();
  }
  return total;
}

// ---- GradCache subclasses -------------------------------------------------------------

RecordingGradCache::ForwardResult RecordingGradCache::forward_no_grad(size_t model_index,
                                                                      const std::vector<gradcache::ModelInput>& chunks) {
  const double t0 = process_cpu_seconds();
  auto result = gradcache::GradCache::forward_no_grad(model_index, chunks);
  step1_cpu_s += process_cpu_seconds() - t0;
  if (retained_chunks.size() <= model_index) {
    retained_chunks.resize(model_index + 1, 0);
    total_chunks.resize(model_index + 1, 0);
    retained_bytes.resize(model_index + 1, 0);
  }
  retained_chunks[model_index] = std::count(result.retained.begin(), result.retained.end(), true);
  total_chunks[model_index] = static_cast<int64_t>(result.retained.size());
  retained_bytes[model_index] = result.retained_bytes;
  return result;
}

std::vector<at::Tensor> RecordingGradCache::build_cache(const std::vector<at::Tensor>& reps,
                                                        const gradcache::LossArgs& loss_args, at::Tensor& loss_out) {
  const double t0 = process_cpu_seconds();
  auto grads = gradcache::GradCache::build_cache(reps, loss_args, loss_out);
  step2_cpu_s += process_cpu_seconds() - t0;
  return grads;
}

void RecordingGradCache::forward_backward(size_t model_index, const std::vector<gradcache::ModelInput>& chunks,
                                          const ForwardResult& forward, const at::Tensor& cached_grads) {
  const double t0 = process_cpu_seconds();
  gradcache::GradCache::forward_backward(model_index, chunks, forward, cached_grads);
  step3_cpu_s += process_cpu_seconds() - t0;
}

void RecordingGradCache::backward_retained(size_t model_index, ForwardResult& forward,
                                           const at::Tensor& cached_grads) {
  const double t0 = process_cpu_seconds();
  gradcache::GradCache::backward_retained(model_index, forward, cached_grads);
  step3_cpu_s += process_cpu_seconds() - t0;
}

InferenceModeGradCache::ForwardResult InferenceModeGradCache::forward_no_grad(
    size_t model_index, const std::vector<gradcache::ModelInput>& chunks) {
  const gradcache::Model& model = models()[model_index];
  const auto devices = gradcache::devices_of(model.parameters());
  ForwardResult result;
  std::vector<at::Tensor> reps;
  for (const auto& chunk : chunks) {
    result.rng_states.push_back(gradcache::RngState::capture(devices));
    at::Tensor rep;
    {
      c10::InferenceMode inference;
      rep = get_reps(model_call(model, chunk));
    }
    result.chunk_rows.push_back(rep.size(0));
    result.retained.push_back(false);
    result.graphs.emplace_back();
    reps.push_back(rep);
  }
  // Outside inference mode, so the result is an ordinary tensor the loss may differentiate.
  result.reps = reps.size() == 1 ? reps[0].clone() : at::cat(reps, 0);
  return result;
}

// ---- measurement ----------------------------------------------------------------------

int64_t peak_bytes_of(const std::function<void()>& fn) {
  const c10::Device cpu(c10::kCPU);
  gradcache::reset_peak_memory(cpu);
  const int64_t before = gradcache::memory_stats(cpu).value().current;
  fn();
  return gradcache::memory_stats(cpu).value().peak - before;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double Timings::wall_median() const { return median(wall); }
double Timings::cpu_median() const { return median(cpu); }
double Timings::wall_min() const { return wall.empty() ? NAN : *std::min_element(wall.begin(), wall.end()); }
Json Timings::to_json() const {
  return Json{{"wall_median_s", wall_median()},
              {"wall_min_s", wall_min()},
              {"cpu_median_s", cpu_median()},
              {"wall_s", wall},
              {"cpu_s", cpu}};
}

std::vector<Timings> time_interleaved(const std::vector<std::function<void()>>& steps, int64_t warmup, int64_t reps) {
  for (int64_t r = 0; r < warmup; ++r) {
    for (const auto& step : steps) step();
  }
  std::vector<Timings> times(steps.size());
  for (int64_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i < steps.size(); ++i) {
      const double c0 = process_cpu_seconds(), t0 = now_seconds();
      steps[i]();
      times[i].wall.push_back(now_seconds() - t0);
      times[i].cpu.push_back(process_cpu_seconds() - c0);
    }
  }
  return times;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::pair<double, double> cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return {sec(u.ru_utime), sec(u.ru_stime)};
}

double max_relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
    scale = std::max(scale, b[i].abs().max().item<double>());
  }
  return scale > 0 ? diff / scale : diff;
}

int64_t cache_bytes(int64_t queries, int64_t passages, int64_t dim) { return 2 * (queries + passages) * dim * 4; }

// ---- output ---------------------------------------------------------------------------

std::string Table::str() const {
  std::vector<size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      // First column left-aligned (names), the others right-aligned (numbers).
      const std::string pad(width[i] - cell.size(), ' ');
      text += (i ? "  " : "") + (i == 0 ? cell + pad : pad + cell);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out.str();
}

std::string fmt(double value, int precision) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, value);
  return buf;
}

std::string sci(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1e", value);
  return buf;
}

double to_mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
std::string mib(int64_t bytes) { return fmt(to_mib(bytes), 1); }

Json target(const std::string& name, double value, double limit) {
  return Json{{"name", name}, {"value", value}, {"limit", limit}, {"holds", value <= limit}};
}

std::string target_line(const Json& t) {
  const double value = t["value"].get<double>(), limit = t["limit"].get<double>();
  const bool small = std::abs(limit) < 1e-2;
  return "target " + t["name"].get<std::string>() + ": " + (small ? sci(value) : fmt(value, 3)) +
         " <= " + (small ? sci(limit) : fmt(limit, 2)) + "  " + (t["holds"].get<bool>() ? "holds" : "FAILS");
}

void progress(const std::string& line) { std::cerr << "  .. " << line << std::endl; }

}  // namespace gcbench
