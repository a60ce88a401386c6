// gradcache: Gradient Cache for LibTorch. The umbrella header.
#pragma once

#include <gradcache/chunk_record.h>
#include <gradcache/chunk_size.h>
#include <gradcache/contrastive_loss.h>
#include <gradcache/cost_model.h>
#include <gradcache/errors.h>
#include <gradcache/functional.h>
#include <gradcache/grad_cache.h>
#include <gradcache/grad_scaler.h>
#include <gradcache/loss.h>
#include <gradcache/matryoshka_loss.h>
#include <gradcache/memory.h>
#include <gradcache/model.h>
#include <gradcache/model_call.h>
#include <gradcache/model_input.h>
#include <gradcache/precision.h>
#include <gradcache/precision_kind.h>
#include <gradcache/retention.h>
#include <gradcache/retention_hooks.h>
#include <gradcache/rng_state.h>
#include <gradcache/similarity.h>
#include <gradcache/split.h>
#include <gradcache/streaming_loss.h>
#include <gradcache/version.h>

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/distributed.h>
#include <gradcache/sharded_loss.h>
#endif
