"""Every learned part through the one contract (`verirag.learned.base`): NotFittedError before
fit, fit returning self, save / load giving equal predictions, the mismatch rule (a fingerprint in
`refuse_on` refuses naming the command that refits, one in `warn_on` warns), and a file of the
earlier format still loading."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest
from test_learned_verifier import toy_examples

from verirag.errors import InputError, NotFittedError
from verirag.learned.base import LearnedPart
from verirag.learned.forecaster import Forecaster, ProbeForecaster, load_forecaster
from verirag.learned.lookback_classifier import LookbackClassifier
from verirag.learned.stack import StackedVerifier
from verirag.learned.threshold import ThresholdController
from verirag.learned.trust_filter import ConformalTrustFilter
from verirag.learned.verifier import TrainedVerifier
from verirag.llm.lookback import LookbackRatios


def pairs(n_questions: int = 6):
    """Per question one document that answers it and one that does not (labels 1, 0)."""
    q, d, y, g = [], [], [], []
    for i, thing in enumerate(["car", "house", "bird", "boat", "lamp", "kite", "hat", "ball"][:n_questions]):
        q += [f"what colour is the {thing}?"] * 2
        d += [f"The {thing} is painted red.", f"Bananas grow in warm places ({i})."]
        y += [1, 0]
        g += [thing, thing]
    return q, d, y, g


def ratios(rng, n=16):
    out = []
    for i in range(n):
        cw = rng.random((2, 3, 4)) + 0.6 * (i % 2)
        out.append(LookbackRatios(cw=cw.tolist(), fc=cw.mean(-1).tolist(), n_prompt=50, n_answer=5))
    return out, [i % 2 for i in range(n)]


class Case:
    """How one part is fitted, what it predicts, and its first-format file."""

    def __init__(self, make, fit, predict, old=None, runtime=None):
        self.make, self.fit, self.predict, self.old, self.runtime = make, fit, predict, old, runtime or {}


def threshold_case():
    s = np.linspace(0, 1, 40)
    y = (s > 0.3).astype(int)

    def old(part, path):  # FittedThreshold, before the format tag
        path.write_text(
            json.dumps(
                {
                    "threshold": part.threshold_,
                    "kind": "precision",
                    "target": 0.8,
                    "model": "m",
                    "method": "vanilla+nli",
                    "dataset": "*",
                    "n_fit": 40,
                    "valid": True,
                    "delta": 0.1,
                    "fit_action_rate": 0.3,
                }
            )
        )

    return Case(lambda: ThresholdController(precision=0.8), lambda c: c.fit(s, y), lambda c: c.keep(s), old)


def trust_case():
    rng = np.random.default_rng(0)
    scores = [rng.random(4) * 3 for _ in range(30)]
    correct = [np.arange(4) == int(np.argmax(x)) for x in scores]

    def old(part, path):  # "verirag.conformal_trust_filter/1"
        st = part.state()
        path.write_text(
            json.dumps(
                {
                    "format": "verirag.conformal_trust_filter/1",
                    "alpha": part.alpha,
                    "beta": part.beta,
                    "retriever": part.fingerprints.get("retriever"),
                    "corpus": part.fingerprints.get("corpus"),
                    "k": st["k_"],
                    "n1": st["n1_"],
                    "n2": st["n2_"],
                    "q_hat": st["q_hat_"],
                    "n_correct": st["n_correct_"],
                    "n_questions": st["n_questions_"],
                    "calibration": st["calibration_"],
                }
            )
        )

    return Case(
        lambda: ConformalTrustFilter(alpha=0.2),
        lambda f: f.fit(scores, correct, k=4),
        lambda f: np.concatenate([f.trusted(x) for x in scores]),
        old,
    )


def lookback_case():
    r, labels = ratios(np.random.default_rng(1))

    def old(part, path):  # "verirag-lookback-classifier/1"
        path.write_text(
            json.dumps(
                {
                    "format": "verirag-lookback-classifier/1",
                    "variant": part.variant,
                    "k": part.k,
                    "max_iter": part.max_iter,
                    "C": part.C,
                    "layers": part.layers_,
                    "heads": part.heads_,
                    "n_train": part.n_train_,
                    "positive_rate": part.positive_rate_,
                    "intercept": part.intercept_,
                    "coef": part.coef_.tolist(),
                    "meta": {"model_fingerprint": part.fingerprints.get("model")},
                }
            )
        )

    return Case(lambda: LookbackClassifier("cw", k=4), lambda c: c.fit(r, labels), lambda c: c.predict_proba(r), old)


def forecaster_v1(part, path, extra):
    """Rewrite a saved forecaster's JSON (`path`) in the first format ("verirag-forecaster/1")."""
    d = json.loads(path.read_text())
    settings = {k: v for k, v in d["settings"].items() if k != "encoder"}
    old = {
        "format": "verirag-forecaster/1",
        "kind": part.kind,
        "settings": settings,
        **d["state"],
        "data_fingerprint_": d["fingerprints"]["data"],
        "meta": {},
        **extra(d),
    }
    path.write_text(json.dumps(old))


