// Registers the op with the PyTorch dispatcher under this extension's
// namespace, so several versions can load side by side and torch.compile
// sees a real op (its fake implementation is in __init__.py).
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)
{
	// "Tensor! out" marks the argument the op writes, so the compiler
	// knows about the mutation.
	ops.def("rms_norm(Tensor! out, Tensor x, Tensor w, float eps) -> ()");
	ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
