#include "retriever/checkpoint.h"

#include "retriever/files.h"

#include <torch/torch.h>

#include <unistd.h>

#include <sstream>

namespace gradcache {
namespace retriever {
namespace {

constexpr const char* kFormat = "gradcache-retriever-checkpoint";
constexpr int64_t kVersion = 1;

// Bytes travel as uint8 tensors: the archive's strings must be valid UTF-8.
torch::Tensor to_tensor(const std::string& bytes) {
  auto t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());  // no data_ptr when empty
  return t;
}
std::string to_bytes(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kCPU);
  if (c.numel() == 0) return {};
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()));
}

torch::serialize::InputArchive open_archive(const std::string& path) {
  TORCH_CHECK(access(path.c_str(), R_OK) == 0, "no checkpoint at ", path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "checkpoint ", path, " is corrupt or not a gradcache checkpoint (", e.what(), ")");
  }
  c10::IValue format;
  TORCH_CHECK(archive.try_read("format", format) && format.isString() && format.toStringRef() == kFormat,
              "checkpoint ", path, " is not a gradcache retriever checkpoint");
  c10::IValue version;
  TORCH_CHECK(archive.try_read("version", version) && version.isInt() && version.toInt() == kVersion,
              "checkpoint ", path, " has format version ", version.isInt() ? version.toInt() : -1,
              "; this gradcache reads version ", kVersion);
  return archive;
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key, const std::string& path) {
  torch::Tensor t;
  TORCH_CHECK(archive.try_read(key, t), "checkpoint ", path, " lacks '", key, "'");
  return t;
}

std::vector<c10::Device> generator_devices(const c10::Device& device) {
  if (device.is_cpu()) return {};
  return {device.has_index() ? device : c10::Device(device.type(), 0)};
}

}  // namespace

GeneratorStates capture_generators(const c10::Device& device) {
  GeneratorStates states;
  states.cpu = at::globalContext().defaultGenerator(c10::kCPU).get_state().unsqueeze(0);
  for (const auto& d : generator_devices(device)) {
    states.device = at::globalContext().defaultGenerator(d).get_state().unsqueeze(0);
  }
  return states;
}

void save_checkpoint(const std::string& path, const CheckpointInfo& info, const BiEncoder& model,
                     torch::optim::Optimizer& optimizer, const GeneratorStates& generators,
                     const GradScaler* scaler) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kFormat)));
  archive.write("version", c10::IValue(kVersion));
  archive.write("config", to_tensor(nlohmann::json(info.config).dump()));
  archive.write("tokenizer", to_tensor(info.tokenizer));
  archive.write("baseline", to_tensor(info.baseline.dump()));
  archive.write("progress", torch::tensor({info.progress.step, info.progress.epoch, info.progress.batch_in_epoch}));
  c10::List<at::Tensor> scripts;
  for (const auto& s : model.torchscript_bytes()) scripts.push_back(to_tensor(s));
  archive.write("torchscript", c10::IValue(scripts));

  c10::List<std::string> names;
  c10::List<at::Tensor> tensors;
  for (const auto& [name, t] : model.named_state()) {
    names.push_back(name);
    tensors.push_back(t.detach().to(torch::kCPU));
  }
  archive.write("model_names", c10::IValue(names));
  archive.write("model_tensors", c10::IValue(tensors));

  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("rng_cpu", generators.cpu.to(torch::kCPU));
  if (generators.device.defined()) archive.write("rng_device", generators.device.to(torch::kCPU));
  if (scaler) {
    torch::serialize::OutputArchive scaler_archive;
    scaler->save(scaler_archive);
    archive.write("grad_scaler", scaler_archive);
  }

  // Serialised in memory, then written atomically: LibTorch's file writer throws again from
  // its destructor when the disk fills up (the process aborts, leaving a torn .tmp file),
  // while write_file_atomic reports the error and removes its temporary file.
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(path, bytes.str());
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  auto archive = open_archive(path);
  CheckpointInfo info;
  try {
    info.config = read_saved_config(nlohmann::json::parse(to_bytes(read_tensor(archive, "config", path))),
                                    &info.notices);
    info.baseline = nlohmann::json::parse(to_bytes(read_tensor(archive, "baseline", path)));
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "checkpoint ", path, " has an unreadable config: ", e.what());
  }
  info.tokenizer = to_bytes(read_tensor(archive, "tokenizer", path));
  auto progress = read_tensor(archive, "progress", path);
  TORCH_CHECK(progress.numel() == 3, "checkpoint ", path, " has a malformed progress record");
  info.progress = {progress[0].item<int64_t>(), progress[1].item<int64_t>(), progress[2].item<int64_t>()};
  c10::IValue scripts;
  TORCH_CHECK(archive.try_read("torchscript", scripts) && scripts.isTensorList(), "checkpoint ", path,
              " lacks 'torchscript'");
  for (const auto& t : scripts.toTensorList()) info.torchscript.push_back(to_bytes(t));
  info.world_size = read_tensor(archive, "rng_cpu", path).size(0);
  return info;
}

