"""Checks `tcc tune-batch`'s answer against `tcc compile --report`.

Usage: check_tune_batch.py TCC MODEL BUDGET [flags...]. Runs tune-batch with
--no-measure, then compiles the model at the batch it found and the next one
and reads their predicted peaks: the first must fit the budget and the
second must not, each equal to what tune-batch printed.
"""
import re
import subprocess
import sys
import tempfile

tcc, model, budget, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
out = subprocess.run([tcc, "tune-batch", model, "--memory-budget", budget,
                      "--no-measure"] + flags, check=True,
                     capture_output=True, text=True).stdout
print(out, end="")
total = int(re.search(r"budget .*?, (\d+) bytes", out).group(1))
m = re.search(r"fits: (\d+) \(predicted peak .*?, (\d+) bytes; batch \d+ "
              r"would need (\d+) bytes", out)
n, peak, next_peak = (int(g) for g in m.groups())


def predicted(batch):
    with tempfile.TemporaryDirectory() as d:
        rep = subprocess.run([tcc, "compile", model, "--batch", str(batch),
                              "--report", "-o", d + "/a.tcc"] + flags,
                             check=True, capture_output=True, text=True).stdout
    return int(re.search(r"predicted peak .*?\((\d+) bytes\)", rep).group(1))


got, got_next = predicted(n), predicted(n + 1)
assert got == peak and got_next == next_peak, (got, peak, got_next, next_peak)
assert got <= total < got_next, (got, total, got_next)
print("CHECKED: batch %d fits %d <= %d < %d" % (n, got, total, got_next))
