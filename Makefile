# Entry points. `make demo` and `make test` are the README's two commands for a fresh machine.
.PHONY: demo test check lint unit cluster-up cluster-down bench deps

# The main job on the embedded two-node cluster: a 2-node x 2-GPU torchrun DDP program.
demo:
	bash tests/install_deps.sh
	bash hpc_files/demo.sh

# Everything: install, cluster up, shellcheck/ruff/mypy, bats, pytest, cluster down.
test:
	bash tests/run.sh

# Before each commit: lint and the unit tests (no cluster), side by side: a few minutes.
check:
	bash tests/run.sh --no-install --no-cluster --bats tests/unit

deps:
	bash tests/install_deps.sh

lint:
	bash tests/run.sh --no-install --no-cluster --no-pytest --bats tests/unit/harness.bats

# Unit tests only: no cluster needed.
unit:
	bash tests/run.sh --no-install --no-cluster --no-lint --bats tests/unit

cluster-up:
	bash hpc_files/local_cluster.sh up

cluster-down:
	bash hpc_files/local_cluster.sh down

bench:
	bash bench/submit
