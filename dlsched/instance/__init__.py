"""Instance data: the core MCMDK, the dlsched/1 file format, OR-Library readers, generators."""

from dlsched.instance import mcmdk_json  # noqa: F401  (registers the mcmdk family)
from dlsched.instance import smd_json  # noqa: F401  (registers the smd family)
from dlsched.instance import oasis_json  # noqa: F401  (registers the oasis family)
from dlsched.instance import placement_json  # noqa: F401  (registers the placement family)
from dlsched.instance.core import MCMDK, Reference, from_dense

__all__ = ["MCMDK", "Reference", "from_dense"]
