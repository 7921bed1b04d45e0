#!/usr/bin/env python3
"""Applies one mutant (tests/mutants/list/*.mut) to a source tree, or tells why it cannot.

A mutant file: comment lines (#) saying what the mutant changes, optionally "equivalent: WHY"
for a mutant shown to change no behaviour, "file: PATH" (relative to the tree), then the exact
old text between "@@ old" and "@@ new" and the new text between "@@ new" and "@@ end". The old
text must occur exactly once in the file: a text substitution, not a line-numbered patch, so
that it still applies while the file is edited elsewhere.

usage: apply.py MUTANT TREE        exit 0: applied; 3: did not apply (message on stderr)
       apply.py --describe MUTANT  prints "file<TAB>why<TAB>equivalent"
"""
import sys


def parse(path):
    why, target, equiv, blocks, cur = [], None, "", {}, None
    for line in open(path, encoding="utf-8").read().split("\n"):
        if cur is None and line.startswith("#"):
            why.append(line[1:].strip())
        elif cur is None and line.startswith("equivalent:"):
            equiv = line[len("equivalent:"):].strip()
        elif cur is None and line.startswith("file:"):
            target = line[len("file:"):].strip()
        elif line in ("@@ old", "@@ new", "@@ end"):
            cur = line[3:]
            if cur != "end":
                blocks[cur] = []
        elif cur in ("old", "new"):
            blocks[cur].append(line)
    if target is None or "old" not in blocks or "new" not in blocks:
        raise SystemExit("%s: needs file:, @@ old, @@ new and @@ end" % path)
    return target, " ".join(why), equiv, "\n".join(blocks["old"]), "\n".join(blocks["new"])


def main():
    if sys.argv[1] == "--describe":
        target, why, equiv, _, _ = parse(sys.argv[2])
        print("%s\t%s\t%s" % (target, why, equiv))
        return 0
    target, _, _, old, new = parse(sys.argv[1])
    path = sys.argv[2] + "/" + target
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        print("%s: %s" % (target, e.strerror), file=sys.stderr)
        return 3
    n = text.count(old)
    if n != 1:
        print("%s: the old text occurs %d times (needs exactly 1)" % (target, n), file=sys.stderr)
        return 3
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))
    return 0


sys.exit(main())