BiEncoder build_model(const TrainConfig& c, const std::vector<std::string>& torchscript) {
  if (!torchscript.empty()) return BiEncoder::torchscript_from_bytes(torchscript);
  return BiEncoder::builtin(EncoderOptions(c.vocab_size)
                                .dim(c.dim)
                                .layers(c.layers)
                                .heads(c.heads)
                                .ffn_dim(c.ffn_dim)
                                .max_len(std::max(c.query_max_len, c.passage_max_len))
                                .dropout(c.dropout)
                                .projection_dim(c.projection_dim)
                                .normalize(c.normalize),
                            c.untie);
}

BiEncoder load_model(const std::string& path, const CheckpointInfo& info) {
  BiEncoder model = build_model(info.config, info.torchscript);
  auto archive = open_archive(path);
  c10::IValue names, tensors;
  TORCH_CHECK(archive.try_read("model_names", names) && archive.try_read("model_tensors", tensors) &&
                  names.isList() && tensors.isTensorList(),
              "checkpoint ", path, " lacks the model weights");
  std::map<std::string, at::Tensor> saved;
  const auto name_list = names.toList();
  const auto tensor_list = tensors.toTensorList();
  TORCH_CHECK(name_list.size() == tensor_list.size(), "checkpoint ", path, " has malformed model weights");
  for (size_t i = 0; i < name_list.size(); ++i) saved[name_list.get(i).toStringRef()] = tensor_list.get(i);
  torch::NoGradGuard no_grad;
  auto state = model.named_state();
  TORCH_CHECK(state.size() == saved.size(), "checkpoint ", path, " holds ", saved.size(), " tensors but the model has ",
              state.size(), ": it was saved from another architecture");
  for (auto& [name, t] : state) {
    auto it = saved.find(name);
    TORCH_CHECK(it != saved.end(), "checkpoint ", path, " lacks the weight '", name, "'");
    TORCH_CHECK(it->second.sizes() == t.sizes(), "checkpoint ", path, ": weight '", name, "' has shape ",
                it->second.sizes(), " but the model expects ", t.sizes());
    t.copy_(it->second);
  }
  return model;
}

void load_training_state(const std::string& path, torch::optim::Optimizer& optimizer, const c10::Device& device,
                         int rank, GradScaler* scaler) {
  auto archive = open_archive(path);
  torch::serialize::InputArchive optimizer_archive;
  TORCH_CHECK(archive.try_read("optimizer", optimizer_archive), "checkpoint ", path, " lacks the optimizer state");
  try {
    optimizer.load(optimizer_archive);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "checkpoint ", path, ": cannot restore the optimizer state (", e.what(), ")");
  }
  if (scaler) {
    torch::serialize::InputArchive scaler_archive;
    TORCH_CHECK(archive.try_read("grad_scaler", scaler_archive), "checkpoint ", path,
                " lacks the loss scaler's state (it was not saved from an fp16 run)");
    scaler->load(scaler_archive);
  }
  const auto cpu_states = read_tensor(archive, "rng_cpu", path);
  TORCH_CHECK(rank < cpu_states.size(0), "checkpoint ", path, " was saved by ", cpu_states.size(0),
              " process(es); resume it with as many");
  at::Generator cpu = at::globalContext().defaultGenerator(c10::kCPU);
  cpu.set_state(cpu_states[rank].contiguous());
  for (const auto& d : generator_devices(device)) {
    at::Generator g = at::globalContext().defaultGenerator(d);
    g.set_state(read_tensor(archive, "rng_device", path)[rank].contiguous());
  }
}

}  // namespace retriever
}  // namespace gradcache
