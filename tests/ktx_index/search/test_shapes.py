"""Value shapes: a question naming a value leads to a column that could hold it (pure functions, then a real
store with the fake embedder)."""

import dataclasses

from projects import column, profile_entry, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.scoring import PARAMS
from ktx_index.search.shapes import Value, closed_values, column_shape, fit, question_values, value_shape
from ktx_index.service import KtxIndex


def test_value_shapes():
    assert [value_shape(v) for v in ("Joao Pedro", "Widzew Łódź", "TR004_8_9", "VAL", "2012/8/24")] == [
        "name", "name", "code", "code", "date",
    ]  # fmt: skip
    assert [value_shape(v) for v in ("2009-04-11 00:00:00", "16:25:00", "12.5", "right", "")] == [
        "date", "time", "number", None, None,
    ]  # fmt: skip


def test_a_column_has_the_shape_most_samples_share_or_its_date_type():
    assert column_shape(["Danilo", "Joao Pedro", "Ricardo"]) == "name"
    assert column_shape(["Danilo", "12", "13", "14"]) is None  # mostly numbers: says nothing
    assert column_shape([], ("DATE", "time")) == "date"
    assert column_shape([], ("TEXT", "string")) is None


def test_without_samples_a_text_column_named_for_names_holds_names():
    assert column_shape([], ("text", "string"), "Customer Name") == "name"
    assert column_shape([], ("varchar",), "film_title") == "name"
    assert column_shape([], ("varchar",), "nameSuffix") is None  # the last word decides
    assert column_shape([], ("integer", "number"), "name") is None  # a number is no name
    assert column_shape(["12", "13", "14"], ("text",), "name") is None  # samples, when there are any, decide


def test_closed_values_only_when_the_samples_are_every_value():
    assert closed_values(["Normal", "Risky", "Safe"], 3) == {"normal", "risky", "safe"}
    assert closed_values(["Danilo", "Ricardo"], 10848) is None
    assert closed_values(["a"], None) is None


def test_question_values_skip_sentence_starts_and_filler_and_keep_the_word_before():
    assert question_values("Find the average number of long-shot done by Ahmed Samir Farag.") == [
        Value("name", "ahmed samir farag", "shot")
    ]
    assert question_values("What kind of currency did the customer pay at 16:25:00 in 2012/8/24?") == [
        Value("time", "16:25:00", "pay"), Value("date", "2012/8/24", "pay"),
    ]  # fmt: skip
    assert question_values("Which bonds are in molecule TR004? List them.") == [Value("code", "tr004", "molecul")]
    assert question_values("What is 'SLE' and how many members pay dues") == [Value("code", "sle", None)]
    assert question_values("How many members pay dues? Please list them.") == []
    # an apostrophe inside a word is no quote; a quoted name keeps its apostrophe
    assert question_values("What's the set of the card \"Ancestor's Chosen\"?") == [
        Value("name", "ancestor's chosen", "card")
    ]


def test_a_column_named_for_the_cue_or_the_shape_fits_better():
    coldsnap = Value("name", "coldsnap", "set")
    plain = fit(coldsnap, frozenset({"mcm", "id"}), frozenset({"card"}))
    assert plain == 1.0
    assert fit(coldsnap, frozenset({"name"}), frozenset({"card"})) > plain
    assert fit(coldsnap, frozenset({"mcm", "id"}), frozenset({"set"})) > plain


PLAYERS = [
    {
        "catalog": None, "db": "main", "name": "player_attributes", "kind": "table",
        "columns": [column("player_ref", "integer", "number"), column("long_shots", "integer", "number", "long shots")],
        "foreignKeys": [
            {"fromColumn": "player_ref", "toCatalog": None, "toDb": "main", "toTable": "player", "toColumn": "id"}
        ],
    },
    {
        "catalog": None, "db": "main", "name": "player", "kind": "table",
        "columns": [column("id", "integer", "number"), column("player_name"), column("preferred_foot")],
        "foreignKeys": [],
    },
    {"catalog": None, "db": "main", "name": "country", "kind": "table", "columns": [column("title")], "foreignKeys": []},
]  # fmt: skip
PROFILE = {
    "columns": {
        "player.player_name": profile_entry("main", "player", "player_name", ["Danilo", "Joao Pedro"], 10848),
        "player.preferred_foot": profile_entry("main", "player", "preferred_foot", ["Left", "Right"], 2),
        "country.title": profile_entry("main", "country", "title", ["Belgium", "Spain"], 11),
    }
}


def test_a_named_value_lifts_the_name_column_of_a_joined_table(make_project):
    root = make_project(
        scan_files("fb", "2026-01-01-000000-local-a", PLAYERS, PROFILE), config="connections:\n  fb:\n    driver: x\n"
    )
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    question = "average long shots of Ahmed Samir Farag"
    refs = service.discover_data(question, limit=10, explain=True).refs
    shaped = {r.id for r in refs if r.lanes is not None and r.lanes.steps.get("shaped")}
    # player_name could hold the name; preferred_foot's every value is known and other; country is not joined
    assert "main.player.player_name" in shaped and "main.player" in [r.id for r in refs]
    assert "main.player.preferred_foot" not in shaped and "main.country.title" not in shaped
    off = KtxIndex(root, embedder=HashEmbedder(), params=dataclasses.replace(PARAMS, shape_share=0.0))
    refs = off.discover_data(question, limit=10, explain=True).refs
    assert not [r.id for r in refs if r.lanes is not None and r.lanes.steps.get("shaped")]
    off.close()


def test_a_month_or_weekday_is_no_name():
    assert question_values("Which technicians were hired in June 2016?") == []
    assert [v.text for v in question_values("players from Lyon on Monday")] == ["lyon"]
