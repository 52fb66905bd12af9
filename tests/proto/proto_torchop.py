"""`kforge torch-op` and `kforge export` with the real binary on a host
without a GPU (KFORGE_NO_GPU=1 forces that on a GPU machine too): a check
run that could not run is refused by both with the reason and the run id,
an unknown run exits 4, a missing --kernel-builder is a usage error, a
refused export writes nothing, and a spec file given to torch-op is read
(source_file included) and answered with no_gpu. Run by
tests/proto/proto_torchop.sh."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from proto_common import Checks

BIN = sys.argv[1]
CHECKS = Checks()
check = CHECKS.check
ENV = dict(os.environ, KFORGE_NO_GPU="1")

SOURCE = ('extern "C" __global__ void scale_f32(float *y, const float *x, int n)\n'
          '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n')
SPEC = {
    "source_file": "scale.cu", "arch": "sm_90", "sizes": [{"N": 1000}],
    "tensors": {"x": {"dtype": "f32", "shape": ["N"], "role": "input"},
                "y": {"dtype": "f32", "shape": ["N"], "role": "output"}},
    "launch": [{"kernel": "scale_f32", "grid": ["ceil_div(N, 256)"], "block": [256],
                "args": ["y", "x", "N"]}],
    "reference": {"torch": "y = 2 * x"},
}


def cli(data, *args):
    p = subprocess.run([BIN, *args, "--data-dir", data], capture_output=True, timeout=120,
                       env=ENV)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    tmp = tempfile.mkdtemp(prefix="kforge-torchop-")
    try:
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        open(os.path.join(tmp, "scale.cu"), "w").write(SOURCE)
        spec = os.path.join(tmp, "spec.json")
        json.dump(SPEC, open(spec, "w"))
        rc, out, err = cli(data, "check", spec, "--json")
        run = json.loads(out).get("run_id") if out.strip() else None
        check("a check without a GPU is recorded", rc == 3 and run, f"rc {rc} {out} {err}")

        rc, out, err = cli(data, "torch-op", run)
        check("torch-op refuses a check that did not pass",
              rc == 1 and "did not pass its check" in err and run in err, f"rc {rc} {out} {err}")
        proj = os.path.join(tmp, "proj")
        rc, out, err = cli(data, "export", run, "--kernel-builder", proj)
        check("export refuses a check that did not pass",
              rc == 1 and "did not pass its check" in err, f"rc {rc} {out} {err}")
        check("a refused export writes nothing", not os.path.exists(proj), proj)
        rc, out, err = cli(data, "export", "r000000000000000", "--kernel-builder", proj)
        check("export of an unknown run exits 4", rc == 4, f"rc {rc} {err}")
        rc, out, err = cli(data, "export", run)
        check("export without --kernel-builder is a usage error",
              rc == 2 and "--kernel-builder" in err, f"rc {rc} {err}")
        rc, out, err = cli(data, "torch-op")
        check("torch-op without a run or spec is a usage error", rc == 2, f"rc {rc} {err}")
        rc, out, err = cli(data, "torch-op", run, "--timeout", "5")
        check("torch-op --timeout below build_torch_op's minimum names the option and the range",
              rc == 2 and "--timeout: '5' is not an integer from 10 to 600" in err,
              f"rc {rc} {err}")
        rc, out, err = cli(data, "torch-op", spec, "--json")
        ans = json.loads(out) if out.strip() else {}
        check("torch-op with a spec file reaches the GPU step: no_gpu",
              rc == 3 and ans.get("error", {}).get("code") == "no_gpu", f"rc {rc} {out} {err}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CHECKS.summary("proto_torchop")


if __name__ == "__main__":
    sys.exit(main())
