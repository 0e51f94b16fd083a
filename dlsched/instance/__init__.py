"""Instance data (the bottom layer): the core MCMDK, each family's instance class, the dlsched/1
file format and its family table, OR-Library readers, generators."""

from dlsched.instance.core import MCMDK, Reference, from_dense

__all__ = ["MCMDK", "Reference", "from_dense"]
