"""AwF methods M(q, P) -> (answer, score): unified methods, and compositions GENERATOR+PREDICTOR.
Importing registers the unified ones."""
from verirag.awf.methods.base import AwFMethod, MethodOutput

__all__ = ["AwFMethod", "MethodOutput"]
