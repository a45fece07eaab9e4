"""A question analysed once (search/query.py): its terms, the words that are data, the table names its
phrases could be, the values it names, and the whole question as an identifier."""

from ktx_index.analysis import stem
from ktx_index.search.query import MAX_QUESTION_CHARS, Query, named_keys, question_words, value_like


def test_data_words_are_not_concepts():
    assert value_like("When did Angela Sanders pay her dues in 2019?") == {"angela", "sander", "2019"}
    assert value_like('cards of the "duel deck" type') == {"duel", "deck"}
    assert value_like("When did members pay their dues") == set()


def test_named_keys_are_a_questions_phrases_singular_and_plural():
    keys = named_keys("How many gas stations are in the Czech Republic?")
    assert {"gasstations", "gasstation", "gas", "czechrepublic"} <= keys
    assert not keys & {"how", "many", "howmany", "the"}  # phrases do not start or end on filler
    assert {"category", "categories"} <= named_keys("sales by categories")


def test_parse_reads_every_part_once_and_of_keeps_a_parsed_query():
    query = Query.parse('How many refunds did "Acme Foods" get in 2024 per depot_id?')
    assert query.terms == ("refund", "acm", "food", "2024", "depot", "id", "depot_id")  # filler dropped, order kept
    assert query.data_words == {"acm", "food", "2024"}  # quoted and numbers: data, not missing vocabulary
    assert {"refund", "refunds", "acmefoods", "depotid"} <= query.named
    assert [(v.shape, v.text) for v in query.values] == [("name", "acme foods")]
    assert query.identifier == "howmanyrefundsdidacmefoodsgetin2024perdepotid"
    assert [w.word for w in query.words] == ["refunds", "Acme", "Foods", "depot_id"]  # no number, each once
    assert query.words[-1].terms == ("depot", "id", "depot_id")  # what the carried check asks answers to match
    assert Query.of(query) is query and Query.of(query.text) == query


def test_the_identifier_is_the_same_however_a_name_is_written():
    spellings = ["courier_weekly_scorecard", "Courier Weekly Scorecard", "courierWeeklyScorecard"]
    assert {Query.parse(s).identifier for s in spellings} == {"courierweeklyscorecard"}


def test_a_question_grouped_by_time_says_so():
    assert Query.parse("food and beverage revenue by month").by_time
    assert Query.parse("monthly recurring revenue per plan").by_time
    assert Query.parse("cleanliness rating trend over time").by_time
    assert not Query.parse("revenue per hotel").by_time and not Query.parse("a day in the life").by_time


def test_question_words_map_terms_back_to_the_words_they_came_from():
    assert question_words("Which movies did performers appear in?") == {
        stem("movies"): "movies",
        stem("performers"): "performers",
        stem("appear"): "appear",
    }


def test_vague_words_stay_terms_but_are_no_words_to_carry():
    q = Query.parse("can someone really cancel a booking")
    assert {"someon", "realli"} <= set(q.terms) and q.vague == {"someon", "realli"}
    assert [w.word for w in q.words] == ["cancel", "booking"]


def test_a_question_is_read_up_to_its_first_two_thousand_characters():
    """A 100k-character question took 3 s, one lexical search per distinct word; the model reads 256 tokens."""
    long = " ".join(f"w{n}" for n in range(15_000))
    q = Query.parse(long)
    assert q.text == long[:MAX_QUESTION_CHARS] and len(q.terms) < 1_000  # of 45,000 (w12, 12 and w12 each)
