#include "retriever/run/checkpoint.h"

#include "files/atomic_file.h"
#include "retriever/files/error_message.h"
#include "retriever/files/zip_integrity.h"
#include "retriever/run/build_model.h"
#include "retriever/run/frozen_base.h"

#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <unordered_set>

namespace gradcache {
namespace retriever {
namespace {

constexpr const char* kCheckpointFormat = "gradcache-retriever-checkpoint";
constexpr int64_t kCheckpointVersion = 1;

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

template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream message;
  (message << ... << parts);
  throw CheckpointError(message.str());
}

// Runs `read` so that any other error on the way (LibTorch's come with a backtrace) comes out
// as a one-line CheckpointError naming the checkpoint.
template <class Read>
auto reading(const std::string& name, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint " + name + " cannot be read: " + error_message(e));
  }
}

std::string read_checkpoint_file(const std::string& path) {
  check(access(path.c_str(), R_OK) == 0, "no checkpoint at ", path);
  try {
    return files::read_file(path);
  } catch (const std::exception& e) {
    throw CheckpointError(e.what());
  }
}

// LibTorch's zip reader skips the CRC checks: the bytes are checked here before it reads them.
void check_integrity(const std::string& bytes, const std::string& name) {
  const auto damage = find_zip_damage(bytes);
  if (!damage) return;
  if (bytes.compare(0, 4, "PK\x03\x04") != 0) {  // not even the start of a zip archive
    throw CheckpointError("checkpoint " + name + " is corrupt or not a gradcache checkpoint (" + *damage + ")");
  }
  throw CheckpointError("checkpoint " + name + " is damaged: " + *damage + "; restore it from a backup or retrain");
}

torch::serialize::InputArchive open_archive(const std::string& bytes, const std::string& name) {
  check_integrity(bytes, name);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(bytes.data(), bytes.size());
  } catch (const std::exception& e) {
    check(false, "checkpoint ", name, " is corrupt or not a gradcache checkpoint (", error_message(e), ")");
  }
  c10::IValue format;
  check(archive.try_read("format", format) && format.isString() && format.toStringRef() == kCheckpointFormat, "checkpoint ",
        name, " is not a gradcache retriever checkpoint");
  c10::IValue version;
  check(archive.try_read("version", version) && version.isInt() && version.toInt() == kCheckpointVersion, "checkpoint ", name,
        " has format version ", version.isInt() ? version.toInt() : -1, "; this gradcache reads version ", kCheckpointVersion);
  return archive;
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key, const std::string& name) {
  torch::Tensor t;
  check(archive.try_read(key, t), "checkpoint ", name, " lacks '", key, "'");
  return t;
}

