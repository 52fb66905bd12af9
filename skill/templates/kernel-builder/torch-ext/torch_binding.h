#pragma once

#include <torch/torch.h>

void rms_norm(torch::Tensor &out, torch::Tensor const &x,
              torch::Tensor const &w, double eps);
