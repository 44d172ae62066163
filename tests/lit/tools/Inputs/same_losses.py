"""Checks that two metrics files (tcc train / tcc-run train --metrics) have
the same steps, epochs and losses, bit for bit.

usage: same_losses.py A.jsonl B.jsonl  (prints "same N steps")
"""
import json
import sys


def rows(path):
    return [(r["step"], r["epoch"], r["loss"])
            for r in map(json.loads, open(path))]


a, b = rows(sys.argv[1]), rows(sys.argv[2])
if a != b:
    sys.exit(f"{sys.argv[1]} and {sys.argv[2]} differ:\n{a}\n{b}")
print(f"same {len(a)} steps")
