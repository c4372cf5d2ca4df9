"""Answer generators: M(q, P) -> answer. Importing registers them."""

from verirag.awf.generators.base import Answer, AnswerGenerator
from verirag.awf.generators.instructrag import InstructRAGGenerator
from verirag.awf.generators.no_context import NoContextGenerator
from verirag.awf.generators.vanilla import VanillaGenerator

__all__ = ["Answer", "AnswerGenerator", "InstructRAGGenerator", "NoContextGenerator", "VanillaGenerator"]
