"""Pure ranking signals: concept coverage, answerability and confidence."""

from indexers.models import Document, make_uid
from ktx_index.index.lexical import LexicalIndex
from ktx_index.search import scoring
from ktx_index.search.candidate import Candidate
from ktx_index.search.signals import (
    Verdict,
    answer_order,
    assess,
    concept_coverage,
    vocabulary,
)


def test_concept_coverage_weighs_known_terms_by_idf_and_ignores_data():
    known = {"member": 3, "pay": 5, "due": 2}
    df = lambda t: known.get(t, 0) > 0  # noqa: E731
    idf = lambda t: 1.0  # noqa: E731
    assert concept_coverage(df, idf, "when did members pay their dues") == 1.0
    # a name is data: its absence from the vocabulary does not make the question unanswerable
    assert concept_coverage(df, idf, "when did Angela Sanders pay their dues") == 1.0
    assert concept_coverage(df, idf, "payroll and overtime of members") == 1 / 3
    assert concept_coverage(df, idf, '"Angela Sanders" 2019') == 1.0  # data alone: nothing to judge by
    # an acronym looks like data, but one the project holds is a concept it knows
    known["rvt"] = 1
    assert concept_coverage(df, idf, "What does RVT cover") == 1 / 2
    assert concept_coverage(df, idf, "do members really pay anything") == 1.0  # vague words are no concepts


def _cand(uid: str, score: float, lexical: float = 0.0, cosine: float | None = None, exact: bool = False) -> Candidate:
    return Candidate(uid, lexical=lexical, cosine=cosine, exact=exact, score=score)


def test_confidence_is_none_only_when_words_and_meaning_both_say_no():
    noise = 0.25
    weak = [_cand("a", 0.15, lexical=0.1, cosine=noise - 0.01)]
    assert assess(None, "quarterly", weak, "discover_data", lambda: noise).level == "none"  # type: ignore[arg-type]
    assert assess(None, "quarterly", [], "discover_data", lambda: noise).level == "none"  # type: ignore[arg-type]
    # meaning clears the project's noise level: the nearest matches come back, flagged
    meant = [_cand("a", 0.2, lexical=0.0, cosine=noise + 0.01)]
    assert assess(None, "quarterly", meant, "discover_data", lambda: noise).level == "low"  # type: ignore[arg-type]
    # the words match beyond chance, whatever the cosine
    worded = [_cand("a", 0.2, lexical=scoring.PARAMS.chance_lexical + 0.1, cosine=noise)]
    assert assess(None, "quarterly", worded, "discover_data", lambda: noise).level == "low"  # type: ignore[arg-type]
    # without vectors, the words alone decide
    assert assess(None, "quarterly", [_cand("a", 0.1, lexical=0.1)], "discover_data", lambda: None).level == "none"  # type: ignore[arg-type]


def test_confidence_is_high_for_an_identifier_or_a_confident_score():
    assert assess(None, "quarterly", [_cand("a", 0.2, exact=True)], "discover_data", 0.9).level == "high"  # type: ignore[arg-type]
    confident = scoring.PARAMS.answerable["discover_data"][2]
    strong = [_cand("a", confident + 0.01, lexical=0.9, cosine=0.7)]
    assert assess(None, "quarterly", strong, "discover_data", lambda: 0.25).level == "high"  # type: ignore[arg-type]


def test_a_question_of_filler_alone_is_never_answered_confidently():
    strong = [_cand("a", 0.9, lexical=0.9, cosine=0.7)]
    assert assess(None, "the of and", strong, "discover_data", lambda: 0.25).level == "low"  # type: ignore[arg-type]
    assert assess(None, "AND OR NOT", strong, "wiki_search", lambda: 0.25).level == "low"  # type: ignore[arg-type]


def test_an_answer_keeps_every_scored_candidate_then_the_nearest_of_the_rest():
    ranked = [_cand("a", 0.15, cosine=0.2), _cand("b", 0.01, cosine=0.1), _cand("c", 0.0, cosine=0.05)]
    ranked += [_cand("d", 0.0, cosine=0.12), _cand("parent", 0.0)]  # a container never lifted has no cosine
    assert [c.uid for c in answer_order(ranked)] == ["a", "b", "d", "c"]
    assert answer_order([]) == []


