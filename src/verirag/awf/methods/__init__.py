"""AwF methods M(q, P) -> (answer, score): unified methods, and compositions GENERATOR+PREDICTOR.
Importing registers the unified ones."""

from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.methods.calibrag import CalibRAGMethod
from verirag.awf.methods.cot_hybrid import CoTHybrid
from verirag.awf.methods.dual_generation import DualGeneration
from verirag.awf.methods.intrinsic import IntrinsicAbstention

__all__ = ["AwFMethod", "CalibRAGMethod", "CoTHybrid", "DualGeneration", "IntrinsicAbstention", "MethodOutput"]
