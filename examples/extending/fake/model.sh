#!/bin/sh
# Stands in for a model's command line (`ollama run MODEL`, `llm -m MODEL`): the prompt on
# standard input, the answer on standard output. What it answers depends on words in the
# prompt, so that the tests and the example pipeline see every outcome.
prompt=$(cat)
case "$prompt" in
  *UNAVAILABLE*) echo "error: model 'fake-coder' is not loaded" >&2; exit 2 ;;
  *HANG*) sleep 60 ;;
  *DAEMON*) setsid sleep 25 & printf '```python\nclass ModelNew: pass\n```\n' ;;
  *EMPTY*) printf 'I cannot write this kernel.\n```python\n```\n' ;;
  *torch.sigmoid*) printf 'Here it is.\n```python\n# WRONG: forgets the exponent\nclass ModelNew: pass\n```\n' ;;
  *) printf 'Here it is.\n```python\n# %s\nclass ModelNew: pass\n```\nIt is fast.\n' "$(echo "$prompt" | head -n 1)" ;;
esac
