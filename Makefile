# Entry points. `make demo` and `make test` are the README's two commands for a fresh machine.
.PHONY: demo test check lint unit cluster-up cluster-down bench deps

# The main job on the embedded two-node cluster: a 2-node x 2-GPU torchrun DDP program.
demo:
	bash tests/install_deps.sh
	bash hpc_files/demo.sh

# Everything: install, cluster up, shellcheck/ruff/mypy, bats, pytest, cluster down.
test:
	bash tests/run.sh

# Before each commit: lint, the unit tests and pytest (no cluster), side by side: a few minutes.
# Like the targets below, it installs what is missing first (tests/install_deps.sh: about a
# second when all is there), so that it works on a fresh clone.
check:
	bash tests/run.sh --no-cluster --bats tests/unit

deps:
	bash tests/install_deps.sh

lint:
	bash tests/run.sh --no-cluster --no-pytest --bats tests/unit/harness.bats

# Unit tests only: no cluster needed.
unit:
	bash tests/run.sh --no-cluster --no-lint --bats tests/unit

cluster-up:
	bash hpc_files/local_cluster.sh up

cluster-down:
	bash hpc_files/local_cluster.sh down

bench:
	bash bench/submit
