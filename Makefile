# Conveniences over uv; README's test command needs nothing but Python.
PYTHON ?= python3
UV := $(PYTHON) -m uv
export UV_COMPILE_BYTECODE ?= 1

.PHONY: uv demo demo-publish test matrix lint bench bench-baseline bench-incremental bench-publish bench-wire bench-memory bench-watch bench-writer bench-publish-costs

uv:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet 'uv>=0.13,<0.14'

demo: uv
	$(UV) run --frozen python -m airflow_provider_resourcesync.demo

demo-publish: uv
	$(UV) run --frozen python -m airflow_provider_resourcesync.demo_publish

test: uv
	$(UV) run --frozen pytest

# The Airflow version matrix (README, "Supported versions"): make matrix [MATRIX="airflow-3.1"]
matrix: uv
	bash .ci/matrix/run $(MATRIX)

lint: uv
	$(UV) run --frozen ruff check .

bench: uv
	$(UV) run --frozen python benchmarks/parse.py

bench-baseline: uv
	$(UV) run --frozen python benchmarks/baseline.py

bench-incremental: uv
	$(UV) run --frozen python benchmarks/incremental.py

bench-publish: uv
	$(UV) run --frozen python benchmarks/publish.py

bench-publish-costs: uv
	$(UV) run --frozen python benchmarks/publish_costs.py

bench-wire: uv
	$(UV) run --frozen python benchmarks/wire.py

bench-memory: uv
	$(UV) run --frozen python benchmarks/memory.py

bench-watch: uv
	$(UV) run --frozen python benchmarks/watch_index.py

bench-writer: uv
	$(UV) run --frozen python benchmarks/writer.py
