#!/usr/bin/env python3
"""The SASS instructions of each loop of CUDA kernels, counted without a GPU.

An issue-bound kernel's time follows the instructions its loops execute: this
lists, per kernel, every loop (a branch back to an earlier address) with its
instruction count and the counts that matter for the tensor-core and memory
kernels (HMMA, MUFU, shared and global loads and stores), then the most
frequent opcodes. Counts are static: a loop's both sides of a branch are
counted, so compare variants of one kernel, not absolute numbers.

  sass_loops.py FILE.cu [--kernel REGEX] [-I DIR ...] [--arch sm_90a]
      compiles FILE.cu to a cubin (nvcc -O3 --fmad=false -std=c++17, as the
      runtime's kernels; tcc compile --emit=cuda writes such a file for the
      generated ones), then reads it
  sass_loops.py FILE.cubin [--kernel REGEX]
  sass_loops.py --sass FILE [--kernel REGEX]
      reads cuobjdump -sass output saved earlier

Needs nvcc and cuobjdump (CUDA toolkit; where the toolkit has no cuobjdump,
PyPI's nvidia-cuda-cuobjdump package has one: install it into a virtual
environment, then pass --cuobjdump PATH).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")
PRED = re.compile(r"^@!?U?P[T0-9]+\s+")
GROUPS = [("HMMA", ("HMMA",)), ("MUFU", ("MUFU",)),
          ("shared ld", ("LDS", "LDSM")), ("shared st", ("STS",)),
          ("global ld", ("LDG", "LDGSTS")), ("global st", ("STG", "ST.", "RED",
                                                           "ATOM"))]


def fail(msg, code=2):
    print(f"sass_loops.py: error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse(text):
    """{kernel: [(address, instruction)]} from cuobjdump -sass output."""
    kernels, current = {}, None
    for line in text.splitlines():
        if "Function :" in line:
            current = line.split("Function :", 1)[1].strip()
            kernels[current] = []
            continue
        m = INSTR.match(line)
        if m and current is not None:
            kernels[current].append((int(m.group(1), 16), m.group(2)))
    return kernels


def opcode(instr):
    return PRED.sub("", instr).split(" ", 1)[0]


def loops(instrs):
    """(first index, last index) of each loop: a branch to an earlier
    address closes the loop that starts there."""
    at = {a: i for i, (a, _) in enumerate(instrs)}
    found = []
    for i, (a, ins) in enumerate(instrs):
        m = BRANCH.search(ins)
        if m:
            target = int(m.group(1), 16)
            if target < a and target in at:
                found.append((at[target], i))
    return found


def report(kernels, pattern):
    shown = 0
    for name, instrs in kernels.items():
        if pattern and not re.search(pattern, name):
            continue
        shown += 1
        print(f"{name}: {len(instrs)} instructions")
        for first, last in loops(instrs):
            ops = [opcode(ins) for _, ins in instrs[first:last + 1]]
            counts = collections.Counter(ops)
            groups = []
            for label, prefixes in GROUPS:
                n = sum(c for op, c in counts.items()
                        if op.startswith(prefixes))
                if n:
                    groups.append(f"{label} {n}")
            top = ", ".join(f"{op} {c}" for op, c in counts.most_common(8))
            print(f"  loop {instrs[first][0]:#06x}..{instrs[last][0]:#06x}: "
                  f"{len(ops)} instructions" +
                  (f"; {'; '.join(groups)}" if groups else ""))
            print(f"    {top}")
    if not shown:
        fail(f"no kernel matches '{pattern}'" if pattern else "no kernels",
             code=1)


def tool(name, given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            fail(f"{given}: not an executable {name}")
        return given
    path = shutil.which(name)
    if not path:
        cuda = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                            "bin", name)
        path = cuda if os.path.exists(cuda) else None
    if not path:
        fail(f"{name} not found (see --help for where to get it)")
    return path


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("file", nargs="?", help="a .cu or .cubin file")
    ap.add_argument("--sass", help="cuobjdump -sass output to read instead")
    ap.add_argument("--kernel", help="only kernels whose (mangled) name "
                    "matches this regular expression")
    ap.add_argument("-I", dest="includes", action="append", default=[],
                    help="include directory for a .cu file")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--nvcc")
    ap.add_argument("--cuobjdump")
    args = ap.parse_args()
    if bool(args.file) == bool(args.sass):
        ap.error("give a .cu or .cubin file, or --sass FILE")
    if args.sass:
        try:
            with open(args.sass) as f:
                text = f.read()
        except OSError as e:
            fail(f"cannot read {args.sass}: {e.strerror}")
        report(parse(text), args.kernel)
        return
    if not os.path.exists(args.file):
        fail(f"{args.file}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = args.file
        if args.file.endswith(".cu"):
            cubin = os.path.join(tmp, "kernels.cubin")
            arch = args.arch.replace("sm_", "")
            cmd = [tool("nvcc", args.nvcc), "-O3", "--fmad=false",
                   "-std=c++17", "-cubin",
                   f"--generate-code=arch=compute_{arch},code=[sm_{arch}]",
                   "-o", cubin, args.file]
            cmd += [f"-I{d}" for d in args.includes]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                fail(f"nvcc failed on {args.file}:\n{r.stderr}")
        elif not args.file.endswith(".cubin"):
            fail(f"{args.file}: expected a .cu or .cubin file")
        r = subprocess.run([tool("cuobjdump", args.cuobjdump), "-sass", cubin],
                           capture_output=True, text=True)
        if r.returncode:
            fail(f"cuobjdump failed on {cubin}:\n{r.stderr}")
        report(parse(r.stdout), args.kernel)


if __name__ == "__main__":
    main()
