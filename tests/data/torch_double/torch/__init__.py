# TEST DOUBLE, not PyTorch: the few tensor operations kforge's torch
# references use in the CPU suites (see ../README.md). Values are Python
# floats or ints in a flat list with a shape.
import array

__version__ = "0-test-double"


class dtype:
    def __init__(self, name, code):
        self.name, self.code = name, code

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", "f")
float64 = dtype("float64", "d")
int32 = dtype("int32", "i")
int64 = dtype("int64", "q")
int8 = dtype("int8", "b")
uint8 = dtype("uint8", "B")
float16 = dtype("float16", None)
bfloat16 = dtype("bfloat16", None)


def _unsupported(what):
    raise NotImplementedError("torch test double: %s is not implemented" % what)


class _Array:
    def __init__(self, vals):
        self.vals = vals

    def tobytes(self):
        return array.array("d", self.vals).tobytes()


class Tensor:
    def __init__(self, vals, shape, dt):
        self.vals, self.shape, self.dtype = list(vals), list(shape), dt

    def numel(self):
        return len(self.vals)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        shape = list(shape)
        if shape == [-1]:
            shape = [len(self.vals)]
        n = 1
        for d in shape:
            n *= d
        if n != len(self.vals):
            raise RuntimeError("shape %s is invalid for input of size %d" % (shape, n))
        return Tensor(self.vals, shape, self.dtype)

    def clone(self):
        return Tensor(self.vals, self.shape, self.dtype)

    def detach(self):
        return self

    def to(self, device=None, dt=None):
        if device not in (None, "cpu"):
            _unsupported("device %r" % (device,))
        dt = dt or self.dtype
        vals = [float(v) for v in self.vals] if dt in (float32, float64) else self.vals
        return Tensor(vals, self.shape, dt)

    def numpy(self):
        return _Array(self.vals)

    def _zip(self, o, f):
        if isinstance(o, Tensor):
            if o.shape != self.shape:
                _unsupported("broadcasting %s with %s" % (self.shape, o.shape))
            return Tensor([f(a, b) for a, b in zip(self.vals, o.vals)], self.shape, self.dtype)
        if isinstance(o, (int, float)):
            return Tensor([f(a, o) for a in self.vals], self.shape, self.dtype)
        return NotImplemented

    def __add__(self, o):
        return self._zip(o, lambda a, b: a + b)

    def __sub__(self, o):
        return self._zip(o, lambda a, b: a - b)

    def __mul__(self, o):
        return self._zip(o, lambda a, b: a * b)

    __radd__ = __add__
    __rmul__ = __mul__

    def __rsub__(self, o):
        return self._zip(o, lambda a, b: b - a)


def frombuffer(raw, dtype):
    if dtype.code is None:
        _unsupported("frombuffer of %r" % dtype)
    a = array.array(dtype.code)
    a.frombytes(bytes(raw))
    return Tensor(a.tolist(), [len(a)], dtype)


def as_tensor(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float)):
        return Tensor([x], [], float64)
    _unsupported("as_tensor of %s" % type(x).__name__)