def test_whether_the_answers_carry_every_word_turns_discover_answers():
    below, above = scoring.PARAMS.carried["discover_data"]
    confident = scoring.PARAMS.answerable["discover_data"][2]
    strong = [_cand("a", confident + 0.01, lexical=0.9, cosine=0.7)]
    weak = [_cand("a", 0.2, lexical=0.5, cosine=0.5)]
    asked: list[float | None] = []

    def level(question: str, ranked: list[Candidate], drop: float | None, tool: str = "discover_data") -> str:
        def least_carried() -> float | None:
            asked.append(drop)
            return drop

        return assess(None, question, ranked, tool, lambda: 0.25, least_carried=least_carried).level  # type: ignore[arg-type]

    # a confident answer that leaves a word of the question uncarried turns low, and the reverse
    assert level("age of each patient", strong, below - 0.01) == "low"
    assert level("age of each patient", strong, below) == "high"
    assert level("ward of each patient", weak, above) == "high"
    assert level("ward of each patient", weak, above - 0.01) == "low"
    assert level("ward of each patient", weak, None) == "low"  # not known: the level stands
    assert len(asked) == 5
    # never asked where it cannot turn the answer: an identifier, nothing found, filler, a tool it does not apply to
    assert level("quarterly", [_cand("a", 0.2, exact=True)], -1.0) == "high"
    assert level("quarterly", [], 1.0) == "none"
    assert level("the of and", strong, 1.0) == "low"
    assert level("age of each patient", strong, -1.0, tool="wiki_search") == "high"
    assert len(asked) == 5


def test_on_a_curated_project_a_middling_answer_is_confident_only_when_its_words_are_carried(tmp_path):
    """A best score between the answer floor and ``curated_floor``, of a question in the project's words (so the
    shared rule is confident), turns low on a project with a hand-written semantic layer unless its words are
    carried."""
    p = scoring.PARAMS
    confident = p.answerable["discover_data"][2]
    lexical = LexicalIndex(tmp_path / "lexical")
    writer = lexical.writer()
    doc = Document(uid=make_uid("table", "w", "patients"), kind="table", id="patients", name="patients",
                   connection_id="w", path="x.json", description="Age of each patient")  # fmt: skip
    lexical.add(writer, doc)
    lexical.set_generation(writer, 1)
    writer.commit()
    lexical.reload()
    middling = [_cand("a", p.curated_floor - 0.01, lexical=0.9, cosine=0.5)]

    def verdict(ranked: list[Candidate], drop: float | None, curated: bool = True) -> Verdict:
        return assess(
            lexical, "age of each patient", ranked, "discover_data", lambda: 0.25, least_carried=lambda: drop,
            curated=curated,
        )  # fmt: skip

    assert verdict(middling, p.curated_carried - 0.01, curated=False).level == "high"  # a scan-only project
    assert verdict(middling, p.curated_carried - 0.01).level == "low"
    assert verdict(middling, None).level == "low"  # nothing measured: not carried
    assert verdict(middling, p.curated_carried).level == "high"
    assert verdict(middling, 1.0).level == "high"  # every word matched by its terms
    assert verdict([_cand("a", max(confident, p.curated_floor), lexical=0.9, cosine=0.7)], 0.0).level == "high"
    assert verdict(middling, 0.0).reason.endswith(
        f"on a project with a hand-written semantic layer a best score under {p.curated_floor} needs its words "
        f"carried (a drop of {p.curated_carried:+.2f} at least), so low"
    )