def forecaster_case():
    q, d, y, g = pairs()
    return Case(
        lambda: Forecaster(epochs=1, val_share=0.34),
        lambda f: f.fit(q, d, y, g),
        lambda f: f.predict_proba(q[:4], d[:4]),
        lambda part, path: forecaster_v1(
            part,
            path,
            lambda j: {
                "encoder": j["settings"]["encoder"],
                "weights_sha256": j["state"]["weights_sha256_"],
                "history_": j["state"]["history_"],
                "best_epoch_": j["state"]["best_epoch_"],
            },
        ),
    )


def verifier_case():  # no earlier format to read
    exs, held = toy_examples(12), toy_examples(4, start=100)
    return Case(
        lambda: TrainedVerifier(epochs=1, val_share=0.34),
        lambda v: v.fit(exs),
        lambda v: v.predict_proba([e.question for e in held], [e.answer for e in held], [e.passages for e in held]),
    )


def probe_case(llm):
    q, d, y, g = pairs(8)
    return Case(
        lambda: ProbeForecaster(llm, val_share=0.25),
        lambda f: f.fit(q, d, y, g),
        lambda f: f.predict_proba(q[:4], d[:4]),
        lambda part, path: forecaster_v1(
            part, path, lambda j: {"encoder": f"llm:{llm.fingerprint}", "llm_model": llm.model_id}
        ),
        runtime={"llm": llm},
    )


def stack_case():  # no earlier format to read
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=40) > 0).astype(int)
    return Case(
        lambda: StackedVerifier(["verifier", "self_check", "logprob_min"], C=0.5),
        lambda s: s.fit(X, y),
        lambda s: s.predict_proba(X),
    )


CASES = [
    "threshold",
    "trust_filter",
    "lookback_classifier",
    "forecaster",
    "verifier",
    "stack",
    pytest.param("forecaster_probe", marks=pytest.mark.slow),
]


@pytest.fixture
def case(request):
    name = request.param
    if name == "forecaster_probe":
        return probe_case(request.getfixturevalue("smollm"))
    return {
        "threshold": threshold_case,
        "trust_filter": trust_case,
        "lookback_classifier": lookback_case,
        "forecaster": forecaster_case,
        "verifier": verifier_case,
        "stack": stack_case,
    }[name]()


@pytest.mark.parametrize("case", CASES, indirect=True)
def test_every_learned_part_keeps_the_contract(case, tmp_path):
    part = case.make()
    assert isinstance(part, LearnedPart) and not part.fitted
    with pytest.raises(NotFittedError, match=f"{type(part).__name__} is not fitted.*`verirag "):
        part.check_fitted()
    with pytest.raises(NotFittedError):
        case.predict(part)
    assert case.fit(part) is part and part.fitted
    part.check_fitted()
    cls = type(part)
    for key in cls.refuse_on + cls.warn_on:  # what it was fitted for, as a trainer records it
        part.fingerprints.setdefault(key, f"{key}-fitted")
    path = tmp_path / ("part" if cls.folder else "part.json")
    assert part.save(path, command="test") == path
    saved = json.loads(cls.json_path(path).read_text())
    assert saved["format"] == f"verirag.learned.{cls.format_name}/2"
    assert saved["provenance"]["command"] == "test" and saved["provenance"]["verirag"]
    assert saved["fingerprints"] == part.fingerprints and "pickle" not in cls.json_path(path).read_text()

    same = {k: part.fingerprints[k] for k in cls.refuse_on + cls.warn_on}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a matching set-up neither refuses nor warns
        back = cls.load(path, expect=same, **case.runtime)
    np.testing.assert_array_equal(case.predict(back), case.predict(part))
    assert back.settings() == part.settings() and back.fingerprints == part.fingerprints

    for key in cls.refuse_on:
        with pytest.raises(InputError, match=f"fitted for {key} .*`{cls.fit_command.split()[0]} "):
            cls.load(path, expect={key: "another"}, **case.runtime)
    for key in cls.warn_on:
        with pytest.warns(UserWarning, match=f"fitted for {key} "):
            cls.load(path, expect={key: "another"}, **case.runtime)

    if case.old is None:
        return
    old = tmp_path / "old"
    if cls.folder:
        shutil.copytree(path, old)
    case.old(part, cls.json_path(old))
    again = cls.load(old, **case.runtime)
    np.testing.assert_allclose(case.predict(again), case.predict(part), rtol=1e-12)
    if isinstance(part, (Forecaster, ProbeForecaster)):  # the dispatcher reads both kinds and both formats
        assert type(load_forecaster(old, llm=case.runtime.get("llm"))) is cls
