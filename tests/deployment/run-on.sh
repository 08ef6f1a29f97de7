#!/usr/bin/env bash
# The deployment test on another Airflow: tests/deployment/run-on.sh [ENV [PYTEST-ARGS...]]
# (ENV: deployment-3.0 unless given, naming .ci/matrix/ENV.txt). A virtual environment in
# .matrix/ENV holding exactly what that file pins (uv pip sync: seconds from uv's cache), the
# package installed from its wheel (--no-deps), then tests/deployment/ run by that environment's
# pytest from its folder: the wheel's modules are the ones imported, by pytest and by every
# Airflow process the test starts (they run the interpreter running pytest).
set -euo pipefail
env=${1:-deployment-3.0}
shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [[ -n "${UV:-}" ]]; then uv=("$UV"); else uv=(python3 -m uv); fi  # `uv run` sets UV
[[ -f .ci/matrix/$env.txt ]] || { echo "no environment $env: .ci/matrix/$env.txt" >&2; exit 2; }

venv=$root/.matrix/$env
[[ -x $venv/bin/python ]] || "${uv[@]}" venv -q --python 3.11 "$venv"
"${uv[@]}" pip sync -q --python "$venv/bin/python" ".ci/matrix/$env.txt"
dist=$(mktemp -d)
"${uv[@]}" build -q --wheel --out-dir "$dist" .
"${uv[@]}" pip install -q --python "$venv/bin/python" --no-deps "$dist"/*.whl
rm -rf "$dist"
cd "$venv"
exec bin/pytest -c "$root/pyproject.toml" --rootdir "$root" --import-mode=append \
    -p no:cacheprovider -n 0 "$@" "$root/tests/deployment"
