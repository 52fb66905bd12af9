"""Compiles every ```cuda and ```cpp block of knowledge/guides/*.md with
nvcc (-std=c++17 -rdc=true -gencode arch=compute_90a,code=sm_90a -c), the
CUDA headers a kernel file starts with prepended. -rdc=true because without
it nvcc drops __device__ functions no kernel calls before ptxas sees them,
so a block of helpers would "compile" unchecked. Not -arch=sm_90a: nvcc
13.0 turns that into compute_90 PTX too, which rejects wgmma and setmaxnreg. A block that is deliberately a piece of a larger file (a
launch line, a loop body, a host excerpt needing PyTorch) says so in its
info string: ```cuda fragment. Such blocks are counted, not compiled; every
other block must compile, so a guide's code cannot rot unnoticed. A block
for another target names it in the info string (```cuda sm_100a) and is
compiled for that target instead of sm_90a.
It also holds every guide to docs/guides.md's length: 300-900 words of prose
(the body after the front matter, fenced blocks not counted), so a guide
that grows past it is split by topic instead of growing on.
Run by tests/proto/proto_guides.sh."""
import glob
import os
import re
import subprocess
import sys
import tempfile

from proto_common import Checks

SRC, NVCC = sys.argv[1], sys.argv[2]
CHECKS = Checks()
check = CHECKS.check
PRELUDE = ("#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
           "#include <cstdint>\n#include <cstdio>\n")
TARGET = re.compile(r"sm_\d+[af]?")
BLOCK = re.compile(r"^```(cuda|cpp|c\+\+)([^\n]*)\n(.*?)^```", re.S | re.M)
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
WORDS_MIN, WORDS_MAX = 300, 900


def prose_words(text):
    """Words of a guide's body without its front matter and fenced blocks."""
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    return len(FENCED.sub("", body).split())


def main():
    compiled = fragments = 0
    with tempfile.TemporaryDirectory(prefix="kforge-guides-") as tmp:
        for path in sorted(glob.glob(os.path.join(SRC, "knowledge/guides/*.md"))):
            name = os.path.basename(path)[:-3]
            text = open(path, encoding="utf-8").read()
            if name != "INDEX":
                words = prose_words(text)
                check(f"{name}.md: {WORDS_MIN}-{WORDS_MAX} words of prose",
                      WORDS_MIN <= words <= WORDS_MAX, f"{words} words")
            for i, m in enumerate(BLOCK.finditer(text)):
                if "fragment" in m.group(2).split():
                    fragments += 1
                    continue
                line = text.count("\n", 0, m.start()) + 1
                target = next((w for w in m.group(2).split() if TARGET.fullmatch(w)), "sm_90a")
                cu = os.path.join(tmp, f"{name}_{i}.cu")
                with open(cu, "w", encoding="utf-8") as f:
                    f.write(PRELUDE + m.group(3))
                r = subprocess.run([NVCC, "-std=c++17", "-rdc=true", "-gencode",
                                    f"arch=compute_{target[3:]},code={target}", "-c", "-o",
                                    os.path.join(tmp, f"{name}_{i}.o"), cu],
                                   capture_output=True, text=True)
                err = "\n".join(r.stderr.splitlines()[:6])
                check(f"{name}.md:{line} compiles for {target}", r.returncode == 0, err)
                compiled += 1
    check("complete blocks compiled", compiled >= 16, str(compiled))
    print(f"proto_guides: {compiled} blocks compiled, {fragments} fragments")
    sys.exit(CHECKS.summary("proto_guides"))


if __name__ == "__main__":
    main()
