#!/usr/bin/env python3
"""Turns a kernels/*.cu file into C++ for the CPU emulation of the CUDA
execution model (tests/gpu/emu): each launch `K<<<CFG>>>(ARGS)` becomes
`emu_launch(K, CFG, ARGS)`; everything else is left as written, so the
emulation runs the very source that nvcc compiles.

usage: cu2cpp.py IN.cu OUT.cpp
"""
import sys


def convert(src):
    out, i = [], 0
    while True:
        j = src.find("<<<", i)
        if j < 0:
            out.append(src[i:])
            return "".join(out)
        # the kernel expression: back from <<< over identifiers, ::, and <...> template args
        k, depth = j, 0
        while k > 0:
            c = src[k - 1]
            if c == ">":
                depth += 1
            elif c == "<":
                depth -= 1
            elif depth == 0 and not (c.isalnum() or c in "_:"):
                break
            k -= 1
        kernel = src[k:j]
        e = src.index(">>>", j)
        cfg = src[j + 3:e]
        p = e + 3
        assert src[p] == "(", f"launch of {kernel} without arguments"
        depth, q = 0, p
        while True:
            if src[q] == "(":
                depth += 1
            elif src[q] == ")":
                depth -= 1
                if depth == 0:
                    break
            q += 1
        args = src[p + 1:q].strip()
        out.append(src[i:k])
        out.append(f"emu_launch({kernel}, {cfg}{', ' + args if args else ''})")
        i = q + 1


def main():
    text = open(sys.argv[1]).read()
    with open(sys.argv[2], "w") as f:
        f.write(f'#line 1 "{sys.argv[1]}"\n')
        f.write(convert(text))


if __name__ == "__main__":
    main()
