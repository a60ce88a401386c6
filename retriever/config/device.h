// The --device setting of every command that computes, checked against this machine with the other settings,
// so that a device that is not there is reported before any work (reading data, training the
// tokenizer, building the model), not when the model is first moved to it.
#pragma once

#include "retriever/config/settings_table.h"

namespace gradcache {
namespace retriever {

/// A SettingCheck of a device name: "cpu", or "cuda"/"cuda:N" with CUDA available and such a GPU.
SettingCheck existing_device();

/// A SettingCheck of a thread count: 0 (the default: 1) to 1,024. More threads than cores only
/// contend, and asking for 100,000 once failed far from the flag (in the tokenizer's loading).
inline SettingCheck thread_count() { return between(0, 1024); }

/// --device and --threads, declared once for the commands that encode (eval, encode, mine): any
/// settings struct with the members `std::string device` and `int64_t threads`.
template <class Config>
void add_machine_settings(SettingsTable<Config>& t) {
  t.add(field("device", &Config::device, "--device", "cpu, cuda, ...").checked(existing_device()).in_group("Machine"));
  t.add(field("threads", &Config::threads, "--threads", "Intra-op threads (0: 1)").checked(thread_count()).in_group("Machine"));
}

}  // namespace retriever
}  // namespace gradcache
