"""``ndgrad.distributed``: ``torch.distributed`` on MPI (mpi4py and an MPI wheel, installed by
``pip install 'ndgrad[distributed]'``).

Start a job with ``python -m ndgrad.distributed.run --nproc-per-node N script.py`` (torchrun's
flags, on top of the MPI wheel's ``mpiexec``); in the script, ``init_process_group("mpi")``
joins the job, the collectives (``all_reduce``, ``broadcast``, ``all_gather`` ...) work in place
on tensors, ``ndgrad.nn.parallel.DistributedDataParallel`` averages gradients during backward
and ``ndgrad.utils.data.distributed.DistributedSampler`` splits a dataset between the ranks.
Note [MPI engine] (``_mpi.py``) and Note [Collective signature check]
(``_checks.py``) say how it is built.

Example:
    >>> import ndgrad.distributed as dist
    >>> dist.is_available(), dist.is_initialized()
    (True, False)
"""

from . import collectives, distributed_c10d, object_collectives, point_to_point
from .collectives import *  # noqa: F401,F403
from .distributed_c10d import *  # noqa: F401,F403
from .object_collectives import *  # noqa: F401,F403
from .point_to_point import *  # noqa: F401,F403

__all__ = (list(distributed_c10d.__all__) + list(collectives.__all__)
           + list(point_to_point.__all__) + list(object_collectives.__all__))
