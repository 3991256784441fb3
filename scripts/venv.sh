# Sourced by scripts/demo.sh and scripts/test.sh (from the repository root): use the
# project-local virtual environment .venv, creating it with `python3 -m venv` when it is
# missing or broken, so that installs never touch the system Python (PEP 668 images
# refuse a system-wide pip install). Puts .venv/bin first on PATH and sets $PY.
venv_ok() { [ -x .venv/bin/python ] && .venv/bin/python -m pip --version >/dev/null 2>&1; }
if ! venv_ok; then
  command -v python3 >/dev/null 2>&1 || { echo "error: python3 not found" >&2; exit 1; }
  rm -rf .venv
  if ! python3 -m venv .venv; then
    # Debian/Ubuntu ship venv's ensurepip apart (python3-venv): install it when we may
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      rm -rf .venv
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv .venv
    else
      echo "error: python3 -m venv failed; install the venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip
fi
PY="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
