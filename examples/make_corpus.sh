#!/bin/sh
# Builds the character-LM corpus of the second example from license texts that
# Debian's base-files package installs on every system (/usr/share/common-licenses).
# The result is plain text; each byte is one token (vocabulary 256).
set -eu
out="${1:-$(dirname "$0")/text/licenses.txt}"
cat /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/GPL-2 \
    /usr/share/common-licenses/LGPL-2.1 /usr/share/common-licenses/Apache-2.0 \
    /usr/share/common-licenses/MPL-2.0 > "$out"
echo "wrote $out ($(wc -c < "$out") bytes)"
