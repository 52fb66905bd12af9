# TEST DOUBLE, not PyTorch (see ../../README.md).
from . import functional  # noqa: F401
