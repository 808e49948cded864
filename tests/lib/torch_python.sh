# Sourced by the end-to-end test scripts: exports KFORGE_PYTHON as the first interpreter
# that imports torch (KFORGE_PYTHON, then Debian's /usr/bin/python3, then python3 on PATH),
# or exits 77 (ctest: skipped) saying none does.
python=""
for p in "${KFORGE_PYTHON:-}" /usr/bin/python3 python3; do
  if [[ -n $p ]] && "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
done
[[ -n $python ]] || { echo "skipped: no python that imports torch"; exit 77; }
export KFORGE_PYTHON=$python
