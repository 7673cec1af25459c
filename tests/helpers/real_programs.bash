# shellcheck shell=bash
# Programs shaped like users' programs, not like the toolkit, shared by
# tests/integration/real_ddp_requeue.bats, real_lightning_requeue.bats and real_time_limit.bats:
# a torchrun trainer in the shape of pytorch/examples' DDP tutorial (snapshot.pt, resume),
# Lightning's BoringModel with its own SLURM handler, and a program that knows nothing of the
# warning. Load it after common and cluster.

# hpc_real_setup_file: setup_file of such a test file: the project "real project" (PROJECT,
# SCRATCH) with the three programs.
hpc_real_setup_file() {
  hpc_test_project "real project"
  cp "$HPC_ROOT/tests/fixtures/project/"{ddp_snapshot.py,oblivious.py,boring_requeue.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what these files test).
  hpc_venv_seed "$PROJECT"
}
