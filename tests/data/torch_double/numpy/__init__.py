# TEST DOUBLE, not numpy: an empty stand-in so kforge's probe
# (`import torch, numpy`) passes on a host without numpy. See ../README.md.
__version__ = "0-test-double"