// Strings travel as 1-D uint8 tensors (see to_tensor).
std::string read_bytes(torch::serialize::InputArchive& archive, const std::string& key, const std::string& name) {
  const auto t = read_tensor(archive, key, name);
  check(t.scalar_type() == torch::kUInt8 && t.dim() == 1, "checkpoint ", name, " has a malformed '", key, "'");
  return to_bytes(t);
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
  archive.write("format", c10::IValue(std::string(kCheckpointFormat)));
  archive.write("version", c10::IValue(kCheckpointVersion));
  archive.write("config", to_tensor(nlohmann::json(info.config).dump()));
  archive.write("tokenizer", to_tensor(info.tokenizer));
  // The model directory as an absolute path, written by the run's first save (in the directory it
  // was started from): a run resumed from elsewhere still names, and finds, its base.
  std::optional<PretrainedModel> pretrained = info.pretrained;
  if (pretrained) pretrained->source = std::filesystem::absolute(pretrained->source).lexically_normal().string();
  if (pretrained) archive.write("pretrained", to_tensor(to_json(*pretrained).dump()));
  archive.write("baseline", to_tensor(info.baseline.dump()));
  if (info.data) archive.write("data_fingerprint", to_tensor(fingerprint_to_json(*info.data).dump()));
  if (!info.selection.is_null()) archive.write("selection", to_tensor(info.selection.dump()));
  archive.write("progress", torch::tensor({info.progress.step, info.progress.epoch, info.progress.batch_in_epoch}));
  c10::List<at::Tensor> scripts;
  for (const auto& s : model.torchscript_bytes()) scripts.push_back(to_tensor(s));
  archive.write("torchscript", c10::IValue(scripts));

  // A --model-dir run's frozen weights stay in the base model: the checkpoint names them.
  const FrozenWeights frozen = pretrained ? frozen_weights(model, pretrained->source) : FrozenWeights{};
  if (!frozen.names.empty()) archive.write("frozen", to_tensor(to_json(frozen).dump()));
  const std::unordered_set<std::string> left_to_base(frozen.names.begin(), frozen.names.end());
  c10::List<std::string> names;
  c10::List<at::Tensor> tensors;
  for (const auto& [name, t] : model.named_state()) {
    if (left_to_base.count(name)) continue;
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

  // Streamed to temporary_path(path) as the archive serialises, then renamed over `path`: not into
  // memory first (a second copy of the model and its AdamW state: 7 GB more for a 0.6B model,
  // which ran a 24 GB machine out of memory at its first checkpoint), and not through LibTorch's
  // file writer, which throws again from its destructor when the disk fills up (the process
  // aborts, leaving a torn .tmp file). write_file_atomic_streamed reports a full disk after the
  // archive is done and removes its temporary file.
  try {
    files::write_file_atomic_streamed(path, [&](const std::function<void(const void*, size_t)>& write) {
      archive.save_to([&](const void* data, size_t size) {
        write(data, size);
        return size;
      });
    });
  } catch (const std::exception& e) {
    throw CheckpointError("cannot save checkpoint " + path + ": " + error_message(e));
  }
}

namespace {

CheckpointInfo read_info(torch::serialize::InputArchive& archive, const std::string& name) {
  CheckpointInfo info;
  try {
    info.config = read_saved_config(nlohmann::json::parse(read_bytes(archive, "config", name)), &info.notices);
    info.baseline = nlohmann::json::parse(read_bytes(archive, "baseline", name));
  } catch (const std::exception& e) {
    check(false, "checkpoint ", name, " has an unreadable config: ", error_message(e));
  }
  info.tokenizer = read_bytes(archive, "tokenizer", name);
  torch::Tensor fingerprint;
  if (archive.try_read("data_fingerprint", fingerprint)) {  // absent from checkpoints of earlier versions
    try {
      info.data = fingerprint_from_json(nlohmann::json::parse(to_bytes(fingerprint)));
    } catch (const std::exception& e) {
      check(false, "checkpoint ", name, " has a malformed data fingerprint: ", error_message(e));
    }
  }
  torch::Tensor pretrained;
  if (archive.try_read("pretrained", pretrained)) {  // only in --model-dir runs
    try {
      info.pretrained = pretrained_from_json(nlohmann::json::parse(to_bytes(pretrained)), name);
    } catch (const std::exception& e) {
      check(false, "checkpoint ", name, " has a malformed pretrained model description: ", error_message(e));
    }
  }
  torch::Tensor selection;
  if (archive.try_read("selection", selection)) {  // only in runs with --eval-every
    try {
      info.selection = nlohmann::json::parse(to_bytes(selection));
    } catch (const std::exception& e) {
      check(false, "checkpoint ", name, " has a malformed model selection record: ", error_message(e));
    }
  }
  auto progress = read_tensor(archive, "progress", name);
  check(progress.numel() == 3, "checkpoint ", name, " has a malformed progress record");
  info.progress = {progress[0].item<int64_t>(), progress[1].item<int64_t>(), progress[2].item<int64_t>()};
  check(info.progress.step >= 0 && info.progress.epoch >= 0 && info.progress.batch_in_epoch >= 0, "checkpoint ",
        name, " has a malformed progress record");
  c10::IValue scripts;
  check(archive.try_read("torchscript", scripts) && scripts.isTensorList(), "checkpoint ", name,
        " lacks 'torchscript'");
  for (const auto& t : scripts.toTensorList()) info.torchscript.push_back(to_bytes(t));
  const auto rng = read_tensor(archive, "rng_cpu", name);
  check(rng.dim() == 2, "checkpoint ", name, " has malformed generator states");
  info.world_size = rng.size(0);
  return info;
}

BiEncoder read_model(torch::serialize::InputArchive& archive, const std::string& name, const CheckpointInfo& info) {
  BiEncoder model = build_model(info.config, info.torchscript, info.pretrained ? &*info.pretrained : nullptr);
  c10::IValue names, tensors;
  check(archive.try_read("model_names", names) && archive.try_read("model_tensors", tensors) && names.isList() &&
            tensors.isTensorList(),
        "checkpoint ", name, " lacks the model weights");
  std::map<std::string, at::Tensor> saved;
  const auto name_list = names.toList();
  const auto tensor_list = tensors.toTensorList();
  check(name_list.size() == tensor_list.size(), "checkpoint ", name, " has malformed model weights");
  for (size_t i = 0; i < name_list.size(); ++i) {
    check(name_list.get(i).isString(), "checkpoint ", name, " has malformed model weights");
    saved[name_list.get(i).toStringRef()] = tensor_list.get(i);
  }
  FrozenWeights frozen;
  torch::Tensor frozen_record;
  if (archive.try_read("frozen", frozen_record)) {  // a --model-dir run that trained a part of the model
    try {
      frozen = frozen_from_json(nlohmann::json::parse(to_bytes(frozen_record)));
    } catch (const std::exception& e) {
      check(false, "checkpoint ", name, " has a malformed record of its frozen weights: ", error_message(e));
    }
    restore_frozen(model, frozen, name);
  }
  const std::unordered_set<std::string> from_base(frozen.names.begin(), frozen.names.end());
  torch::NoGradGuard no_grad;
  auto state = model.named_state();
  check(state.size() == saved.size() + from_base.size(), "checkpoint ", name, " holds ", saved.size() + from_base.size(),
        " tensors but the model has ", state.size(), ": it was saved from another architecture");
  for (auto& [key, t] : state) {
    if (from_base.count(key)) continue;
    auto it = saved.find(key);
    check(it != saved.end(), "checkpoint ", name, " lacks the weight '", key, "'");
    check(it->second.sizes() == t.sizes(), "checkpoint ", name, ": weight '", key, "' has shape ",
          it->second.sizes(), " but the model expects ", t.sizes());
    t.copy_(it->second);
  }
  // What trains as the run had it (BiEncoder::parameters: what the optimizer's state is of).
  if (!info.config.encoder.trainable().everything()) select_trainable(model, info.config.encoder.trainable());
  return model;
}

void read_training_state(torch::serialize::InputArchive& archive, const std::string& name,
                         torch::optim::Optimizer& optimizer, const c10::Device& device, int rank,
                         GradScaler* scaler) {
  torch::serialize::InputArchive optimizer_archive;
  check(archive.try_read("optimizer", optimizer_archive), "checkpoint ", name, " lacks the optimizer state");
  try {
    optimizer.load(optimizer_archive);
  } catch (const std::exception& e) {
    check(false, "checkpoint ", name, ": cannot restore the optimizer state (", error_message(e), ")");
  }
  if (scaler) {
    torch::serialize::InputArchive scaler_archive;
    check(archive.try_read("grad_scaler", scaler_archive), "checkpoint ", name,
          " lacks the loss scaler's state (it was not saved from an fp16 run)");
    scaler->load(scaler_archive);
  }
  const auto cpu_states = read_tensor(archive, "rng_cpu", name);
  check(rank < cpu_states.size(0), "checkpoint ", name, " was saved by ", cpu_states.size(0),
        " process(es); resume it with as many");
  // Each rank's row is copied into a tensor of its own: LibTorch 2.15's CPU set_state() reads a
  // row view at a storage offset wrongly and crashes (rank 1's row of a 2-process checkpoint).
  at::Generator cpu = at::globalContext().defaultGenerator(c10::kCPU);
  cpu.set_state(cpu_states[rank].clone());
  for (const auto& d : generator_devices(device)) {
    at::Generator g = at::globalContext().defaultGenerator(d);
    g.set_state(read_tensor(archive, "rng_device", name)[rank].clone());
  }
}

}  // namespace

Tokenizer tokenizer_of(const CheckpointInfo& info) {
  const PretrainedModel* pretrained = info.pretrained ? &*info.pretrained : nullptr;
  const Tokenizer tokenizer = pretrained ? pretrained_tokenizer(*pretrained) : Tokenizer::from_serialized(info.tokenizer);
  return tokenizer.with_prompts(resolve_prompts(info.config.encoder.prompts(), pretrained));
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  return reading(path, [&] {
    auto archive = open_archive(read_checkpoint_file(path), path);
    return read_info(archive, path);
  });
}

BiEncoder load_model(const std::string& path, const CheckpointInfo& info) {
  return reading(path, [&] {
    auto archive = open_archive(read_checkpoint_file(path), path);
    return read_model(archive, path, info);
  });
}

void load_training_state(const std::string& path, torch::optim::Optimizer& optimizer, const c10::Device& device,
                         int rank, GradScaler* scaler) {
  reading(path, [&] {
    auto archive = open_archive(read_checkpoint_file(path), path);
    read_training_state(archive, path, optimizer, device, rank, scaler);
  });
}

LoadedCheckpoint load_checkpoint_bytes(const std::string& bytes, const std::string& name) {
  return reading(name, [&] {
    auto archive = open_archive(bytes, name);
    auto info = read_info(archive, name);
    auto model = read_model(archive, name, info);
    return LoadedCheckpoint{std::move(info), std::move(model)};
  });
}

LoadedCheckpoint load_checkpoint(const std::string& path) { return load_checkpoint_bytes(read_checkpoint_file(path), path); }

}  // namespace retriever
}  // namespace gradcache
