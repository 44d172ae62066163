"""Runs a command and prints its stdout, its stderr and then its exit status,
so a test can check the exact status (`not` accepts any non-zero one).

usage: exit_status.py COMMAND [ARGS...]
"""
import subprocess
import sys

p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stdout.write(p.stdout)
sys.stdout.write(p.stderr)
print(f"exit status {p.returncode}")
