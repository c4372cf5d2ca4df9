"""benchmarks/verifier_heldout_labels.py: the variant a table row is named by, from a record id; the pairs
of one question group it counts right above wrong."""

from __future__ import annotations

from benchmark_module import load_benchmark


def test_the_variant_of_a_record_id():
    kind_of = load_benchmark("verifier_heldout_labels").kind_of
    assert kind_of("paraphrase/nq/51/qwen2.5-1.5b.paraphrase-swapped/s0") == "paraphrase-swapped"
    assert kind_of("real/nq/1284/qwen2.5-1.5b.gold.long.t0/s0") == "gold"
    assert kind_of("multihop/hotpotqa/5a8d/both_mixed/s0") == "both_mixed"
    assert kind_of("doc_claims/docs/manpages-dev:usr/share/man/man2/fork.2.gz#5/sentence/s0") == "sentence"
    assert kind_of("odd") == "?"


def test_right_above_wrong_pairs_answers_to_the_same_question_and_passages():
    import numpy as np

    from verirag_lab.train.verifier_examples import VerifierExample

    right_above_wrong = load_benchmark("verifier_heldout_labels").right_above_wrong

    def ex(q, a, label, passages=("p",), recipe="choice", group=None):
        return VerifierExample(q, a, passages, label, recipe, group=group or f"nq:{q}")

    examples = [
        ex("q1", "a", 1),
        ex("q1", "b", 0),
        ex("q2", "a", 1),
        ex("q2", "b", 0),
        ex("q3", "a", 1),
        ex("q3", "b", 0, passages=("other",)),  # other passages: no pair
        ex("q4", "a", 0, recipe="swap"),  # one label only: no pair
        # the subject recipe: one answer to its question and to the question asked of another entity
        ex("Who founded Varnholt?", "Ida", 1, recipe="subject", group="nq:5"),
        ex("Who founded Marnholt?", "Ida", 0, recipe="subject", group="nq:5"),
        ex("Who founded Lund?", "Ida", 0, recipe="subject", group="nq:6"),  # another question's: no pair
    ]
    scores = {"v": np.array([0.9, 0.1, 0.4, 0.4, 0.9, 0.1, 0.5, 0.8, 0.3, 0.9])}
    pairs = right_above_wrong(examples, scores)
    assert pairs == {"choice": {"v": (1, 2)}, "subject": {"v": (1, 1)}}  # the tie counts against


def test_an_example_the_verifier_cannot_read_is_named_not_fatal():
    from verirag.learned.shipped import shipped_verifier_dir
    from verirag.learned.verifier import TrainedVerifier
    from verirag_lab.train.verifier_examples import VerifierExample

    score = load_benchmark("verifier_heldout_labels").score
    long_question = "Which of these " + " and ".join(f"harbour town number {i}" for i in range(40)) + "?"
    examples = [
        VerifierExample(
            "Who built the Kelby bridge?", "Selma Hart", ("Selma Hart built the Kelby bridge.",), 1, "x", group="g"
        ),
        VerifierExample(long_question, "Selma Hart", ("Selma Hart built it.",), 1, "x", group="g"),
        VerifierExample(
            "Who built the Kelby bridge?", "Ivo Brandt", ("Selma Hart built the Kelby bridge.",), 0, "x", group="g"
        ),
    ]
    scores, _, errors = score(TrainedVerifier.load(shipped_verifier_dir()), examples, batch=8)
    assert list(errors) == [1] and "too long" in errors[1]
    assert scores[0] > scores[2] and scores[1] != scores[1]  # NaN where it could not read
