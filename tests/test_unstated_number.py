"""The `unstated_number` answer rule (issue 47, item 4): an answer that states a number that neither
its passages nor the question state keeps a tenth of its score, whatever judged it."""

from __future__ import annotations

import pytest

from verirag.awf.core import NUMBER_PENALTY
from verirag.awf.numbers import stated_numbers, unstated_numbers

PASSAGE = "Marie Curie was born in Warsaw in 1867. She shared the 1903 Nobel Prize with two other scientists."


def test_numbers_are_read_as_digits_whatever_they_are_written_as():
    assert stated_numbers("He won seven titles and finished third in 1972.") == {"7", "3", "1972"}
    assert stated_numbers("1,200 people came in the 1980s, about 2.5 times as many; room 07") == {
        "1200",
        "1980",
        "2.5",
        "7",
    }
    assert stated_numbers("twenty-one pilots") == {"21"}
    assert stated_numbers("one of the best, the first album") == frozenset()  # a lone "one" and "first" are words
    assert stated_numbers("") == frozenset()
    assert stated_numbers("one of the two best", small_words=True) == {"1", "2"}  # how sources are read


def test_an_answer_may_repeat_what_its_passages_or_its_question_state():
    assert unstated_numbers("She was born in 1867.", [PASSAGE]) == []
    assert unstated_numbers("She shared it with 2 others.", [PASSAGE]) == []  # "two" in the passage
    assert unstated_numbers("She was born in 1866 and won in 1903.", [PASSAGE]) == ["1866"]
    assert unstated_numbers("Yes, in 1911.", ["Did she win again in 1911?", PASSAGE]) == []
    assert unstated_numbers("Warsaw.", [PASSAGE]) == []


@pytest.fixture(scope="module")
def verifier():
    from verirag import Verifier

    return Verifier()


def test_a_changed_year_is_not_supported_and_the_warning_names_it(verifier):
    q = "When was Marie Curie born?"
    right = verifier.verify(q, "Marie Curie was born in 1867.", [PASSAGE])
    wrong = verifier.verify(q, "Marie Curie was born in 1866.", [PASSAGE])
    assert right.faithful and not any("no passage states" in w for w in right.warnings)
    assert not wrong.faithful and wrong.score < right.score
    assert "the answer states 1866, which no passage states" in wrong.warnings
    # the same answer verified in batch takes the same rule (one code path for every door)
    batch = verifier.verify_many([{"question": q, "answer": "Marie Curie was born in 1866.", "contexts": [PASSAGE]}])
    assert batch[0].score == pytest.approx(wrong.score) and batch[0].warnings == wrong.warnings


def test_the_rule_keeps_a_tenth_of_the_score(verifier):
    from verirag.awf.core import AnswerRules, Judgement, PassagesRecord
    from verirag.types import Passage

    class State:  # the two fields the rule reads
        passages = PassagesRecord([Passage(id="p", text=PASSAGE)])
        judgement = Judgement(answer="Born in 1866.", score=0.8, method="m", judge="j")

        def in_context(self):
            return "When was she born?"

    s = State()
    AnswerRules().run(s, print)
    assert s.judgement.score == pytest.approx(0.8 * NUMBER_PENALTY) and s.judgement.raw_score == 0.8
    assert s.judgement.rules == ["unstated_number"]
    hard = State()  # a hard label (0 or 1) stays one: unsupported
    hard.judgement = Judgement(answer="Born in 1866.", score=1.0, method="m", judge="j", hard=True)
    AnswerRules().run(hard, print)
    assert hard.judgement.score == 0.0 and hard.judgement.rules == ["unstated_number"]
    unread = State()  # an answer read from no passage (no_context) is not judged against passages
    unread.passages = PassagesRecord([])
    unread.judgement = Judgement(answer="Born in 1866.", score=1.0, method="no_context", judge="", hard=True)
    AnswerRules().run(unread, print)
    assert unread.judgement.score == 1.0 and unread.judgement.rules == []
