// A scenario of distributed_tests (run by test_distributed.cpp's worker, as every scenario):
// all_gather_rows keeps the rows of every dtype intact.
#include "test_util.h"

#include <gradcache/distributed.h>

#include <ATen/Context.h>

#include <iostream>
#include <string>

namespace gd = gradcache::distributed;

// all_gather_rows for every dtype a caller gathers: the rows each rank contributed arrive intact
// and in rank order (each rank's rows are a function of its rank). The trainer gathers the
// generators' states (uint8) this way for a checkpoint, so a mangled byte is a broken resume.
int worker_gather_dtypes(const gd::ProcessGroup& group) {
  auto fail = [](const std::string& message) {
    std::cerr << "worker: " << message << std::endl;
    return 1;
  };
  auto rows_of = [](int rank, torch::ScalarType dtype) {
    return (torch::arange(3 * 7, torch::kLong).reshape({3, 7}) * 11 + rank * 37).remainder(251).to(dtype);
  };
  for (auto dtype : {torch::kByte, torch::kLong, torch::kFloat, torch::kDouble}) {
    const auto all = group.all_gather_rows(rows_of(group.rank(), dtype));
    for (int r = 0; r < group.world_size(); ++r) {
      if (!torch::equal(all.slice(0, 3 * r, 3 * r + 3), rows_of(r, dtype))) {
        return fail(std::string("all_gather_rows of ") + c10::toString(dtype) + ": the rows of rank " + std::to_string(r) +
                    " differ");
      }
    }
  }
  // A real generator state, as the trainer's checkpoint gathers it: every rank's loads back and
  // draws what that rank would draw. Each row is copied first, as the checkpoint does: LibTorch
  // 2.15's set_state() crashes on a row view at a storage offset.
  torch::manual_seed(100 + group.rank());
  at::Generator generator = at::globalContext().defaultGenerator(c10::kCPU);
  const auto mine = generator.get_state();
  const auto next = torch::rand({4});
  const auto states = group.all_gather_rows(mine.unsqueeze(0));
  if (!torch::equal(states[group.rank()], mine)) return fail("this rank's generator state came back changed");
  for (int r = 0; r < group.world_size(); ++r) generator.set_state(states[r].clone());
  generator.set_state(states[group.rank()].clone());
  if (!torch::equal(torch::rand({4}), next)) return fail("the restored generator draws other numbers");
  return 0;
}

