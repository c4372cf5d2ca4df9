"""The conformal trust filter (Geissler et al., section 3.2): the quantile, the chunk labels, the
coverage guarantee on exchangeable scores, m1 / m2, the diagnostic, JSON, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from verirag.errors import InputError, NotFittedError
from verirag.learned.trust_filter import ConformalTrustFilter, chunk_ground_truth, wrong_source_threshold


def test_hand_computed_example():
    # raw scores of 3 questions x 3 chunks; min 2, max 12 -> normalised (s - 2) / 10
    scores = [[12.0, 7.0, 2.0], [10.0, 9.0, 4.0], [11.0, 6.0, 3.0]]
    correct = [[True, False, False], [True, True, False], [False, True, False]]
    f = ConformalTrustFilter(alpha=0.25).fit(scores, correct)
    assert (f.n1_, f.n2_) == (2.0, 12.0)
    # correct normalised scores: 1.0, 0.8, 0.7, 0.4 -> 1 - s = 0.0, 0.2, 0.3, 0.6; n = 4
    # rank = ceil((4 + 1) * 0.75) = 4 -> the 4th smallest = 0.6 -> trusted iff s >= 0.4
    assert f.n_correct_ == 4 and f.q_hat_ == pytest.approx(0.6) and f.threshold_ == pytest.approx(0.4)
    assert f.trusted([12.0, 6.0, 5.9]).tolist() == [True, True, False]
    cov = f.coverage(scores)
    # trusted iff raw >= 6 (the correct chunk at the quantile is kept): 2, 2, 2 of 3 -> m1 = 1, m2 = 2/3
    assert cov.m1 == 1.0 and cov.m2 == pytest.approx(2 / 3) and cov.n_questions == 3
    # alpha so small that rank > n: nothing can be excluded, every chunk is trusted
    g = ConformalTrustFilter(alpha=0.1).fit(scores, correct)  # rank = ceil(5 * 0.9) = 5 > 4
    assert math.isinf(g.q_hat_) and g.trusted([-100.0]).tolist() == [True]


def test_chunk_labels_follow_the_paper():
    rouge = [np.array([0.9, 0.2, 0.5]), np.array([0.1, 0.6])]
    right = [np.array([True, True, False]), np.array([False, True])]
    # wrong-source ROUGE-L: 0.5, 0.1 -> the 0.5-quantile is 0.3
    assert wrong_source_threshold(rouge, right, 0.5) == pytest.approx(0.3)
    labels, s_thres = chunk_ground_truth(rouge, right, 0.5)
    assert s_thres == pytest.approx(0.3)
    assert [lab.tolist() for lab in labels] == [[True, False, False], [False, True]]
    labels, s_thres = chunk_ground_truth(rouge, right, 0.0)  # by source only
    assert s_thres == -math.inf and [lab.tolist() for lab in labels] == [[True, True, False], [False, True]]


def test_coverage_on_exchangeable_scores_is_exactly_the_conformal_rank():
    """With n exchangeable correct scores, a fresh correct chunk is trusted with probability
    rank / (n + 1), rank = ceil((n + 1)(1 - alpha)); here 18/20 = 0.90. An off-by-one quantile
    gives 0.85 or 0.95, far outside the Monte-Carlo error (~0.002)."""
    rng = np.random.default_rng(0)
    n, alpha, trials = 19, 0.1, 40_000
    hits = 0
    for _ in range(trials):
        cal = rng.normal(size=n)
        # the min-max normalisation needs the extremes: anchor them with two wrong chunks
        scores = [np.concatenate([cal, [-10.0, 10.0]])]
        correct = [np.concatenate([np.ones(n, bool), [False, False]])]
        f = ConformalTrustFilter(alpha=alpha).fit(scores, correct)
        hits += bool(f.trusted([rng.normal()])[0])
    assert hits / trials == pytest.approx(18 / 20, abs=0.008)


def test_held_out_coverage_lies_within_its_binomial_interval():
    rng = np.random.default_rng(1)

    def questions(m):
        s, y = [], []
        for _ in range(m):
            good = rng.normal(2.0, 1.0, size=1)
            bad = rng.normal(0.0, 1.0, size=9)
            s.append(np.concatenate([good, bad]))
            y.append(np.array([True] + [False] * 9))
        return s, y

    cal_s, cal_y = questions(500)
    test_s, test_y = questions(2000)
    f = ConformalTrustFilter(alpha=0.1).fit(cal_s, cal_y)
    covered = np.mean([f.trusted(s)[y].all() for s, y in zip(test_s, test_y)])
    se = math.sqrt(0.9 * 0.1 / 2000)
    assert abs(covered - 0.9) < 3 * se + 1 / 501


def test_diagnose_flags_a_retriever_that_keeps_nothing_too_often():
    f = ConformalTrustFilter(alpha=0.1)
    # half the questions have no correct chunk and low scores: m1 falls far below 0.9
    scores = [[5.0, 1.0]] * 50 + [[0.1, 0.0]] * 50
    correct = [[True, False]] * 50 + [[False, False]] * 50
    f.fit(scores, correct)
    assert f.calibration_.m1 < 0.6
    assert "falls short" in f.diagnose()
    ok = ConformalTrustFilter(alpha=0.1).fit([[5.0, 1.0]] * 50, [[True, False]] * 50)
    assert ok.diagnose() is None


def test_json_round_trip_and_mismatch_rule(tmp_path):
    f = ConformalTrustFilter(alpha=0.2, beta=0.5, fingerprints={"retriever": "bm25", "corpus": "abc123"}).fit(
        [[3.0, 1.0, 0.0], [2.0, 2.5, 0.5]], [[True, False, False], [False, True, False]]
    )
    path = f.save(tmp_path / "trust.json")
    saved = json.loads(path.read_text())
    assert saved["format"] == "verirag.learned.trust_filter/2" and saved["fingerprints"]["retriever"] == "bm25"
    g = ConformalTrustFilter.load(path, expect={"retriever": "bm25", "corpus": "abc123", "k": 3})
    assert g.state() == f.state() and g.settings() == f.settings() and g.fingerprints == f.fingerprints
    assert g.trusted([3.0, 0.2]).tolist() == f.trusted([3.0, 0.2]).tolist()
    with pytest.raises(InputError, match="retriever 'bm25', not 'dense'.*verirag calibrate-retrieval"):
        ConformalTrustFilter.load(path, expect={"retriever": "dense"})  # its scores mean something else
    with pytest.warns(UserWarning, match="corpus"):
        ConformalTrustFilter.load(path, expect={"corpus": "other"})  # the guarantee weakens
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(InputError, match="not a trust filter"):
        ConformalTrustFilter.load(tmp_path / "bad.json")
    (tmp_path / "cut.json").write_text(path.read_text()[:40])
    with pytest.raises(InputError, match="not a trust filter file"):
        ConformalTrustFilter.load(tmp_path / "cut.json")


def test_a_first_format_file_still_loads(tmp_path):
    old = {
        "format": "verirag.conformal_trust_filter/1",
        "alpha": 0.2,
        "beta": 0.0,
        "retriever": "bm25",
        "corpus": "abc",
        "k": 3,
        "n1": 0.0,
        "n2": 3.0,
        "q_hat": 0.5,
        "n_correct": 2,
        "n_questions": 2,
        "calibration": {"m1": 1.0, "m1_se": 0.0, "m2": 0.5, "m2_se": 0.1, "n_questions": 2},
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    f = ConformalTrustFilter.load(tmp_path / "old.json", expect={"retriever": "bm25", "k": 3})
    assert f.threshold_ == 0.5 and f.k_ == 3 and f.calibration_.m2 == 0.5 and f.fingerprints["corpus"] == "abc"
    assert f.trusted([3.0, 1.0]).tolist() == [True, False]


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha):
    with pytest.raises(InputError, match="alpha"):
        ConformalTrustFilter(alpha=alpha)


def test_bad_calibration_data_is_refused_with_a_reason():
    with pytest.raises(InputError, match="no correct chunk"):
        ConformalTrustFilter().fit([[1.0, 2.0]], [[False, False]])
    with pytest.raises(InputError, match="scores but"):
        ConformalTrustFilter().fit([[1.0, 2.0]], [[True]])
    with pytest.raises(InputError, match="not finite"):
        ConformalTrustFilter().fit([[1.0, float("nan")]], [[True, False]])
    with pytest.raises(InputError, match="no calibration questions"):
        ConformalTrustFilter().fit([], [])
    with pytest.raises(InputError, match="wrong source"):
        wrong_source_threshold([np.array([0.5])], [np.array([True])], 0.9)
    with pytest.raises(NotFittedError, match="ConformalTrustFilter is not fitted"):
        ConformalTrustFilter().trusted([1.0])


def test_label_chunks_from_text_uses_rouge_l_and_the_source():
    from verirag.learned.trust_filter import label_chunks
    from verirag.metrics.qa import rouge_l

    chunks = [
        [
            ("The bridge in Varnholt is painted green.", "Varnholt"),
            ("Green hills.", "Hills"),
            ("Rain in the valley.", "Varnholt"),
        ],
        [("Three mills stand by the river.", "Mills"), ("The market opens on Saturday.", "Market")],
    ]
    refs = ["the bridge is painted green", "three mills"]
    labels, s_thres = label_chunks(chunks, refs, [["Varnholt"], ["Mills"]], beta=0.5)
    wrong = [rouge_l("Green hills.", refs[0]), rouge_l("The market opens on Saturday.", refs[1])]
    assert s_thres == pytest.approx(float(np.quantile(wrong, 0.5)))
    assert [lab.tolist() for lab in labels] == [[True, False, False], [True, False]]
    with pytest.raises(InputError):
        label_chunks(chunks, refs[:1], [["Varnholt"]], beta=0.5)
