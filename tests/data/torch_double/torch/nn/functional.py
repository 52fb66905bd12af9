# TEST DOUBLE, not PyTorch (see ../../../README.md): no functions.