def test_the_verdict_says_which_evidence_decided_it_with_its_figures():
    noise = 0.25
    floor, coverage, confident = scoring.PARAMS.answerable["discover_data"]
    below, above = scoring.PARAMS.carried["discover_data"]

    def why(question: str, ranked: list[Candidate], drop: float | None = None, vectors: bool = True) -> str:
        verdict = assess(  # type: ignore[arg-type]
            None, question, ranked, "discover_data", lambda: noise if vectors else None, least_carried=lambda: drop
        )
        return f"{verdict.level}: {verdict.reason}"

    weak = [_cand("a", 0.15, lexical=0.1, cosine=0.2)]
    assert (
        why("quarterly", weak)
        == "none: no document matches its words beyond chance (0.10 < 0.2); its best cosine (0.200) is below the noise level 0.250"
    )
    assert why("quarterly", weak, vectors=False).endswith("and there are no vectors to match its meaning")
    meant = [_cand("a", floor - 0.01, lexical=0.1, cosine=0.3)]  # meaning clears the noise level, the score does not
    assert (
        why("quarterly", meant)
        == f"low: its best cosine 0.300 clears the noise level 0.250; best score {floor - 0.01:.3f} < the answer floor {floor}"
    )
    for filler in ("the of and", "' OR 1=1 --", "é́́ é́́"):  # filler, or single characters: matched by chance
        assert (
            why(filler, [_cand("a", 0.9, lexical=0.9, cosine=0.7)])
            == "low: the question holds nothing but filler words or single characters"
        ), filler
    strong = [_cand("a", confident + 0.01, lexical=0.9, cosine=0.7)]
    assert why("age of each patient", strong, below - 0.01) == (
        f"low: best score {confident + 0.01:.3f} >= {confident}, confident alone, but the best answers' cosine drop "
        f"without its least-carried word is {below - 0.01:+.3f} (< {below:+.3f}), so low"
    )
    assert why("age of each patient", strong, 1.0).endswith(
        "confident alone; the best answers match every word of the question"
    )
    middling = [_cand("a", (floor + confident) / 2, lexical=0.9, cosine=0.5)]  # coverage decides: no lexicon, 0 %
    lexicon = _Lexicon()
    verdict = assess(
        lexicon, "age of each patient", middling, "discover_data", lambda: noise, least_carried=lambda: above
    )  # type: ignore[arg-type]
    assert (
        verdict.level == "high"
        and f"0% of the question's concepts are in the project's vocabulary (< {coverage:.0%})" in verdict.reason
    )
    assert verdict.reason.endswith(f"(>= {above:+.3f}), so high")
    assert why("quarterly", [_cand("t:a", 0.2, exact=True)]) == "high: the question names t:a exactly"


class _Lexicon:
    """A lexical index that knows no term (concept coverage 0)."""

    def idf(self, term: str) -> float:
        return 1.0

    def doc_freq(self, term: str) -> int:
        return 0

    def holds(self, term: str) -> bool:
        return self.doc_freq(term) > 0

    def vocabulary(self, prefix: str, fields: object, per_field: int) -> list[str]:
        return []  # nothing to correct a term to


class _Weeks(_Lexicon):
    """A lexical index that holds one term, ``week``."""

    def doc_freq(self, term: str) -> int:
        return int(term == "week")

    def vocabulary(self, prefix: str, fields: object, per_field: int) -> dict[str, int]:  # type: ignore[override]
        return {"week": 1}


def test_an_unbridged_question_keeps_its_english_words_out_of_the_vocabulary():
    lexicon = _Weeks()
    assert vocabulary(lexicon)("weak")  # type: ignore[arg-type]  # a bridged search corrects it to week
    assert not vocabulary(lexicon, "weak links")("weak")  # type: ignore[arg-type]  # another word, not a typo
    assert vocabulary(lexicon, "weeek report")("weeek")  # type: ignore[arg-type]  # a typo is still one


def test_the_vocabulary_rule_corrects_english_words_only_where_the_lane_bridges():
    """``bridging`` comes from the search's kinds (lexical_lane.bridges), not the tool: a wiki-only search leaves
    *weak* unknown in its vocabulary rule as its lane does, whichever tool asked."""
    floor, _, confident = scoring.PARAMS.answerable["wiki_search"]
    middling = [_cand("a", (floor + confident) / 2, lexical=0.9, cosine=0.5)]

    def covered(bridging: bool) -> str:
        verdict = assess(_Weeks(), "weak", middling, "wiki_search", lambda: 0.25, bridging=bridging)  # type: ignore[arg-type]
        return verdict.reason.split(" and ")[1].split("%")[0]

    assert (covered(True), covered(False)) == ("100", "0")
