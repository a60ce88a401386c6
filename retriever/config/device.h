// The --device setting of train and eval, checked against this machine with the other settings,
// so that a device that is not there is reported before any work (reading data, training the
// tokenizer, building the model), not when the model is first moved to it.
#pragma once

#include "retriever/config/settings_table.h"

namespace gradcache {
namespace retriever {

/// A SettingCheck of a device name: "cpu", or "cuda"/"cuda:N" with CUDA available and such a GPU.
SettingCheck existing_device();

}  // namespace retriever
}  // namespace gradcache
