// The --device setting of every command that computes, checked against this machine with the other settings,
// so that a device that is not there is reported before any work (reading data, training the
// tokenizer, building the model), not when the model is first moved to it.
#pragma once

#include "retriever/config/settings_table.h"

namespace gradcache {
namespace retriever {

/// A SettingCheck of a device name: "cpu", or "cuda"/"cuda:N" with CUDA available and such a GPU.
SettingCheck existing_device();

/// --device and --threads, declared once for the commands that encode (eval, encode, mine): any
/// settings struct with the members `std::string device` and `int64_t threads`.
template <class Config>
void add_machine_settings(SettingsTable<Config>& t) {
  t.add(field("device", &Config::device, "--device", "cpu, cuda, ...").checked(existing_device()).in_group("Machine"));
  t.add(field("threads", &Config::threads, "--threads", "Intra-op threads (0: 1)").checked(at_least(0)).in_group("Machine"));
}

}  // namespace retriever
}  // namespace gradcache
