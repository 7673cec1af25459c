"""Typed helpers for the Bash-first SLURM toolkit.

Modules (each imported on demand, so ``import hpc_helpers`` is cheap and needs neither YAML nor
torch):

* :mod:`hpc_helpers.hostlist` - SLURM hostlist expressions (``n[01-03,7]``)
* :mod:`hpc_helpers.ports` - the master-port rule
* :mod:`hpc_helpers.job` - the folders a toolkit job reads and writes
* :mod:`hpc_helpers.slurm_env` - a typed view over ``SLURM_*`` variables
* :mod:`hpc_helpers.distributed` - rank/world resolution and ``torch.distributed`` set-up
* :mod:`hpc_helpers.signals` - polling the "time is nearly up" signal
* :mod:`hpc_helpers.profile` - cluster profiles (YAML) rendered for Bash
* :mod:`hpc_helpers.sweeps` - W&B sweep grids

The command line is ``python -m hpc_helpers --help``.
"""

__version__ = "0.2.0"
__all__ = ["__version__"]
