"""Issue 47's made-up checks: facts invented here, so no training set and no pretrained model holds
them, judged as a RAG user would pass them (`verirag.Verifier`, with the conversation's `history`).

- follow-up (6): the question names an entity of the conversation by a pronoun ("When was she
  born?"); one passage says it of that entity, a second passage says the same kind of thing of
  another entity. The right answer takes the conversation's entity's value, the wrong one the
  other's; both are stated with the pronoun, so only the history tells them apart. Goal: at least
  5 of 6 right above wrong.
- bridge (6): a two-passage question ("When was the founder of X born?"): one passage names the
  bridge entity, the other holds the answer about it. Right above wrong (the other passage's value,
  a year or place the passages do not give for the bridge), and the full passages above the same
  right answer with the bridge passage replaced by a passage about someone else.

A pair counts when the right side scores strictly above the wrong one (a tie counts against).

    python benchmarks/verifier_made_up.py                                   # the verify default
    python benchmarks/verifier_made_up.py --method vanilla+nli --model qwen2.5-1.5b
    python benchmarks/verifier_made_up.py --method "vanilla+verifier(verifier=runs/verifiers/X)" --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FOLLOW_UPS = [
    {
        "history": ["User: Who founded the Tarrow Glass Works?", "Agent: It was founded by Inessa Morvaine."],
        "question": "When was she born?",
        "passages": [
            "Inessa Morvaine, the glassmaker who founded the Tarrow Glass Works, was born in 1841 in Lisk.",
            "Dorrit Kalve, a rival glassmaker from the same valley, was born in 1856 in Amberhythe.",
        ],
        "right": "She was born in 1841.",
        "wrong": "She was born in 1856.",
    },
    {
        "history": ["User: Who wrote the novel The Salt Orchard?", "Agent: Pell Varengo wrote it."],
        "question": "Where did he grow up?",
        "passages": [
            "Pell Varengo grew up in the fishing town of Corrabay before moving to the capital.",
            "Osk Tirrane, who illustrated The Salt Orchard, grew up in the hill village of Dunmere.",
        ],
        "right": "He grew up in Corrabay.",
        "wrong": "He grew up in Dunmere.",
    },
    {
        "history": [
            "User: Which company makes the Quorra drill?",
            "Agent: The Quorra drill is made by Helmfast Tools.",
        ],
        "question": "How many people does it employ?",
        "passages": [
            "Helmfast Tools employs about 2,300 people at its two plants.",
            "Brinmoor Fixings, which supplies Helmfast with bolts, employs about 640 people.",
        ],
        "right": "It employs about 2,300 people.",
        "wrong": "It employs about 640 people.",
    },
    {
        "history": [
            "User: Who captained the ship Elska Marigold?",
            "Agent: Captain Joran Hesk commanded the Elska Marigold.",
        ],
        "question": "What did he do after retiring?",
        "passages": [
            "After retiring from the sea, Joran Hesk opened a bookbinding shop in Vellport.",
            "His first mate, Tamsin Ordway, retired to breed horses on the island of Cray.",
        ],
        "right": "He opened a bookbinding shop in Vellport.",
        "wrong": "He bred horses on the island of Cray.",
    },
    {
        "history": [
            "User: What is the tallest peak of the Sorrel range?",
            "Agent: Mount Avenholt is the tallest peak of the Sorrel range.",
        ],
        "question": "How high is it?",
        "passages": [
            "Mount Avenholt rises to 3,412 metres, the highest point of the Sorrel range.",
            "Mount Pellagh, its neighbour to the south, rises to 2,987 metres.",
        ],
        "right": "It is 3,412 metres high.",
        "wrong": "It is 2,987 metres high.",
    },
    {
        "history": [
            "User: Who composed the opera The Lantern Wife?",
            "Agent: The Lantern Wife was composed by Maelis Ortrand.",
        ],
        "question": "Which instrument did she first study?",
        "passages": [
            "Maelis Ortrand first studied the cello before she turned to composition.",
            "The librettist of The Lantern Wife, Corwen Ashby, first studied the oboe.",
        ],
        "right": "She first studied the cello.",
        "wrong": "She first studied the oboe.",
    },
]

BRIDGES = [
    {
        "question": "In which year was the founder of Veltrane Labs born?",
        "passages": [
            "Veltrane Labs, a maker of marine sensors, was founded by Ostara Quill in 1987.",
            "Ostara Quill was born in 1952 in the port of Marrowick and studied physics.",
        ],
        "decoy": "Benedek Sarro was born in 1952 in the port of Marrowick and studied physics.",
        "right": "The founder of Veltrane Labs, Ostara Quill, was born in 1952.",
        "wrong": "The founder of Veltrane Labs, Ostara Quill, was born in 1987.",
    },
    {
        "question": "What river flows through the birthplace of the painter of The Copper Heron?",
        "passages": [
            "The Copper Heron was painted by Illa Brennagh, who was born in the town of Stavely.",
            "Stavely is a market town on the banks of the river Orrin.",
        ],
        "decoy": "Kettering Cross is a market town on the banks of the river Orrin.",
        "right": "The river Orrin flows through Stavely, where the painter Illa Brennagh was born.",
        "wrong": "The river Tamble flows through Stavely, where the painter Illa Brennagh was born.",
    },
    {
        "question": "Which university did the director of the film Nightjar Harbour attend?",
        "passages": [
            "Nightjar Harbour is a 1998 drama directed by Rufo Danescu.",
            "Rufo Danescu attended the University of Kelmore, where he studied architecture.",
        ],
        "decoy": "Agathe Lindqvist attended the University of Kelmore, where she studied architecture.",
        "right": "Its director, Rufo Danescu, attended the University of Kelmore.",
        "wrong": "Its director, Rufo Danescu, attended the University of Pelham.",
    },
    {
        "question": "How many members does the party led by the mayor of Grisholm have?",
        "passages": [
            "The mayor of Grisholm, Edda Varnum, leads the Lantern Party.",
            "The Lantern Party has about 14,000 members, most of them in the northern provinces.",
        ],
        "decoy": "The Harrow League has about 14,000 members, most of them in the northern provinces.",
        "right": "The Lantern Party, led by mayor Edda Varnum, has about 14,000 members.",
        "wrong": "The Lantern Party, led by mayor Edda Varnum, has about 41,000 members.",
    },
    {
        "question": "In which country is the headquarters of the company that makes the Sable phone?",
        "passages": [
            "The Sable phone is made by Orvik Mobile, a company founded by two engineers.",
            "Orvik Mobile has its headquarters in Tallinn, Estonia.",
        ],
        "decoy": "Quell Telecom has its headquarters in Tallinn, Estonia.",
        "right": "Orvik Mobile, which makes the Sable phone, has its headquarters in Estonia.",
        "wrong": "Orvik Mobile, which makes the Sable phone, has its headquarters in Latvia.",
    },
    {
        "question": "What was the first job of the author of The Winter Ledger?",
        "passages": [
            "The Winter Ledger is a memoir by Caspian Thorle, published in 2004.",
            "Before he wrote books, Caspian Thorle worked as a lighthouse keeper on the coast of Fenmark.",
        ],
        "decoy": "Before he wrote books, Arlo Menzies worked as a lighthouse keeper on the coast of Fenmark.",
        "right": "Caspian Thorle, the author of The Winter Ledger, first worked as a lighthouse keeper.",
        "wrong": "Caspian Thorle, the author of The Winter Ledger, first worked as a ferry pilot.",
    },
]


def pairs() -> list[dict]:
    """Every comparison: kind, name, and the right and wrong (question, answer, contexts, history)."""
    out = []
    for i, f in enumerate(FOLLOW_UPS):
        base = {"question": f["question"], "contexts": f["passages"], "history": f["history"]}
        out.append(
            {
                "kind": "follow-up",
                "name": f"follow-up {i + 1}",
                "right": {**base, "answer": f["right"]},
                "wrong": {**base, "answer": f["wrong"]},
            }
        )
    for i, b in enumerate(BRIDGES):
        base = {"question": b["question"], "contexts": b["passages"]}
        out.append(
            {
                "kind": "bridge: right above wrong",
                "name": f"bridge {i + 1}",
                "right": {**base, "answer": b["right"]},
                "wrong": {**base, "answer": b["wrong"]},
            }
        )
        out.append(
            {
                "kind": "bridge: above the bridge removed",
                "name": f"bridge {i + 1}",
                "right": {**base, "answer": b["right"]},
                "wrong": {"question": b["question"], "contexts": [b["passages"][0], b["decoy"]], "answer": b["right"]},
            }
        )
    return out


def run(method: str | None = None, model: str | None = None) -> tuple[str, list[dict]]:
    """The judge's scores of every pair (right above wrong when strictly higher)."""
    from verirag import Verifier

    verifier = Verifier(method, model=model)
    ps = pairs()
    rows = [side for p in ps for side in (p["right"], p["wrong"])]
    results = verifier.verify_many(rows)
    scored = []
    for p, right, wrong in zip(ps, results[0::2], results[1::2]):
        r, w = right.score, wrong.score
        scored.append(
            {
                "kind": p["kind"],
                "name": p["name"],
                "right": r,
                "wrong": w,
                "above": r is not None and w is not None and r > w,
            }
        )
    return verifier.method, scored


def summary(scored: list[dict]) -> dict[str, tuple[int, int]]:
    """Per kind: (right above wrong, pairs)."""
    out: dict[str, tuple[int, int]] = {}
    for s in scored:
        k, n = out.get(s["kind"], (0, 0))
        out[s["kind"]] = (k + int(s["above"]), n + 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default=None, help="the judge (default: verirag's verify default)")
    ap.add_argument("--model", default=None, help="the LLM of a judge that uses one")
    ap.add_argument("--json", type=Path, default=None, help="also write every pair's scores here")
    a = ap.parse_args(argv)
    method, scored = run(a.method, a.model)
    print(f"{method}: right above wrong")
    for s in scored:
        print(
            f"  {s['kind']:34s} {s['name']:12s} {s['right']:.3f} vs {s['wrong']:.3f} {'' if s['above'] else ' <- not above'}"
        )
    for kind, (k, n) in summary(scored).items():
        print(f"{kind}: {k}/{n}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"method": method, "pairs": scored}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
