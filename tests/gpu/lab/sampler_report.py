#!/usr/bin/env python3
"""Names and sums the stacks tests/gpu/lab/sampler.c wrote.

    sampler_report.py SAMPLES.txt LIBDIR [--thread busiest|all] [--top N]

LIBDIR holds the libraries the program ran with (libnccl.so.2: the frames of that module are
named with addr2line -f against LIBDIR's copy). Prints, for the busiest thread (or all):
the share of samples whose innermost frame is in each module (self time by module), then per
function of libnccl.so.2 the share of samples with that function anywhere on the stack
(inclusive, counted once per sample), and its self share.
"""
import collections
import os
import subprocess
import sys


def parse(path):
    stacks = []
    with open(path) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            parts = line.split()
            frames = []
            for fr in parts[1:]:
                mod, _, off = fr.rpartition('+')
                frames.append((mod, off))
            stacks.append((int(parts[0]), frames))
    return stacks


def names(lib, offsets):
    """offset -> function name for one module, by one addr2line call."""
    if not offsets or not os.path.exists(lib):
        return {}
    offs = sorted(offsets)
    out = subprocess.run(['addr2line', '-f', '-C', '-e', lib] + offs, capture_output=True,
                         text=True).stdout.splitlines()
    return {o: out[2 * i] for i, o in enumerate(offs) if 2 * i < len(out)}


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    path, libdir = args[0], args[1]
    which = args[args.index('--thread') + 1] if '--thread' in args else 'busiest'
    top = int(args[args.index('--top') + 1]) if '--top' in args else 40
    stacks = parse(path)
    per_tid = collections.Counter(t for t, _ in stacks)
    if which == 'busiest' and per_tid:
        tid = per_tid.most_common(1)[0][0]
        stacks = [s for s in stacks if s[0] == tid]
        print(f'thread {tid}: {len(stacks)} of {sum(per_tid.values())} samples '
              f'(threads: {dict(per_tid.most_common(6))})')
    n = len(stacks) or 1
    lib = 'libnccl.so.2'
    offs = {off for _, fr in stacks for m, off in fr if m == lib}
    name = names(os.path.join(libdir, lib), offs)
    self_mod = collections.Counter(fr[0][0] if fr else '?' for _, fr in stacks)
    print('self time by module:')
    for m, c in self_mod.most_common(8):
        print(f'  {100.0 * c / n:5.1f}%  {m}')
    incl = collections.Counter()
    selff = collections.Counter()
    for _, fr in stacks:
        seen = set()
        for i, (m, off) in enumerate(fr):
            if m != lib:
                continue
            fn = name.get(off, off)
            if fn not in seen:
                incl[fn] += 1
                seen.add(fn)
        inner = next(((m, off) for m, off in fr if m == lib), None)
        if inner:
            # self in Baton: the innermost Baton frame, whatever it called below
            selff[name.get(inner[1], inner[1])] += 1
    print(f'{lib} functions: inclusive% (on the stack), innermost-Baton% (it or what it '
          f'called outside Baton)')
    for fn, c in incl.most_common(top):
        print(f'  {100.0 * c / n:5.1f}%  {100.0 * selff[fn] / n:5.1f}%  {fn}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
