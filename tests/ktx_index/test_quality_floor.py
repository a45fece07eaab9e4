"""A ranking regression fails the build: the demo's judged questions, real model, floors = measured − 0.03.

The floors are the figures measured on this repository (docs/benchmarks.md, "Quality floor"), minus 0.03;
raise them when the ranking gets better, never lower them to make a change pass.
"""

import statistics
import sys

import pytest
from projects import REPO

from ktx_index.evaluation.judged import load_judged
from ktx_index.evaluation.metrics import evaluate, evaluate_index

sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
from naive import cosine_runner

JUDGED = REPO / "tests" / "benchmarks" / "judged" / "demo.yaml"
#: (tool, group by, group name) → the lowest acceptable nDCG@10 (or share of no-answer questions answered by nothing)
#: measured 2026-12-02 (fine-tuned model, namesakes): discover 0.789, paraphrase 0.781, no-answer 0.750, wiki 0.964,
#: dictionary 1.000
FLOORS = {
    ("discover_data", "all", "all"): 0.759,
    ("discover_data", "type", "paraphrase"): 0.751,
    ("discover_data", "type", "no_answer"): 0.72,
    ("wiki_search", "all", "all"): 0.934,
    ("dictionary_search", "all", "all"): 0.97,
}


@pytest.mark.model
def test_judged_demo_questions_stay_above_their_floors(real_demo_service):
    report = evaluate_index(real_demo_service, load_judged(JUDGED).queries)
    assert report.unknown_ids == {}, "a judged id names nothing in the demo project"
    below = []
    for (tool, by, name), floor in FLOORS.items():
        group = report.group(tool, by, name)
        assert group is not None, f"no judged {tool} questions of {by} {name}"
        if group.ndcg < floor:
            below.append(f"{tool} {by}={name}: nDCG@10 {group.ndcg:.3f} < floor {floor:.3f}")
    assert not below, "ranking regression on the demo's judged questions:\n" + "\n".join(below)


#: nDCG@10 the ranking must add over a plain cosine of the same model over the same texts, on the demo's answerable
#: discover questions: measured 2026-12-02 +0.216 with the retrained model (0.778 against 0.562), minus 0.03.
GAIN_OVER_COSINE = 0.196


@pytest.mark.model
def test_the_ranking_beats_a_plain_cosine_of_its_own_model(real_demo_service):
    questions = [q for q in load_judged(JUDGED).queries if q.tool == "discover_data" and q.relevant]
    ours = evaluate_index(real_demo_service, questions).queries
    cosine = evaluate(questions, cosine_runner(real_demo_service)).queries
    gain = statistics.mean(o.ndcg for o in ours) - statistics.mean(c.ndcg for c in cosine)
    assert gain >= GAIN_OVER_COSINE, (
        f"the ranking adds {gain:+.3f} nDCG@10 over plain cosine (floor {GAIN_OVER_COSINE})"
    )
    assert all(o.returned for o in ours), "an answerable question came back empty"


@pytest.mark.model
def test_nonsense_gets_nothing_and_a_question_in_other_words_gets_an_answer(real_demo_service):
    assert real_demo_service.discover_data("zxqv blorp frobnicate").refs == []
    assert real_demo_service.wiki_search("kubernetes pod autoscaling").results == []
    # none of these words is the schema's, yet the project holds the answer: refs, perhaps flagged low
    assert real_demo_service.discover_data("patrons who stopped buying from us").refs
